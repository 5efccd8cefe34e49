"""Knee localisation on a whole film, and cropping to the knee.

:func:`find_knees` is the one entry point: it returns up to two :class:`KneeDetection` per
film (box, confidence, patient's side), from a trained YOLO detector
(:class:`engine.detect.yolo.KneeDetector`) when one is given, otherwise from the classical detector
below.

Sides follow the radiographic display convention of AP and PA films: the patient's right
knee is on the viewer's left. When two knees are found, the one on the viewer's left is
``"R"``; a film tagged with one side (DICOM ImageLaterality/Laterality ``R`` or ``L``) is a
single-knee film of that side; one knee on an untagged film has no side (``None``).

:func:`detect_knee_box` is the classical detector. It relies only on what every AP knee
film has: bone is the brightest large structure, and the knee is where the bones are widest
(condyles above the joint line, the tibial plateau below it), with the dark joint-space gap
between them. Steps, on the film resized to 160 px on its shorter side:

1. Two Otsu thresholds split air | soft tissue | bone.
2. Bright blobs that are near-perfect rectangles touching the film border (collimation
   bands, side markers) are dropped; so are specks.
3. Per row, the horizontal extent of the remaining bone. The knee's rows are the widest;
   the box side is that width times a constant, the horizontal centre is the middle of
   those rows, and the joint line is the row inside that band where the least bone crosses
   the central columns (the gap), falling back to the band's middle when the gap is closed.

Constants were calibrated on the phantom's true boxes (``bench/phantom_bench.py`` reports
the IoU it reaches). Its confidence (:func:`classical_knee`) is a plausibility score, not a
calibrated probability: 1 when every shape measurement of what it found lies in the range
knees span (a bone band 25-85 % of the film wide, narrower shafts above and below it,
solid bone, a few large pieces), falling to 0 as any measurement leaves that range. Noise,
blank films, text and photographs score near 0.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import cv2
import numpy as np

from engine.vocab import Box

logger = logging.getLogger(__name__)

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
    weak: np.ndarray = (small > t_low).astype(np.uint8)
    weak = cv2.morphologyEx(weak, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    n, labels, stats, _ = cv2.connectedComponentsWithStats(weak, connectivity=8)
    seeded = np.zeros(n, bool)
    seeded[np.unique(labels[small > t_bone])] = True
    h, w = small.shape
    keep = np.zeros(n, bool)
    for i in range(1, n):
        x, y, bw, bh, area = stats[i]
        e = _FRAME + 1  # the frame is blanked, so "at the border" means next to it
        touches = x <= e or y <= e or x + bw >= w - e or y + bh >= h - e
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
    inner = seg[1:-1]  # the ends are half-empty windows
    # A gap has bone on both sides: a row where the crossing only falls towards the end of
    # the search (the metaphysis narrowing below a plateau cut by the film's edge) is no gap.
    walls = np.minimum(np.maximum.accumulate(inner), np.maximum.accumulate(inner[::-1])[::-1])
    valley = np.where(walls > 0, inner / np.maximum(walls, 1e-6), 1.0)
    best = int(np.argmin(np.where(valley < 1.0, inner, np.inf))) + 1
    if not np.isfinite(np.where(valley < 1.0, inner, np.inf)).any():
        best = int(np.argmin(inner)) + 1
    med = float(np.median(seg))
    return lo + best, (float(seg[best]) / med if med > 0 else 1.0)


def detect_knee_box(film: np.ndarray) -> Box:
    """Find the knee on an AP film (the classical detector's box, see the module docstring).

    Args:
        film: (H, W) uint8 radiograph.

    Returns:
        ``(x0, y0, x1, y1)`` in film pixels (exclusive ends), a square clipped to the film.
        When no bone is found, the central square of the film.
    """
    return _analyse(film).box


@dataclass(frozen=True)
class _Analysis:
    """What the classical detector saw on one film.

    Attributes:
        box: its knee box in film pixels (the central square when no bone was found).
        confidence: plausibility that the box holds a knee, 0..1 (0 when no bone).
        bone_columns: (w,) bone pixels per column of the working film (for splitting a
            bilateral film), empty when no bone was found.
        down: film pixels per working pixel.
    """

    box: Box
    confidence: float
    bone_columns: np.ndarray
    down: float


def _working_film(film: np.ndarray) -> tuple[np.ndarray, float]:
    """The film at the working scale with collimation and a thin frame blanked.

    Returns:
        (small, down): the (h, w) uint8 working film and film pixels per working pixel.
    """
    _check_film(film)
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
    return small, down


def _check_film(film: np.ndarray) -> None:
    if not isinstance(film, np.ndarray) or film.ndim != 2:
        shape = getattr(film, "shape", type(film).__name__)
        raise ValueError(f"film must be a 2-D (H, W) grey array, got shape {shape}")


def _analyse(film: np.ndarray) -> _Analysis:
    """Run the classical detector on a whole film (steps in the module docstring)."""
    small, down = _working_film(film)
    h, w = film.shape
    bone = _bone_mask(small)
    has_bone = bone.any(axis=1)
    if has_bone.sum() < 4:
        logger.debug("no bone found; returning the central square")
        centre = _square((w / 2, h / 2), min(h, w) / 2, (h, w))
        return _Analysis(centre, 0.0, np.zeros(0, np.int64), down)

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
    box = _square(((x_mid + 0.5) * down, (y_joint + 0.5) * down), side, (h, w))
    work_side = _SIDE_PER_WIDTH * widest
    work_box = _square((x_mid + 0.5, y_joint + 0.5), work_side, bone.shape)
    # A knee placed low (or high) on the film has its box cut by the film's edge: the shaft
    # beyond that edge cannot be seen, so it is not measured (the other shape measurements
    # still keep noise out).
    cut = (
        y_joint + 0.5 - work_side / 2 < _FRAME + 1,
        y_joint + 0.5 + work_side / 2 > bone.shape[0] - _FRAME - 1,
    )
    confidence = _knee_plausibility(bone, ext_s, work_box, widest, cut=cut)
    return _Analysis(box, confidence, bone.sum(axis=0), down)


def _border_level(film: np.ndarray) -> float:
    """Median grey of the film's outer twentieth on all four sides (air, on most films)."""
    h, w = film.shape
    b = max(2, min(h, w) // 20)
    ring = (film[:, :b], film[:, -b:], film[:b], film[-b:])
    return float(np.median(np.concatenate([part.ravel() for part in ring])))


#: A frame line's grey may differ from the edge's by this much, and vary along it by this much.
_FRAME_LEVEL_TOLERANCE = 12.0
_FRAME_MAX_STD = 12.0


def _unframed(film: np.ndarray) -> np.ndarray:
    """The film inside a uniform frame along its edges (a collimated border: every line of it
    about the edge's grey, with little variation along it), up to a quarter of each side;
    the film itself when no side has such a frame."""
    h, w = film.shape
    values = film.astype(np.float32)

    def depth(lines: np.ndarray, most: int) -> int:
        edge = float(lines[0].mean())
        for k in range(most):
            line = lines[k]
            if abs(float(line.mean()) - edge) > _FRAME_LEVEL_TOLERANCE:
                return k
            if float(line.std()) > _FRAME_MAX_STD:
                return k
        return most

    top, bottom = depth(values, h // 4), depth(values[::-1], h // 4)
    left, right = depth(values.T, w // 4), depth(values.T[::-1], w // 4)
    if max(top, bottom, left, right) < 2:
        return film
    return film[top : h - bottom, left : w - right]


def _box_over_border(film: np.ndarray, analysis: _Analysis) -> float:
    x0, y0, x1, y1 = analysis.box
    inside = film[y0:y1, x0:x1]
    return float(inside.mean()) - _border_level(film) if inside.size else 0.0


def inverted_polarity(film: np.ndarray) -> bool:
    """Whether a film shows bone dark on a bright background (saved inverted).

    Only a film whose border is bright (air is dark on a film the right way round; a
    collimated border is bright too) is looked at further: the classical detector runs on
    it and on its negative, and the negative is the film the right way round when it holds
    a knee and either that knee is far more plausible, or its box is brighter than the
    border while the film's own box is not (bone is brighter than air). On phantom films:
    none of 200 the right way round is called inverted, 194 of 200 inverted ones are. A film
    whose edge is dark is looked at inside its frame (`_unframed`): an inverted film keeps its
    collimated frame dark.
    """
    _check_film(film)
    # A collimated edge is a uniform frame whose grey says nothing of the polarity: bright on
    # a film the right way round, dark on a MONOCHROME1 film exported as is (unexposed: the
    # lowest value as stored), around bright air (issue 39). Look inside such a frame.
    inner = _unframed(film)
    if inner is not film and min(inner.shape) >= 32:
        film = inner
    if _border_level(film) <= 128:
        return False
    negative = 255 - film
    given, flipped = _analyse(film), _analyse(negative)
    if flipped.confidence < 0.25:
        return False
    much_likelier = flipped.confidence > given.confidence + 0.25
    brighter = _box_over_border(negative, flipped) > 0 >= _box_over_border(film, given)
    return much_likelier or brighter


# Ranges a knee's shape measurements span (lo, hi, soft): inside, a measurement scores 1;
# outside it falls linearly to 0 over ``soft``. Set from 180 phantom knees at three film
# sizes and two difficulties (all inside, bar the few whose box was wrong) against noise,
# blurred noise, blank films, text and photographs (near all outside); widened on the side
# real films may go (close-up films whose knee fills the width).
_PLAUSIBLE: dict[str, tuple[float, float, float]] = {
    "width": (0.25, 0.85, 0.10),  # widest bone extent / working film width
    "shaft_top": (0.35, 0.90, 0.10),  # bone extent in the box's top eighth / widest
    "shaft_bottom": (0.35, 0.90, 0.10),  # the same in its bottom eighth (tibial shaft)
    "box_bone": (0.45, 0.82, 0.15),  # share of the box that is bone
    "solid": (0.85, 1.00, 0.20),  # median share of bone between a row's outer edges
    "pieces": (0.0, 3.0, 4.0),  # bone components that reach into the box
}


def _in_range(value: float, lo: float, hi: float, soft: float) -> float:
    """1 inside [lo, hi], falling linearly to 0 at ``soft`` outside it."""
    outside = max(lo - value, value - hi, 0.0)
    return float(np.clip(1.0 - outside / soft, 0.0, 1.0))


def _knee_plausibility(
    bone: np.ndarray,
    ext_s: np.ndarray,
    box: Box,
    widest: float,
    *,
    cut: tuple[bool, bool] = (False, False),
) -> float:
    """Confidence (0..1) that a classical box holds a knee, from the bone mask's shape.

    A knee is a bone band of moderate width with narrower shafts above and below it (femur,
    tibia), solid between its outer edges, made of a few large pieces. Noise and text give
    a film-wide band, ragged or hollow bone, or many pieces.

    Args:
        bone: (h, w) bool bone mask of the working film.
        ext_s: (h,) smoothed horizontal bone extent per row.
        box: the knee box in working pixels.
        widest: the largest value of ``ext_s``.
        cut: whether the box's (top, bottom) runs past the film's blanked frame: that
            side's shaft is off the film and is not measured.
    """
    x0, y0, x1, y1 = box
    if x1 <= x0 or y1 <= y0:
        return 0.0
    # All of a row's bone lies between its outer edges, so bone count / span is its fill.
    has = bone.any(axis=1)
    first = np.argmax(bone, axis=1)
    last = bone.shape[1] - 1 - np.argmax(bone[:, ::-1], axis=1)
    solid = bone.sum(axis=1)[has] / (last - first + 1)[has]
    eighth = max(1, (y1 - y0) // 8)
    _, labels = cv2.connectedComponents(bone.astype(np.uint8), connectivity=8)
    in_box = labels[y0:y1, x0:x1]
    measured = {
        "width": widest / bone.shape[1],
        "shaft_top": float(np.median(ext_s[y0 : y0 + eighth])) / widest,
        "shaft_bottom": float(np.median(ext_s[y1 - eighth : y1])) / widest,
        "box_bone": float(bone[y0:y1, x0:x1].mean()) if in_box.size else 0.0,
        "solid": float(np.median(solid)),
        "pieces": float(len(np.unique(in_box[in_box > 0]))),
    }
    logger.debug("knee measurements %s", measured)
    unseen = {name for name, off in zip(("shaft_top", "shaft_bottom"), cut, strict=True) if off}
    scores = [
        _in_range(measured[name], *_PLAUSIBLE[name]) for name in _PLAUSIBLE if name not in unseen
    ]
    return float(np.prod(scores))


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


# --------------------------------------------------------------------------------------
# One API for every caller: find_knees
# --------------------------------------------------------------------------------------

#: Below this confidence a knee counts as "found with low confidence" (worth a look).
LOW_CONFIDENCE = 0.5
#: A second knee on a film is kept only at this confidence or more (a bilateral film's
#: other knee scores as high as the first; a stray second box on a single-knee film does not).
SECOND_KNEE_CONFIDENCE = 0.25
#: Two knees never overlap: a second box sharing more than this share of the smaller box
#: with the first is the same knee found twice.
_MAX_KNEE_OVERLAP = 0.2
#: DICOM laterality values (ImageLaterality 0020,0062 / Laterality 0020,0060) and what they
#: say: one side, both ("B") or nothing useful ("U" unpaired, empty).
LATERALITY_VALUES = ("R", "L", "B", "U", "")


@dataclass(frozen=True)
class KneeDetection:
    """One knee found on a film.

    Attributes:
        box: ``(x0, y0, x1, y1)`` in film pixels (x1, y1 exclusive).
        confidence: 0..1; below :data:`LOW_CONFIDENCE` the box deserves a look.
        side: the patient's side, ``"R"`` or ``"L"``, or None when the film does not say
            (one knee, no laterality tag).
    """

    box: Box
    confidence: float
    side: str | None = None


class KneeDetectorLike(Protocol):
    """What :func:`find_knees` needs of a trained detector
    (:class:`engine.detect.yolo.KneeDetector`)."""

    def detect(self, film: np.ndarray, max_knees: int = 2) -> list[KneeDetection]:
        """Up to ``max_knees`` knees on a (H, W) uint8 film, sides unset."""
        ...


def find_knees(
    film: np.ndarray,
    *,
    detector: KneeDetectorLike | None = None,
    max_knees: int = 2,
    laterality: str | None = None,
) -> list[KneeDetection]:
    """Find up to ``max_knees`` knees on a film, each with its confidence and side.

    Args:
        film: (H, W) uint8 radiograph.
        detector: a trained detector (:func:`engine.detect.load_detector`); None uses the
            classical detector.
        max_knees: most knees to return (1 or 2 for knee films).
        laterality: the film's DICOM laterality tag if it has one: ``"R"`` or ``"L"`` (a
            single-knee film of that side: at most one knee, given that side), ``"B"``
            (both knees: sides from position), ``"U"``, ``""`` or None (no tag).

    Returns:
        Detections ordered from the viewer's left to right, sides set as the module
        docstring says. Empty when no knee is found (the classical detector found no bone,
        or a trained detector found nothing).
    """
    _check_film(film)
    if not isinstance(max_knees, int) or isinstance(max_knees, bool) or max_knees < 1:
        raise ValueError(f"{max_knees=} must be a positive int")
    tag = _laterality(laterality)
    if tag in ("R", "L"):
        max_knees = 1
    if detector is None:
        found = classical_knees(film, max_knees=max_knees)
    else:
        found = select_knees(detector.detect(film, max_knees=max_knees), max_knees)
    return assign_sides(found, tag)


def _laterality(value: str | None) -> str:
    """A laterality tag normalised to one of LATERALITY_VALUES ('' for none)."""
    tag = "" if value is None else str(value).strip().upper()
    if tag not in LATERALITY_VALUES:
        raise ValueError(
            f"laterality {value!r} is not a DICOM laterality; allowed: 'R', 'L', 'B', 'U', "
            "'' or None"
        )
    return tag


def assign_sides(
    knees: Sequence[KneeDetection], laterality: str | None = None
) -> list[KneeDetection]:
    """Knees ordered from the viewer's left to right, with the patient's side of each.

    Radiographic convention: two knees on one film are the patient's right (viewer's left)
    and left (viewer's right). One knee takes the film's laterality tag when it is ``"R"``
    or ``"L"`` and has no side otherwise.
    """
    tag = _laterality(laterality)
    ordered = sorted(knees, key=lambda k: (k.box[0] + k.box[2]) / 2.0)
    if len(ordered) == 2:
        sides: list[str | None] = ["R", "L"]
    elif len(ordered) == 1 and tag in ("R", "L"):
        sides = [tag]
    else:
        sides = [None] * len(ordered)
    return [replace(k, side=s) for k, s in zip(ordered, sides, strict=True)]


def select_knees(candidates: Sequence[KneeDetection], max_knees: int) -> list[KneeDetection]:
    """The knees to keep of a detector's candidates (any order).

    The most confident candidate is always kept (however low: a low confidence is reported,
    not hidden). Further ones are kept, up to ``max_knees``, when they reach
    :data:`SECOND_KNEE_CONFIDENCE` and do not overlap a kept knee.
    """
    kept: list[KneeDetection] = []
    for cand in sorted(candidates, key=lambda k: -k.confidence):
        if len(kept) == max_knees:
            break
        if kept and cand.confidence < SECOND_KNEE_CONFIDENCE:
            break
        if all(_overlap_of_smaller(cand.box, k.box) <= _MAX_KNEE_OVERLAP for k in kept):
            kept.append(cand)
    return kept


def _overlap_of_smaller(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection of two boxes as a share of the smaller one's area."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return float(ix * iy / smaller) if smaller > 0 else 0.0


def classical_knee(film: np.ndarray) -> KneeDetection | None:
    """The classical detector's knee on a film with its confidence (None: no bone at all)."""
    found = _analyse(film)
    return KneeDetection(found.box, round(found.confidence, 4)) if found.bone_columns.size else None


def classical_knees(film: np.ndarray, *, max_knees: int = 2) -> list[KneeDetection]:
    """Up to ``max_knees`` knees by the classical detector, sides unset.

    A bilateral film is two bone masses side by side with bone-free columns between them.
    The film is split in the middle of such a gap (the widest few are tried) and each half
    is searched on its own; the best split's two knees are kept when both are plausible
    (confidence at least :data:`LOW_CONFIDENCE`), otherwise the most plausible single knee
    (of the whole film or of either half of the best split).
    """
    whole = _analyse(film)
    if not whole.bone_columns.size:
        return []
    candidates = [KneeDetection(whole.box, round(whole.confidence, 4))]
    pairs = [
        _knees_either_side(film, int(round(c * whole.down)))
        for c in _gap_columns(whole.bone_columns)
    ]
    pairs = [p for p in pairs if p]
    if pairs:
        best = max(pairs, key=lambda p: min(k.confidence for k in p))
        if max_knees >= 2 and min(k.confidence for k in best) >= LOW_CONFIDENCE:
            return best
        candidates += best
    return [max(candidates, key=lambda k: k.confidence)]  # ties keep the whole-film box


def _knees_either_side(film: np.ndarray, cut: int) -> list[KneeDetection]:
    """The classical knee left and right of column ``cut`` (empty unless both have bone)."""
    knees = []
    for x_offset, part in ((0, film[:, :cut]), (cut, film[:, cut:])):
        if min(part.shape) < 16:
            return []
        found = _analyse(part)
        if not found.bone_columns.size:
            return []
        x0, y0, x1, y1 = found.box
        knees.append(
            KneeDetection((x0 + x_offset, y0, x1 + x_offset, y1), round(found.confidence, 4))
        )
    return knees


def _gap_columns(bone_columns: np.ndarray, most: int = 3) -> list[int]:
    """Middles of the widest bone-free column runs with a fifth of the bone on each side.

    Args:
        bone_columns: (w,) bone pixels per working column.
        most: how many runs to return at most (widest first).
    """
    total = float(bone_columns.sum())
    before = np.concatenate([[0], np.cumsum(bone_columns)])
    empty = np.concatenate([[False], bone_columns == 0, [False]]).astype(np.int8)
    starts = np.flatnonzero(np.diff(empty) == 1)
    stops = np.flatnonzero(np.diff(empty) == -1)  # exclusive
    runs = [
        (int(stop - start), int((start + stop) // 2))
        for start, stop in zip(starts, stops, strict=True)
        if min(before[start], total - before[stop]) >= 0.2 * total
    ]
    return [middle for _, middle in sorted(runs, reverse=True)[:most]]
