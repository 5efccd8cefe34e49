"""Exact agreement: the share of films graded exactly right, a confusion-count metric."""

from __future__ import annotations

import numpy as np

from engine.analysis.metric_base import FROM_CONFUSION, HIGHER, Metric

NAME = "exact"


def exact_agreement(cm: np.ndarray) -> np.ndarray:
    """``(R,)`` trace over total of ``(R, J, J)`` counts; ``nan`` for an empty run."""
    total = cm.sum(axis=(1, 2))
    hits = np.trace(cm, axis1=1, axis2=2)
    out = np.full(total.shape, np.nan)
    np.divide(hits, total, out=out, where=total > 0)
    return out


METRIC = Metric(
    NAME,
    "Exact",
    HIGHER,
    (0.0, 1.0),
    FROM_CONFUSION,
    exact_agreement,
    "Exact agreement: the share of films given exactly their recorded grade.",
)


def ORACLE(y_true: np.ndarray, probs: np.ndarray) -> float:  # noqa: N802 (the test reads it)
    """One film at a time: the share whose most likely grade is the recorded one."""
    return float(np.mean([int(np.argmax(p)) == int(y) for y, p in zip(y_true, probs, strict=True)]))
