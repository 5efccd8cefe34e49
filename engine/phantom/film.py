"""From a drawn knee to a film: placement on the film, exposure and the film's artefacts.

The canvas is mirrored for left knees and placed on a larger film at a random position, scale
and slight rotation; the film shows ``1 - exp(-k * attenuation)`` through a random exposure
window, with blur, noise and the odd side marker or collimation edge on top.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import cv2
import numpy as np

from engine.phantom.canvas import BOX_SIDE, CX, CY
from engine.phantom.spec import PhantomSpec
from engine.phantom.texture import film_noise
from engine.vocab import Box


def place_and_expose(
    spec: PhantomSpec,
    row: Mapping[str, Any],
    att: np.ndarray,
    canvas_mask: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, Box]:
    """Place a drawn knee on the film, expose it and add the film's artefacts.

    Args:
        spec: the phantom (film size, difficulty).
        row: the film's label row (its ``side``).
        att: (Hc, Wc) canvas attenuation of the knee.
        canvas_mask: (Hc, Wc) canvas lesion mask.
        rng: the film's random stream, after the drawing's draws.

    Returns:
        ``film`` (H, W) uint8, ``mask`` (H, W) uint8 and the knee box (x0, y0, x1, y1).
    """
    diff = spec.effective_difficulty
    m = _placement(spec.film_size, str(row["side"]), diff, rng)
    film_att, mask = warp_to_film(att, canvas_mask, m, spec.film_size)
    box = knee_box(m, spec.film_size)
    img = expose(film_att, diff, rng)
    if rng.random() < 0.25:
        collimate(img, box, rng)
    if rng.random() < 0.5:
        side_marker(img, box, str(row["side"]), rng)
    return finish(img, diff, rng), mask, box


def _placement(
    film_size: tuple[int, int], side: str, diff: float, rng: np.random.Generator
) -> np.ndarray:
    """(2, 3) affine map canvas -> film: scale so the knee box covers ~40-62 % of the film's
    shorter side, a slight rotation, a random position with the box inside the film, and a
    mirror for left knees."""
    film_h, film_w = film_size
    short = min(film_h, film_w)
    scale = float(rng.uniform(0.40, 0.62)) * short / BOX_SIDE
    theta = tilt(diff, rng)
    half_ext = box_half_extent(scale, theta)
    pad = 3.0
    cxf = float(rng.uniform(half_ext + pad, film_w - half_ext - pad))
    cyf = float(rng.uniform(half_ext + pad, film_h - half_ext - pad))
    return canvas_to_film(scale, theta, (cxf, cyf), side)


def tilt(diff: float, rng: np.random.Generator) -> float:
    """A slight random rotation of the knee on the film, in radians (at most 8 degrees)."""
    return float(np.clip(rng.normal(0.0, 2.5 * diff), -8.0, 8.0)) * np.pi / 180.0


def box_half_extent(scale: float, theta: float) -> float:
    """Half the side of the axis-aligned square around the knee box once scaled and turned."""
    return 0.5 * BOX_SIDE * scale * (abs(np.cos(theta)) + abs(np.sin(theta)))


def canvas_to_film(
    scale: float, theta: float, centre: tuple[float, float], side: str
) -> np.ndarray:
    """(2, 3) affine map from the canvas to the film: the canvas centre goes to ``centre``
    (film x, y), scaled, turned by ``theta`` and mirrored for a left knee (``side`` 'L')."""
    cos_s, sin_s = scale * np.cos(theta), scale * np.sin(theta)
    flip = -1.0 if side == "L" else 1.0  # left knees are mirror images
    # film = R * S * F * (canvas - centre) + film centre
    m = np.array(
        [
            [cos_s * flip, -sin_s, 0.0],
            [sin_s * flip, cos_s, 0.0],
        ]
    )
    m[:, 2] = [centre[0], centre[1]] - m[:, :2] @ np.array([CX, CY])
    return m


def warp_to_film(
    att: np.ndarray, canvas_mask: np.ndarray, m: np.ndarray, film_size: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """The canvas attenuation and mask mapped onto the film by ``m``.

    Attenuation beyond the canvas repeats its edge (the shafts run on, the sides are air);
    the mask is empty there.
    """
    film_h, film_w = film_size
    film_att = cv2.warpAffine(
        att, m, (film_w, film_h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
    )
    mask = cv2.warpAffine(
        canvas_mask, m, (film_w, film_h), flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_CONSTANT
    )
    return film_att, mask


def knee_box(m: np.ndarray, film_size: tuple[int, int]) -> Box:
    """The canvas knee box mapped by ``m``: the film-pixel box (x1, y1 exclusive) around its
    four corners, clipped to the film."""
    film_h, film_w = film_size
    half = BOX_SIDE / 2.0
    corners = np.array(
        [
            [CX - half, CY - half],
            [CX + half, CY - half],
            [CX - half, CY + half],
            [CX + half, CY + half],
        ]
    )
    fc = corners @ m[:, :2].T + m[:, 2]
    return (
        int(max(0, np.floor(fc[:, 0].min()))),
        int(max(0, np.floor(fc[:, 1].min()))),
        int(min(film_w, np.ceil(fc[:, 0].max()))),
        int(min(film_h, np.ceil(fc[:, 1].max()))),
    )


def expose(film_att: np.ndarray, diff: float, rng: np.random.Generator) -> np.ndarray:
    """Film brightness in [0, 1]: a heel-effect gradient, blur, then a saturating film
    response through a random window and gamma."""
    film_h = film_att.shape[0]
    ramp = np.linspace(-1.0, 1.0, film_h, dtype=np.float32)[:, None]
    film_att *= 1.0 + float(rng.uniform(-0.08, 0.08)) * diff * ramp
    blur = float(rng.uniform(0.4, 0.6 + 0.5 * diff))
    film_att = cv2.GaussianBlur(film_att, (0, 0), blur)
    k = float(rng.uniform(1.1, 1.5))
    img = 1.0 - np.exp(-k * film_att)
    lo = float(rng.uniform(-0.06, 0.08))
    hi = float(rng.uniform(0.9, 1.02))
    img = (img - lo) / (hi - lo)
    gamma = float(np.exp(rng.normal(0.0, 0.12 * diff)))
    return np.power(np.clip(img, 0.0, 1.0), gamma)


def finish(img: np.ndarray, diff: float, rng: np.random.Generator) -> np.ndarray:
    """Add film noise and quantise to uint8."""
    sigma_n = float(rng.uniform(0.008, 0.02)) * diff
    img += sigma_n * film_noise(img.shape, rng)
    return np.clip(img * 255.0 + 0.5, 0, 255).astype(np.uint8)


def collimate(img: np.ndarray, box: Box, rng: np.random.Generator) -> None:
    """Blank a band beyond a straight edge on one side of the film (unexposed area)."""
    h, w = img.shape
    x0, y0, x1, y1 = box
    side = int(rng.integers(4))
    room = [x0, y0, w - x1, h - y1][side]
    if room < 24:
        return
    # Real collimation leaves a band, not a sliver; it stops short of the knee.
    depth = float(rng.uniform(16, room - 6))
    slope = float(rng.uniform(-0.03, 0.03))
    value = float(rng.uniform(0.75, 0.95))
    if side in (0, 2):  # left / right, edge is a near-vertical line
        rows = np.arange(h, dtype=np.float32)[:, None]
        cols = np.arange(w, dtype=np.float32)[None, :]
        edge = depth + slope * (rows - h / 2)
        region = cols < edge if side == 0 else cols > (w - 1 - edge)
    else:
        rows = np.arange(h, dtype=np.float32)[:, None]
        cols = np.arange(w, dtype=np.float32)[None, :]
        edge = depth + slope * (cols - w / 2)
        region = rows < edge if side == 1 else rows > (h - 1 - edge)
    img[region] = value


def side_marker(img: np.ndarray, box: Box, side: str, rng: np.random.Generator) -> None:
    """Burn a small side marker ('L'/'R' on a bright tag) into a corner clear of the knee."""
    h, w = img.shape
    size = max(10, int(rng.uniform(0.045, 0.07) * min(h, w)))
    x0, y0, x1, y1 = box
    corners = [(2, 2), (w - size - 2, 2), (2, h - size - 2), (w - size - 2, h - size - 2)]
    for i in rng.permutation(4):
        mx, my = corners[i]
        if mx + size <= x0 or mx >= x1 or my + size <= y0 or my >= y1:
            tag = np.full((size, size), 247, np.uint8)
            cv2.putText(
                tag, side, (3, size - 4), cv2.FONT_HERSHEY_SIMPLEX, size / 30.0, 40, 2, cv2.LINE_AA
            )
            img[my : my + size, mx : mx + size] = tag / np.float32(255.0)
            return
