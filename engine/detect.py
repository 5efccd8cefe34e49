"""Knee localisation on a whole film, and cropping to the knee.

:func:`detect_knee_box` is the classical fallback detector used when no trained YOLO model
is available. It relies only on what every AP knee film has: bone is the brightest large
structure, and the knee is where the bones are widest (condyles above the joint line, the
tibial plateau below it), with the dark joint-space gap between them. Steps, on the film
resized to 160 px on its shorter side:

1. Two Otsu thresholds split air | soft tissue | bone.
2. Bright blobs that are near-perfect rectangles touching the film border (collimation
   bands, side markers) are dropped; so are specks.
3. Per row, the horizontal extent of the remaining bone. The knee's rows are the widest;
   the box side is that width times a constant, the horizontal centre is the middle of
   those rows, and the joint line is the row inside that band where the least bone crosses
   the central columns (the gap), falling back to the band's middle when the gap is closed.

Constants were calibrated on the phantom's true boxes (``bench/phantom_bench.py`` reports
the IoU it reaches).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import cv2
import numpy as np

logger = logging.getLogger(__name__)

Box = tuple[int, int, int, int]

_WORK_SIDE = 160  # detection works on the film resized to this shorter side (px)
_SIDE_PER_WIDTH = 1.17  # knee box side / widest bone extent (phantom calibration)
_WIDE_FRACTION = 0.86  # rows at least this wide (relative to the widest) belong to the knee
_GAP_TO_CENTRE = 0.038  # box centre minus the gap row, in widths (the box is centred on
# the plateau, a half joint-space below the middle of the gap)
_BAND_MID_OFFSET = 0.04  # joint line minus the wide band's middle, in widths (fallback)
_FRAME = 3  # border pixels of the downsampled film ignored


def box_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two boxes ``(x0, y0, x1, y1)`` (x1, y1 exclusive)."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return float(inter / union) if union > 0 else 0.0


def _otsu(values: np.ndarray) -> float:
    """Otsu threshold of a 1-D uint8 array (0 when it is empty)."""
    if values.size == 0:
        return 0.0
    t, _ = cv2.threshold(values.reshape(-1, 1), 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    return float(t)


def _flat_bright_run(lines: np.ndarray) -> int:
    """How many leading lines (rows of ``lines``) are uniform and bright (collimated)."""
    med = np.median(lines, axis=1, keepdims=True)
    uniform = (np.abs(lines.astype(np.int16) - med) < 15).mean(axis=1) > 0.9
    flat = uniform & (med[:, 0] > 170)
    return int(np.argmin(flat)) if not flat.all() else len(flat)


def _blank_collimation(small: np.ndarray) -> np.ndarray:
    """Copy of ``small`` with collimated bands along its borders set to 0 (air).

    A collimated (unexposed) band is a run of rows or columns from a film edge that are
    bright and uniform; its edge may be slightly slanted, so a few more lines go too.
    """
    out = small.copy()
    h, w = small.shape
    margin_r = int(np.ceil(0.035 * w)) + 2  # rows a slanted horizontal edge can wander
    margin_c = int(np.ceil(0.035 * h)) + 2
    top = _flat_bright_run(small)
    bottom = _flat_bright_run(small[::-1])
    left = _flat_bright_run(small.T)
    right = _flat_bright_run(small.T[::-1])
    if top:
        out[: top + margin_r] = 0
    if bottom:
        out[h - bottom - margin_r :] = 0
    if left:
        out[:, : left + margin_c] = 0
    if right:
        out[:, w - right - margin_c :] = 0
    return out


def _bone_mask(small: np.ndarray) -> np.ndarray:
    """(h, w) bool bone pixels of a downsampled film, without border rectangles.

    Hysteresis: pixels above the tissue/bone Otsu threshold seed the bone, which then grows
    into connected pixels above a lower threshold, so that dimmer epiphyses (less cortex
    than the shafts) are kept whole while soft tissue stays out.
    """
    t_air = _otsu(small.ravel())
    t_bone = _otsu(small[small > t_air])
    t_low = t_air + 0.7 * (t_bone - t_air)
    weak = (small > t_low).astype(np.uint8)
    weak = cv2.morphologyEx(weak, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    n, labels, stats, _ = cv2.connectedComponentsWithStats(weak, connectivity=8)
    seeded = np.zeros(n, bool)
    seeded[np.unique(labels[small > t_bone])] = True
    h, w = small.shape
    keep = np.zeros(n, bool)
    for i in range(1, n):
        x, y, bw, bh, area = stats[i]
        touches = x <= 1 or y <= 1 or x + bw >= w - 1 or y + bh >= h - 1
        rectangular = area >= 0.85 * bw * bh
        # A side marker is a small compact tag at the border (its letter makes it less
        # than rectangular); a bone reaching the border is long.
        tag = bw * bh < 0.03 * h * w and max(bw, bh) < 0.2 * min(h, w)
        if not seeded[i] or area < 0.004 * h * w or (touches and (rectangular or tag)):
            continue  # specks, collimation bands and side markers
        keep[i] = True
    return keep[labels]


def _gap_row(bone: np.ndarray, cols: np.ndarray, lo: int, hi: int) -> tuple[int, float]:
    """Row in [lo, hi) where the least bone crosses ``cols``, and how deep that dip is.

    Returns:
        (row, depth) with depth = dip / median crossing (small means a clear gap).
    """
    crossing = bone[lo:hi][:, cols].sum(axis=1).astype(np.float32)
    if crossing.size < 3:
        return lo, 1.0
    seg = np.convolve(crossing, np.ones(3, np.float32) / 3.0, mode="same")
    best = int(np.argmin(seg[1:-1])) + 1  # the ends are half-empty windows
    med = float(np.median(seg))
    return lo + best, (float(seg[best]) / med if med > 0 else 1.0)


def detect_knee_box(film: np.ndarray) -> Box:
    """Find the knee on an AP film.

    Args:
        film: (H, W) uint8 radiograph.

    Returns:
        ``(x0, y0, x1, y1)`` in film pixels (exclusive ends), a square clipped to the film.
        When no bone is found, the central square of the film.
    """
    if film.ndim != 2:
        raise ValueError(f"film must be 2-D (H, W), got shape {film.shape}")
    h, w = film.shape
    # A fixed working scale: the knee spans a similar share of any film, so every
    # threshold below (in working pixels) holds whatever the film's resolution.
    down = min(h, w) / _WORK_SIDE
    work_w, work_h = max(1, int(round(w / down))), max(1, int(round(h / down)))
    interp = cv2.INTER_AREA if down > 1 else cv2.INTER_LINEAR
    small = cv2.resize(film, (work_w, work_h), interpolation=interp)
    small = _blank_collimation(cv2.GaussianBlur(small, (0, 0), 1.0))
    # A thin frame goes too: slivers of collimation and markers live there, and the knee
    # itself never needs it.
    f = _FRAME
    small[:f], small[-f:], small[:, :f], small[:, -f:] = 0, 0, 0, 0
    bone = _bone_mask(small)
    has_bone = bone.any(axis=1)
    if has_bone.sum() < 4:
        logger.debug("no bone found; returning the central square")
        return _square((w / 2, h / 2), min(h, w) / 2, (h, w))

    cols = np.arange(bone.shape[1])
    left = np.where(has_bone, np.argmax(bone, axis=1), 0)
    right = np.where(has_bone, bone.shape[1] - 1 - np.argmax(bone[:, ::-1], axis=1), 0)
    extent = (right - left + 1) * has_bone
    # A running median ignores one-row spikes (a fibula tip, an osteophyte).
    ext_s = _running_median(extent, 5)
    widest = float(ext_s.max())
    band = np.flatnonzero(ext_s >= _WIDE_FRACTION * widest)
    r0, r1 = int(band.min()), int(band.max())
    x_mid = float(np.median((left[band] + right[band]) / 2.0))

    # The joint line: the row near the band crossed by the least bone in one compartment
    # (the gap between condyle and plateau). Narrowing often closes one compartment, so
    # both are tried and the clearer gap wins; spines sit in the notch, so the centre is
    # skipped. Without a clear gap, fall back on the band's calibrated middle.
    half = 0.5 * widest
    off = np.abs(cols - x_mid)
    side_cols = (off > 0.2 * half) & (off < 0.8 * half)
    # A gap has bone above and below it, so the search stays inside the bone rows.
    bone_rows = np.flatnonzero(has_bone)
    lo = max(int(bone_rows[0]) + 3, r0 - int(0.2 * widest))
    hi = min(int(bone_rows[-1]) - 2, r1 + int(0.2 * widest) + 1)
    gaps = [
        _gap_row(bone, side_cols & (cols < x_mid), lo, hi),
        _gap_row(bone, side_cols & (cols > x_mid), lo, hi),
    ]
    row, depth = min(gaps, key=lambda g: g[1])
    if depth < 0.5:
        y_joint = row + _GAP_TO_CENTRE * widest
    else:
        y_joint = 0.5 * (r0 + r1) + _BAND_MID_OFFSET * widest

    side = _SIDE_PER_WIDTH * widest * down
    return _square(((x_mid + 0.5) * down, (y_joint + 0.5) * down), side, (h, w))


def _running_median(v: np.ndarray, k: int) -> np.ndarray:
    """Running median of a 1-D array with window ``k`` (odd), edges padded by replication."""
    pad = k // 2
    p = np.pad(v.astype(np.float32), pad, mode="edge")
    windows = np.lib.stride_tricks.sliding_window_view(p, k)
    return np.median(windows, axis=1)


def _square(centre: tuple[float, float], side: float, shape: tuple[int, int]) -> Box:
    """Square box of ``side`` around ``centre`` (x, y), clipped to an (H, W) film."""
    h, w = shape
    cx, cy = centre
    half = side / 2.0
    return (
        int(max(0, round(cx - half))),
        int(max(0, round(cy - half))),
        int(min(w, round(cx + half))),
        int(min(h, round(cy + half))),
    )


def crop_and_resize(
    film: np.ndarray,
    box: Sequence[float],
    size: int,
    *,
    margin: float = 0.1,
    nearest: bool = False,
) -> np.ndarray:
    """Crop a square around a box (plus a margin) and resize it to ``size`` x ``size``.

    The square is centred on the box, its side is the box's longer side times
    ``1 + 2 * margin``; parts outside the film are filled with 0 (air, or "no mask").

    Args:
        film: (H, W) uint8 image or mask, or an (H, W, C) colour image.
        box: ``(x0, y0, x1, y1)`` in film pixels.
        size: output side in pixels.
        margin: extra border on each side, as a fraction of the box side.
        nearest: nearest-neighbour resampling (for bit-flag masks, whose values must not
            be interpolated); otherwise area averaging when shrinking and linear
            interpolation when enlarging.

    Returns:
        (size, size) (or (size, size, C)) array of ``film``'s dtype.
    """
    if size < 1:
        raise ValueError(f"{size=} must be >= 1")
    if margin < 0:
        raise ValueError(f"{margin=} must be >= 0")
    x0, y0, x1, y1 = (float(v) for v in box)
    side = max(x1 - x0, y1 - y0, 1.0) * (1.0 + 2.0 * margin)
    cx, cy = (x0 + x1) / 2.0, (y0 + y1) / 2.0
    n = max(1, int(round(side)))
    ix0 = int(round(cx - n / 2.0))
    iy0 = int(round(cy - n / 2.0))
    h, w = film.shape[:2]
    # Pad only as far as the crop leaves the film.
    pl, pt = max(0, -ix0), max(0, -iy0)
    pr, pb = max(0, ix0 + n - w), max(0, iy0 + n - h)
    src = film
    if pl or pt or pr or pb:
        src = cv2.copyMakeBorder(film, pt, pb, pl, pr, cv2.BORDER_CONSTANT, value=0)
    crop = src[iy0 + pt : iy0 + pt + n, ix0 + pl : ix0 + pl + n]
    if nearest:
        interp = cv2.INTER_NEAREST
    elif n > size:
        interp = cv2.INTER_AREA
    else:
        interp = cv2.INTER_LINEAR
    return cv2.resize(crop, (size, size), interpolation=interp)


__all__ = ["Box", "box_iou", "crop_and_resize", "detect_knee_box"]
