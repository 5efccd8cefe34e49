"""The metric registry, and ordinal classification metrics vectorised over many runs at once.

Every metric SoftGrade reports is one `Metric` record in :data:`REGISTRY` (name, label,
direction, range, what it is computed from, the function, one sentence of meaning), looked up
by name with `get_metric`, whose error lists the valid names. A lab adds its own metric as a
module defining ``METRIC`` in a package named in ``SOFTGRADE_METRIC_PACKAGES`` (the record
type is in `engine.analysis.metric_base`). The study's primary metric
(:data:`PRIMARY_METRIC`) and the metric a search selects runs by (:data:`SELECTION_METRIC`)
are declared here once; no other module spells a metric's name (docs/add-a-metric.md).
`METRICS`, `LOWER_IS_BETTER`, `METRIC_LABELS` and the ``PROBABILITY_*`` views are derived
from the registry. The probability metrics' arithmetic is in
`engine.analysis.probability_scores`, their per-run frames in
`engine.analysis.probability_metrics`.

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
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from engine import plugins
from engine.analysis import conformal
from engine.analysis import probability_scores as ps

# The record and its vocabulary live beneath the registry (a plug-in imports them while the
# registry reads it); callers keep importing them from here.
from engine.analysis.metric_base import (
    DIRECTIONS,  # noqa: F401 (re-exported)
    FROM_CALIBRATION,
    FROM_CONFUSION,
    FROM_PROBABILITIES,
    HIGHER,
    KINDS,
    LOWER,
    Metric,
)

logger = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------
# The registry: one `Metric` record per metric (docs/add-a-metric.md)
# --------------------------------------------------------------------------------------------

#: Names importable packages (comma-separated) whose modules each define ``METRIC``: a lab's
#: metrics, added without touching this checkout (as ``SOFTGRADE_METHOD_PACKAGES`` adds
#: methods). Read once, when this module is first imported; processes started by the CLI or
#: the worker inherit the variable and so see the same metrics.
PLUGIN_VARIABLE = "SOFTGRADE_METRIC_PACKAGES"

# The metrics' names: their keys in every table, CSV and URL. Other modules use these
# constants (or PRIMARY_METRIC / SELECTION_METRIC) rather than spelling a name.
QWK = "qwk"
MAE = "mae"
AMAE = "amae"
MMAE = "mmae"
MS = "ms"
BA = "ba"
RPS = "rps"
ECE = "ece"
ECE_CUM = "ece_cum"
UNIMODAL = "unimodal"
WITHIN1 = "within1"
SET_SIZE = "set_size"


class UnknownMetricError(ValueError):
    """A metric name the registry does not know; the message lists the valid ones."""


# --------------------------------------------------------------------------------------------
# The metrics of the confusion counts: (R, J, J) float64 counts -> (R,)
# --------------------------------------------------------------------------------------------


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den``, ``nan`` where ``den`` is zero (an empty run, an absent class)."""
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _distance(cm: np.ndarray) -> np.ndarray:
    """``(J, J)`` ordinal distance ``|i - j|`` between grades."""
    grades = np.arange(cm.shape[1])
    return np.abs(grades[:, None] - grades[None, :]).astype(np.float64)


