"""Ordinal classification metrics, vectorised over many runs at once.

The six metrics of the paper ("Evaluation metrics", eqs. 7-14): QWK, MAE, AMAE, MMAE,
MS (minimum sensitivity) and BA (balanced accuracy). Every one of them is a function of the
confusion matrix, so the core works on a stack of confusion matrices ``(R, J, J)``: a page
that scores ~2,000 runs (1.5 M prediction rows) builds all matrices with one
``np.bincount`` and derives all metrics with a handful of array reductions, instead of
calling a per-run Python function 2,000 times.

Conventions (shown in the UI next to the numbers):

* Grades are ``0 .. J-1`` and the ordinal distance between grades ``i`` and ``j`` is always
  ``|i - j|``, whatever labels happen to occur in a run.
* A class absent from the test set (its true row of the confusion matrix is all zero) is
  dropped from the per-class metrics AMAE, MMAE, MS and BA: they average, maximise or
  minimise over the classes that are present. This is dlordinal's convention
  (``dlordinal.metrics.amae`` removes all-zero rows of the confusion matrix) and sklearn's
  for ``balanced_accuracy_score``.
* Differences from dlordinal, both only when a class is absent from the test set:
  dlordinal builds ``sklearn.metrics.confusion_matrix`` on the union of labels seen in
  ``y_true`` and ``y_pred``, so when a grade is absent from *both*, its row and column
  vanish and the grades above it move one step closer (e.g. with grade 2 missing, an error
  3 -> 1 counts as 1 instead of 2). We keep the true grade distances. And
  ``dlordinal.metrics.minimum_sensitivity`` uses ``recall_score(average=None)``, which
  scores a grade that is predicted but never true as sensitivity 0; we drop it, as for the
  other per-class metrics.
* QWK is undefined when the expected weighted disagreement is zero, which happens only
  when every true and every predicted label is one and the same grade (or the run is
  empty). It is then ``nan``, as ``sklearn.metrics.cohen_kappa_score`` returns by default,
  so an undefined kappa is never mistaken for chance agreement (0).
* A run with no predictions gets ``nan`` for every metric.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

METRICS: tuple[str, ...] = ("qwk", "mae", "amae", "mmae", "ms", "ba")
LOWER_IS_BETTER: frozenset[str] = frozenset({"mae", "amae", "mmae"})
METRIC_LABELS: dict[str, str] = {
    "qwk": "QWK",
    "mae": "MAE",
    "amae": "AMAE",
    "mmae": "MMAE",
    "ms": "MS",
    "ba": "BA",
}


def confusion_matrices(
    run_index: np.ndarray,
    y_true: np.ndarray,
    y_pred: np.ndarray,
    n_runs: int,
    n_classes: int,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Count one confusion matrix per run from flat prediction rows.

    Args:
        run_index: ``(N,)`` integer run position in ``0 .. n_runs-1`` of each row.
        y_true: ``(N,)`` true grades in ``0 .. n_classes-1``.
        y_pred: ``(N,)`` predicted grades in ``0 .. n_classes-1``.
        n_runs: number of runs ``R``; runs with no rows get an all-zero matrix.
        n_classes: number of grades ``J``.
        weights: ``(N,)`` optional count of each row, for rows that are already aggregated
            (``store.runs.confusion_counts`` returns one row per (run, y_true, y_pred)).

    Returns:
        ``(R, J, J)`` int64 counts; ``[r, i, j]`` is the number of rows of run ``r`` with
        true grade ``i`` predicted as ``j``.

    Raises:
        ValueError: on mismatched lengths or labels outside their range.
    """
    if n_runs < 0 or n_classes < 2:
        raise ValueError(f"{n_runs=} must be >= 0 and {n_classes=} must be >= 2")
    run_index = np.asarray(run_index, dtype=np.int64).ravel()
    y_true = np.asarray(y_true, dtype=np.int64).ravel()
    y_pred = np.asarray(y_pred, dtype=np.int64).ravel()
    if not run_index.size == y_true.size == y_pred.size:
        raise ValueError(
            f"lengths differ: run_index {run_index.size}, y_true {y_true.size}, "
            f"y_pred {y_pred.size}"
        )
    _check_range("run_index", run_index, n_runs)
    _check_range("y_true", y_true, n_classes)
    _check_range("y_pred", y_pred, n_classes)
    # One flat cell id per row, then a single bincount: O(N) with no Python loop, ~10 ms
    # for 1.5 M rows, where np.add.at would be several times slower.
    cell = (run_index * n_classes + y_true) * n_classes + y_pred
    if weights is None:
        counts = np.bincount(cell, minlength=n_runs * n_classes * n_classes)
    else:
        weights = np.asarray(weights, dtype=np.int64).ravel()
        if weights.size != cell.size:
            raise ValueError(f"weights has {weights.size} rows, expected {cell.size}")
        flat = np.bincount(cell, weights=weights, minlength=n_runs * n_classes * n_classes)
        counts = np.rint(flat).astype(np.int64)
    logger.debug("counted %d rows into %d confusion matrices", cell.size, n_runs)
    return counts.reshape(n_runs, n_classes, n_classes)


