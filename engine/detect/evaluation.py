"""Scoring a knee detector against the true knee boxes of a set of films."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from engine.detect.classical import KneeDetection, box_iou


@dataclass(frozen=True)
class DetectionMetrics:
    """How well a detector's boxes match the true knee boxes of a set of films.

    Each true knee is matched to at most one detection (the assignment with the highest
    total IoU); an unmatched knee scores IoU 0.

    Attributes:
        n_films: films scored.
        n_knees: true knees on them.
        mean_iou / median_iou / min_iou: IoU of each true knee with its matched detection.
        share_iou_50 / share_iou_75: share of true knees matched at IoU >= 0.5 / >= 0.75.
        misses: true knees with no detection at IoU >= 0.5 (not found or found elsewhere).
        extra: detections matched to no true knee at IoU >= 0.5 (false knees).
        films_all_found: share of films whose every true knee (both, on a bilateral film)
            is matched at IoU >= 0.5.
        mean_confidence: mean confidence of the detections.
    """

    n_films: int
    n_knees: int
    mean_iou: float
    median_iou: float
    min_iou: float
    share_iou_50: float
    share_iou_75: float
    misses: int
    extra: int
    films_all_found: float
    mean_confidence: float

    def to_dict(self) -> dict[str, float | int]:
        """JSON-ready dict of the fields."""
        return asdict(self)


def evaluate_detector(
    detect_fn: Callable[[np.ndarray], Sequence[KneeDetection | Sequence[float]]],
    films: Sequence[np.ndarray],
    true_boxes: Sequence[Sequence[Sequence[float]]],
) -> DetectionMetrics:
    """Score any detector (classical or trained) on films with known knee boxes.

    Args:
        detect_fn: film -> its detections (:class:`KneeDetection` or plain boxes), e.g.
            ``lambda f: find_knees(f, detector=det)``.
        films: (H, W) uint8 films.
        true_boxes: per film, its true knee boxes (one or two) in film pixels.

    Returns:
        The metrics over all films.
    """
    if len(films) != len(true_boxes):
        raise ValueError(f"{len(films)} films but {len(true_boxes)} lists of true boxes")
    if not films:
        raise ValueError("no films to evaluate the detector on")
    ious: list[float] = []
    extra = 0
    all_found = 0
    confidences: list[float] = []
    for film, truths in zip(films, true_boxes, strict=True):
        found = list(detect_fn(film))
        boxes: list[Sequence[float]] = [
            tuple(d.box) if isinstance(d, KneeDetection) else tuple(d) for d in found
        ]
        confidences += [float(d.confidence) for d in found if isinstance(d, KneeDetection)]
        film_ious = _matched_ious(list(truths), boxes)
        ious += film_ious
        hits = sum(v >= 0.5 for v in film_ious)
        extra += len(boxes) - hits
        all_found += hits == len(truths)
    v = np.asarray(ious, dtype=np.float64)
    return DetectionMetrics(
        n_films=len(films),
        n_knees=len(v),
        mean_iou=round(float(v.mean()), 4),
        median_iou=round(float(np.median(v)), 4),
        min_iou=round(float(v.min()), 4),
        share_iou_50=round(float((v >= 0.5).mean()), 4),
        share_iou_75=round(float((v >= 0.75).mean()), 4),
        misses=int((v < 0.5).sum()),
        extra=int(extra),
        films_all_found=round(all_found / len(films), 4),
        mean_confidence=round(float(np.mean(confidences)), 4) if confidences else float("nan"),
    )


def _matched_ious(truths: list[Sequence[float]], found: list[Sequence[float]]) -> list[float]:
    """IoU of each true box with its detection under the best one-to-one matching."""
    if not truths:
        return []
    if not found:
        return [0.0] * len(truths)
    iou = np.array([[box_iou(t, f) for f in found] for t in truths])
    rows, cols = linear_sum_assignment(-iou)
    out = [0.0] * len(truths)
    for r, c in zip(rows, cols, strict=True):
        out[r] = float(iou[r, c])
    return out