def _class_mae(cm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(R, J)`` mean absolute error per true grade (nan if absent) and the present mask."""
    n_true = cm.sum(axis=2)
    return _safe_div((cm * _distance(cm)).sum(axis=2), n_true), n_true > 0


def _recall(cm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(R, J)`` sensitivity per true grade (nan if absent) and the present mask."""
    n_true = cm.sum(axis=2)
    return _safe_div(np.diagonal(cm, axis1=1, axis2=2), n_true), n_true > 0


def _mean_present(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """``(R,)`` mean over the classes present in each run's test set."""
    return _safe_div(np.where(present, values, 0.0).sum(axis=1), present.sum(axis=1))


def quadratic_weighted_kappa(cm: np.ndarray) -> np.ndarray:
    """QWK, eqs. 7-9; ``nan`` when every label is one grade (see the module docstring)."""
    # The (J-1)^2 normalisation of the weights cancels in the ratio, so it is left out;
    # E = outer(row sums, column sums) / N.
    weights = _distance(cm) ** 2
    observed = (cm * weights).sum(axis=(1, 2))
    expected = _safe_div(
        np.einsum("ri,rj,ij->r", cm.sum(axis=2), cm.sum(axis=1), weights), cm.sum(axis=(1, 2))
    )
    with np.errstate(invalid="ignore"):
        return np.where(expected > 0, 1.0 - _safe_div(observed, expected), np.nan)


def mean_absolute_error(cm: np.ndarray) -> np.ndarray:
    """MAE, eq. 10: the mean grade distance over all films."""
    return _safe_div((cm * _distance(cm)).sum(axis=(1, 2)), cm.sum(axis=(1, 2)))


def average_mae(cm: np.ndarray) -> np.ndarray:
    """AMAE, eq. 6: the MAE of each present grade, averaged over grades."""
    return _mean_present(*_class_mae(cm))


def maximum_mae(cm: np.ndarray) -> np.ndarray:
    """MMAE: the largest per-grade MAE over the present grades."""
    class_mae, present = _class_mae(cm)
    worst = np.where(present, class_mae, -np.inf).max(axis=1)
    return np.where(present.any(axis=1), worst, np.nan)


def minimum_sensitivity(cm: np.ndarray) -> np.ndarray:
    """MS: the smallest per-grade sensitivity over the present grades."""
    recall, present = _recall(cm)
    return np.where(present.any(axis=1), np.where(present, recall, np.inf).min(axis=1), np.nan)


def balanced_accuracy(cm: np.ndarray) -> np.ndarray:
    """BA, eq. 14: the sensitivity of each present grade, averaged over grades."""
    return _mean_present(*_recall(cm))


_METRICS: tuple[Metric, ...] = (
    # The paper's six ("Evaluation metrics", eqs. 7-14), in the order of METRICS.
    Metric(
        QWK,
        "QWK",
        HIGHER,
        (-1.0, 1.0),
        FROM_CONFUSION,
        quadratic_weighted_kappa,
        "Quadratic weighted kappa: agreement with the true grades beyond chance, a miss "
        "charged by its squared distance (1 perfect, 0 chance).",
    ),
    Metric(
        MAE,
        "MAE",
        LOWER,
        (0.0, 1.0),
        FROM_CONFUSION,
        mean_absolute_error,
        "Mean absolute error: how many grades off a film is on average.",
        scales_with_grades=True,
    ),
    Metric(
        AMAE,
        "AMAE",
        LOWER,
        (0.0, 1.0),
        FROM_CONFUSION,
        average_mae,
        "Average MAE: the mean absolute error of each grade, averaged over the grades, so a "
        "rare grade counts as much as a common one.",
        scales_with_grades=True,
    ),
    Metric(
        MMAE,
        "MMAE",
        LOWER,
        (0.0, 1.0),
        FROM_CONFUSION,
        maximum_mae,
        "Maximum MAE: the mean absolute error of the worst-served grade.",
        scales_with_grades=True,
    ),
    Metric(
        MS,
        "MS",
        HIGHER,
        (0.0, 1.0),
        FROM_CONFUSION,
        minimum_sensitivity,
        "Minimum sensitivity: the share of films of the worst-recognised grade graded right.",
    ),
    Metric(
        BA,
        "BA",
        HIGHER,
        (0.0, 1.0),
        FROM_CONFUSION,
        balanced_accuracy,
        "Balanced accuracy: the share of each grade's films graded right, averaged over "
        "the grades.",
    ),
    # The probability metrics (engine.analysis.probability_metrics reads them per run).
    Metric(
        RPS,
        "RPS",
        LOWER,
        (0.0, 1.0),
        FROM_PROBABILITIES,
        ps.ranked_probability_score,
        "Ranked probability score: the squared distance between the predicted and the true "
        "cumulative grade distributions, summed over grades and averaged over films "
        "(dlordinal's; not divided by J − 1, so 0 to 4 on KL and 0 to 3 on CPPD). Lower is "
        "better.",
        scales_with_grades=True,
    ),
    Metric(
        ECE,
        "ECE (top label)",
        LOWER,
        (0.0, 1.0),
        FROM_PROBABILITIES,
        ps.top_label_ece,
        "Top-label calibration error: how far the probability given to the predicted grade "
        "is from how often that grade is right, over 10 equal-width bins. Lower is better.",
    ),
    Metric(
        ECE_CUM,
        "ECE (P(grade > k))",
        LOWER,
        (0.0, 1.0),
        FROM_PROBABILITIES,
        ps.cumulative_ece,
        "Ordinal calibration error: the same for each event “grade > k” and its "
        "predicted probability, averaged over the J − 1 thresholds. Lower is better.",
    ),
    Metric(
        UNIMODAL,
        "Unimodal share",
        HIGHER,
        (0.0, 1.0),
        FROM_PROBABILITIES,
        ps.unimodal_share,
        "Share of films whose predicted distribution has a single peak, as soft labels are "
        "meant to teach. Higher is better.",
    ),
    Metric(
        WITHIN1,
        "Accuracy within one grade",
        HIGHER,
        (0.0, 1.0),
        FROM_PROBABILITIES,
        ps.within_one_grade,
        "Share of films whose predicted grade is at most one grade from the recorded one. "
        "Higher is better.",
    ),
    # The metrics calibrated on each run's validation films (a study without per-film
    # validation predictions has none of them).
    Metric(
        SET_SIZE,
        f"Set size at {round(conformal.SET_SIZE_COVERAGE * 100)} %",
        LOWER,
        (1.0, 5.0),
        FROM_CALIBRATION,
        conformal.mean_set_size,
        f"Mean number of grades in a test film's conformal grade set at "
        f"{round(conformal.SET_SIZE_COVERAGE * 100)} % coverage (the "
        f"{conformal.SET_SIZE_SCORE} score, one threshold from the run's own validation "
        "films; docs/conformal.md): at that coverage, a sharper model gives fewer grades. "
        "Lower is better. The coverage is nominal, of the recorded grade; `softgrade sets "
        f"--score {conformal.SET_SIZE_SCORE}` and Compare → Grade sets give the coverage "
        "each run reached. Needs each run's per-film validation predictions.",
        counts_grades=True,
    ),
)


def _with_plugins(built_in: tuple[Metric, ...]) -> Mapping[str, Metric]:
    """The built-in metrics, then those of the packages named in `PLUGIN_VARIABLE`."""
    found: dict[str, Metric] = {}
    plugged = plugins.discover_records(
        plugins.plugin_package_names(PLUGIN_VARIABLE), "METRIC", Metric
    )
    for source, metric in [("engine.analysis.metrics", m) for m in built_in] + plugged:
        if metric.name in found:
            raise ValueError(f"metric {metric.name!r} is defined twice (again in {source})")
        found[metric.name] = metric
    if plugged:
        logger.debug("metrics added by plug-in: %s", ", ".join(m.name for _, m in plugged))
    return MappingProxyType(found)


#: Every metric by name: the paper's six first (in the paper's equation order), then the
#: probability metrics, then the calibrated ones (set size), then any plug-in's.
REGISTRY: Mapping[str, Metric] = _with_plugins(_METRICS)

#: The study's primary endpoint: the one metric its confirmatory comparison is about.
PRIMARY_METRIC: str = AMAE
#: What a search selects runs by: this metric on the validation films of each run's kept
#: epoch (the runs' stored ``SELECTION_COLUMN``; the paper selects by AMAE).
SELECTION_METRIC: str = PRIMARY_METRIC
#: The stored column of `store.runs` (and of each epoch) holding the selection metric.
#: It is a schema name: tests/engine/test_metric_registry.py holds it to the schema.
SELECTION_COLUMN: str = f"val_{SELECTION_METRIC}"
#: Column order of the paper's Table 4.
PAPER_TABLE_ORDER: tuple[str, ...] = (QWK, MAE, MS, BA, AMAE, MMAE)


def get_metric(name: str) -> Metric:
    """The metric called ``name``; `UnknownMetricError` listing the valid names otherwise."""
    if name not in REGISTRY:
        raise UnknownMetricError(
            f"unknown metric {name!r}; allowed: {', '.join(REGISTRY)} "
            "(`softgrade metrics` describes each)"
        )
    return REGISTRY[name]


def metric_names(kind: str | None = None) -> tuple[str, ...]:
    """Every registered metric's name in registry order, or only those of one ``kind``."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"{kind=}; allowed: {KINDS}")
    return tuple(m.name for m in REGISTRY.values() if kind is None or m.kind == kind)


def lower_is_better(name: str) -> bool:
    """Whether the lowest value of metric ``name`` is the best."""
    return get_metric(name).lower_is_better


# Derived views kept for the callers that read them (pages, stats, report).
METRICS: tuple[str, ...] = metric_names(FROM_CONFUSION)
#: The metrics calibrated on each run's validation films and scored on its test films.
CALIBRATED_METRICS: tuple[str, ...] = metric_names(FROM_CALIBRATION)
#: What the paired statistics compare per (task, method, seed) (`softgrade stats`, Compare →
#: Statistics): the grade metrics, then the calibrated ones.
STATS_METRICS: tuple[str, ...] = METRICS + CALIBRATED_METRICS
LOWER_IS_BETTER: frozenset[str] = frozenset(m for m in STATS_METRICS if lower_is_better(m))
METRIC_LABELS: dict[str, str] = {m: REGISTRY[m].label for m in STATS_METRICS}
PROBABILITY_METRICS: tuple[str, ...] = metric_names(FROM_PROBABILITIES)
PROBABILITY_LOWER_IS_BETTER: frozenset[str] = frozenset(
    m for m in PROBABILITY_METRICS if lower_is_better(m)
)
PROBABILITY_LABELS: dict[str, str] = {m: REGISTRY[m].label for m in PROBABILITY_METRICS}
PROBABILITY_NOTES: dict[str, str] = {m: REGISTRY[m].meaning for m in PROBABILITY_METRICS}


# --------------------------------------------------------------------------------------------
# Confusion counts
# --------------------------------------------------------------------------------------------


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
    """Compute every metric of the confusion counts from one or many confusion matrices.

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
    # Each metric recomputes its own marginals: six reductions of an (R, J, J) array, under
    # a millisecond for 2,000 runs, and each function reads on its own.
    result = {name: REGISTRY[name].function(cm) for name in METRICS}
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