def metrics_from_confusion(cm: np.ndarray) -> dict[str, Any]:
    """Compute all six metrics from one or many confusion matrices.

    Args:
        cm: ``(R, J, J)`` or ``(J, J)`` counts, rows = true grade, columns = predicted.

    Returns:
        A dict keyed by :data:`METRICS`. Each value is an ``(R,)`` float64 array for a 3-D
        input, or a Python ``float`` for a 2-D input. Undefined values are ``nan`` (see the
        module docstring).
    """
    cm = np.asarray(cm)
    single = cm.ndim == 2
    if single:
        cm = cm[np.newaxis]
    if cm.ndim != 3 or cm.shape[1] != cm.shape[2]:
        raise ValueError(f"cm must have shape (R, J, J) or (J, J), got {cm.shape}")
    cm = cm.astype(np.float64, copy=False)
    n_classes = cm.shape[1]

    grades = np.arange(n_classes)
    distance = np.abs(grades[:, None] - grades[None, :]).astype(np.float64)  # (J, J)

    n_true = cm.sum(axis=2)  # (R, J) samples per true grade
    n_pred = cm.sum(axis=1)  # (R, J) samples per predicted grade
    total = n_true.sum(axis=1)  # (R,)
    present = n_true > 0  # (R, J) classes that occur in the test set
    n_present = present.sum(axis=1)

    # Division helpers that give nan instead of warnings for empty runs / absent classes.
    def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
        out = np.full(np.broadcast(num, den).shape, np.nan)
        np.divide(num, den, out=out, where=den > 0)
        return out

    abs_error = (cm * distance).sum(axis=2)  # (R, J) summed |i - j| per true grade
    mae = _safe_div(abs_error.sum(axis=1), total)  # eq. 10

    class_mae = _safe_div(abs_error, n_true)  # (R, J), nan for absent classes
    recall = _safe_div(np.diagonal(cm, axis1=1, axis2=2), n_true)  # (R, J)
    amae = _safe_div(np.where(present, class_mae, 0.0).sum(axis=1), n_present)  # eq. 6
    ba = _safe_div(np.where(present, recall, 0.0).sum(axis=1), n_present)  # eq. 14
    any_present = n_present > 0
    mmae = np.where(any_present, np.where(present, class_mae, -np.inf).max(axis=1), np.nan)
    ms = np.where(any_present, np.where(present, recall, np.inf).min(axis=1), np.nan)

    # QWK, eqs. 7-9. The (J-1)^2 normalisation of the weights cancels in the ratio, so it is
    # left out; E = outer(row sums, column sums) / N.
    weights = distance**2
    observed = (cm * weights).sum(axis=(1, 2))
    expected = _safe_div(
        np.einsum("ri,rj,ij->r", n_true, n_pred, weights),
        total,
    )
    with np.errstate(invalid="ignore"):
        # expected == 0 only when all labels are one grade (or the run is empty): nan.
        qwk = np.where(expected > 0, 1.0 - _safe_div(observed, expected), np.nan)

    result = {"qwk": qwk, "mae": mae, "amae": amae, "mmae": mmae, "ms": ms, "ba": ba}
    if single:
        return {name: float(values[0]) for name, values in result.items()}
    return result


def compute_metrics(y_true: Any, y_pred: Any, n_classes: int) -> dict[str, float]:
    """Compute all six metrics for one run.

    Args:
        y_true: ``(N,)`` grades, or ``(N, J)`` one-hot / probabilities (argmax is taken);
            a numpy array, a sequence or a torch tensor (any device).
        y_pred: ``(N,)`` predicted grades, or ``(N, J)`` probabilities / logits (argmax).
        n_classes: number of grades ``J``.

    Returns:
        ``{metric: value}`` for every name in :data:`METRICS`. (Rows already counted, such
        as ``store.runs.confusion_counts``'s, go through :func:`confusion_matrices` with
        ``weights`` and :func:`metrics_from_confusion` instead.)
    """
    labels_true = _to_labels(y_true)
    labels_pred = _to_labels(y_pred)
    if labels_true.shape != labels_pred.shape:
        raise ValueError(f"y_true {labels_true.shape} and y_pred {labels_pred.shape} differ")
    cm = confusion_matrices(
        np.zeros_like(labels_true), labels_true, labels_pred, n_runs=1, n_classes=n_classes
    )
    return metrics_from_confusion(cm[0])


def _to_labels(values: Any) -> np.ndarray:
    """Turn numpy / torch / sequence input into ``(N,)`` int64 grades (argmax for 2-D)."""
    # Duck-typed so this module does not import torch: tensors may need grad-detaching and
    # a move off the GPU before numpy can read them.
    if hasattr(values, "detach") and hasattr(values, "cpu"):
        values = values.detach().cpu().numpy()
    array = np.asarray(values)
    if array.ndim == 2:
        array = array.argmax(axis=1)
    elif array.ndim != 1:
        raise ValueError(f"expected 1-D labels or 2-D probabilities, got shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        rounded = np.rint(array)
        if not np.array_equal(rounded, array):
            raise ValueError("1-D labels must be whole numbers")
        array = rounded
    return array.astype(np.int64, copy=False)


def _check_range(name: str, values: np.ndarray, upper: int) -> None:
    """Raise when any value falls outside ``0 .. upper-1``."""
    if values.size and (values.min() < 0 or values.max() >= upper):
        raise ValueError(f"{name} must lie in 0..{upper - 1}, got {values.min()}..{values.max()}")
