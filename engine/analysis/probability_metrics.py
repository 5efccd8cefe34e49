"""Metrics of the predicted probabilities, not only of the predicted grade.

Every run stores each film's softmax probabilities (``predictions.probs``). The paper's six
metrics read only the argmax; these read the whole distribution, which is what soft labels
are meant to shape. Input is the long frame `store.runs.selected_probabilities` returns
(one row per (run, film), probabilities in columns ``p0``, ``p1``, ...), so all runs are
scored at once with array operations and ``np.bincount``, no per-run Python loop.

Per run (:func:`per_run_probability_metrics`), every metric of the registry
(`engine.analysis.metrics`) computed from probabilities, :data:`PROBABILITY_METRICS`; their
arithmetic is in `engine.analysis.probability_scores`:

* ``rps`` — ranked probability score, dlordinal's ``ranked_probability_score``
  (Janitza et al. 2016): per film ``sum_{j=0}^{J-1} (F_j - O_j)^2`` with ``F`` the cumulative
  predicted probabilities and ``O`` the cumulative one-hot truth, averaged over films. It is
  **not** divided by ``J - 1``: it ranges from 0 (all mass on the true grade) to ``J - 1``
  (all mass on the grade farthest from it), i.e. 0–4 for KL and 0–3 for CPPD, so compare it
  within a task only. Lower is better.
* ``ece`` — top-label expected calibration error: the predicted grade's probability
  (the confidence) against whether that grade is right, in :data:`N_BINS` equal-width bins.
* ``ece_cum`` — ordinal (cumulative) calibration error: for each threshold ``k = 0..J-2``
  the event "grade > k" with predicted probability ``P(grade > k) = sum_{j>k} p_j``,
  binned the same way; the mean of the ``J - 1`` per-threshold errors.
* ``unimodal`` — share of films whose predicted distribution is unimodal: it rises to one
  peak and falls after it (plateaus allowed); differences below
  :data:`UNIMODAL_TOLERANCE` count as ties, so float noise in the tails is not a second mode.
* ``within1`` — accuracy within one grade: share of films with ``|predicted − true| <= 1``.

Binning (``ece``, ``ece_cum`` and the reliability diagrams): :data:`N_BINS` = 10
equal-width bins on [0, 1] with edges 0, 0.1, …, 1, exactly as scikit-learn's
``calibration_curve(strategy="uniform")``: the first bin is [0, 0.1], the others
(low, high], so a value on an inner edge goes to the lower bin. ECE is
``sum_b (n_b / N) |accuracy_b − confidence_b|`` over non-empty bins (Guo et al. 2017).

The predicted grade is the argmax of the stored probabilities (the first on a tie), which
is how ``predictions.y_pred`` is written.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from engine.analysis import metrics
from engine.analysis.metrics import (
    PROBABILITY_LABELS,
    PROBABILITY_LOWER_IS_BETTER,
    PROBABILITY_METRICS,
    PROBABILITY_NOTES,
)
from engine.analysis.probability_scores import (
    N_BINS,
    UNIMODAL_TOLERANCE,
    CalibratedBatch,
    ProbabilityBatch,
    bin_index,
    exceedance,
    is_unimodal,
    probability_columns,
    rps_per_film,
    task_arrays,
)
from engine.vocab import TASK_CLASSES

logger = logging.getLogger(__name__)

# Re-exported: the registry (engine.analysis.metrics) owns the names, labels and notes, the
# scores module the arithmetic; callers have long imported them from here.
__all__ = [
    "N_BINS",
    "PROBABILITY_LABELS",
    "PROBABILITY_LOWER_IS_BETTER",
    "PROBABILITY_METRICS",
    "PROBABILITY_NOTES",
    "RUN_KEYS",
    "TOP_LABEL",
    "UNIMODAL_TOLERANCE",
    "bin_index",
    "exceedance",
    "expected_calibration_error",
    "is_unimodal",
    "per_run_calibrated_metrics",
    "per_run_probability_metrics",
    "probability_columns",
    "probability_summary",
    "reliability_table",
    "rps_per_film",
    "task_arrays",
]

RUN_KEYS: tuple[str, ...] = ("study_id", "run_id", "task", "method", "seed")
# Columns of a probability frame that vary per film (the rest are constant within a run).
_ROW_COLUMNS = frozenset({"image_id", "y_true", "y_pred"})
TOP_LABEL = "top label"


# --------------------------------------------------------------------------------------------
# Per run
# --------------------------------------------------------------------------------------------


def per_run_probability_metrics(
    frame: pd.DataFrame, *, n_bins: int = N_BINS, tolerance: float = UNIMODAL_TOLERANCE
) -> pd.DataFrame:
    """One row per run with the metrics of :data:`PROBABILITY_METRICS`.

    Args:
        frame: one row per (run, film): ``run_id``, ``task``, ``y_true``, ``p0..``; other
            columns constant within a run (``study_id``, ``method``, ``seed``,
            ``base_method``, ...) are carried through, as
            `engine.analysis.compare.per_run_metrics` does, so the result feeds
            `engine.analysis.compare.score_frame` and `engine.analysis.stats`.
        n_bins: calibration bins.
        tolerance: ties for :func:`is_unimodal`.

    Returns:
        The run columns, ``n_films`` and one column per metric.
    """
    run_columns = [c for c in frame.columns if c not in _ROW_COLUMNS and not _is_prob(c)]
    metric_columns = ["n_films", *PROBABILITY_METRICS]
    if frame.empty:
        return pd.DataFrame(columns=[*run_columns, *metric_columns])
    parts = []
    for task, rows in frame.groupby("task", sort=True):
        run_index, run_ids = pd.factorize(rows["run_id"])
        first = np.unique(run_index, return_index=True)[1]  # first row of each run, in order
        runs = rows.iloc[first][run_columns].reset_index(drop=True)
        probs, y_true = task_arrays(rows, str(task))
        values = _run_metrics(probs, y_true, run_index, len(run_ids), n_bins, tolerance)
        parts.append(runs.assign(**values))
    return pd.concat(parts, ignore_index=True)


def _run_metrics(
    probs: np.ndarray,
    y_true: np.ndarray,
    run_index: np.ndarray,
    n_runs: int,
    n_bins: int,
    tolerance: float,
) -> dict[str, np.ndarray]:
    """Every registered probability metric of every run from the stacked films of one task."""
    batch = ProbabilityBatch(probs, y_true, run_index, n_runs, n_bins, tolerance)
    values = {name: metrics.get_metric(name).function(batch) for name in PROBABILITY_METRICS}
    return {"n_films": batch.n_films.astype(np.int64), **values}


def per_run_calibrated_metrics(
    val: pd.DataFrame, test: pd.DataFrame, *, names: Sequence[str] | None = None
) -> pd.DataFrame:
    """One row per run with the metrics calibrated on its validation films and scored on its
    test films (:data:`engine.analysis.metrics.CALIBRATED_METRICS`, or ``names`` of them).

    Args:
        val: the runs' validation films, as :func:`per_run_probability_metrics` reads.
        test: their test films, the same columns.
        names: which calibrated metrics (default: every one).

    Returns:
        The run columns of ``test``, ``n_cal`` (validation films) and one column per
        metric; a run without validation films has ``n_cal`` 0 and ``nan`` values. Runs with
        validation films only are left out (nothing to score).
    """
    names = tuple(metrics.CALIBRATED_METRICS if names is None else names)
    run_columns = [c for c in test.columns if c not in _ROW_COLUMNS and not _is_prob(c)]
    if test.empty:
        return pd.DataFrame(columns=[*run_columns, "n_cal", *names])
    parts = []
    for task, rows in test.groupby("task", sort=True):
        run_index, run_ids = pd.factorize(rows["run_id"])
        first = np.unique(run_index, return_index=True)[1]
        runs = rows.iloc[first][run_columns].reset_index(drop=True)
        cal = val[val["run_id"].isin(run_ids)] if len(val) else val
        cal_index = pd.Index(run_ids).get_indexer(cal["run_id"]) if len(cal) else []
        batch = CalibratedBatch(
            _films(cal, str(task), cal_index, len(run_ids)),
            _films(rows, str(task), run_index, len(run_ids)),
        )
        values = {name: metrics.get_metric(name).function(batch) for name in names}
        n_cal = batch.calibration.n_films.astype(np.int64)
        parts.append(runs.assign(n_cal=n_cal, **values))
    return pd.concat(parts, ignore_index=True)


def _films(frame: pd.DataFrame, task: str, run_index: Any, n_runs: int) -> ProbabilityBatch:
    """One task's films of ``n_runs`` runs as a batch; none (a run set without validation
    films) as an empty one."""
    if frame.empty:
        none = np.empty(0, dtype=np.int64)
        return ProbabilityBatch(np.empty((0, TASK_CLASSES[task])), none, none, n_runs)
    probs, y_true = task_arrays(frame, task)
    return ProbabilityBatch(probs, y_true, np.asarray(run_index, dtype=np.int64), n_runs)


# --------------------------------------------------------------------------------------------
# Reliability diagrams
# --------------------------------------------------------------------------------------------


def reliability_table(
    frame: pd.DataFrame,
    *,
    by: Sequence[str] = ("task", "method"),
    n_bins: int = N_BINS,
) -> pd.DataFrame:
    """Reliability-diagram data, top-label and for every cumulative event ``grade > k``.

    Films are pooled over the runs of each group (by default every seed of a method), so
    each bin counts every test film of those runs once.

    Args:
        frame: as for :func:`per_run_probability_metrics`.
        by: grouping columns (``task`` must be one of them); add ``seed`` for one diagram
            per run.
        n_bins: equal-width bins on [0, 1] (see the module docstring).

    Returns:
        One row per (group, event, non-empty bin): the ``by`` columns, ``event``
        (``"top label"`` or ``"grade > k"``), ``threshold`` (k; -1 for the top label),
        ``bin``, ``bin_low``, ``bin_high``, ``confidence`` (mean predicted probability),
        ``accuracy`` (observed frequency of the event), ``count``, and ``gap``
        (accuracy − confidence).
    """
    by = list(by)
    if "task" not in by:
        raise ValueError(f"{by=} must include 'task' (tasks have different grades)")
    columns = [
        *by,
        "event",
        "threshold",
        "bin",
        "bin_low",
        "bin_high",
        "confidence",
        "accuracy",
        "count",
        "gap",
    ]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    parts = []
    for task, rows in frame.groupby("task", sort=True):
        probs, y_true = task_arrays(rows, str(task))
        # ngroup numbers groups in order of first appearance, as drop_duplicates lists them.
        group_index = rows.groupby(by, sort=False).ngroup().to_numpy()
        groups = rows[by].drop_duplicates().reset_index(drop=True)
        predicted = probs.argmax(axis=1)
        events = [(TOP_LABEL, -1, probs.max(axis=1), predicted == y_true)]
        cumulative = exceedance(probs)
        events += [
            (f"grade > {k}", k, cumulative[:, k], y_true > k) for k in range(cumulative.shape[1])
        ]
        for name, threshold, confidence, observed in events:
            bins = _bin_sums(group_index, len(groups), confidence, observed, n_bins)
            bins = bins.join(groups, on="group").drop(columns="group")
            parts.append(bins.assign(event=name, threshold=threshold))
    out = pd.concat(parts, ignore_index=True)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    out["bin_low"], out["bin_high"] = edges[out["bin"]], edges[out["bin"] + 1]
    out["gap"] = out["accuracy"] - out["confidence"]
    return out[columns]


def _bin_sums(
    group_index: np.ndarray,
    n_groups: int,
    confidence: np.ndarray,
    observed: np.ndarray,
    n_bins: int,
) -> pd.DataFrame:
    """Mean confidence, observed frequency and count per non-empty (group, bin)."""
    cell = group_index * n_bins + bin_index(confidence, n_bins)
    size = n_groups * n_bins
    count = np.bincount(cell, minlength=size)
    conf_sum = np.bincount(cell, weights=confidence, minlength=size)
    hit_sum = np.bincount(cell, weights=observed.astype(np.float64), minlength=size)
    filled = np.flatnonzero(count)
    return pd.DataFrame(
        {
            "group": filled // n_bins,
            "bin": filled % n_bins,
            "confidence": conf_sum[filled] / count[filled],
            "accuracy": hit_sum[filled] / count[filled],
            "count": count[filled],
        }
    )


def expected_calibration_error(reliability: pd.DataFrame) -> float:
    """ECE from the bins of one group and one event of :func:`reliability_table`."""
    if reliability.empty:
        return float("nan")
    weights = reliability["count"] / reliability["count"].sum()
    return float((weights * (reliability["accuracy"] - reliability["confidence"]).abs()).sum())


# --------------------------------------------------------------------------------------------
# Per method
# --------------------------------------------------------------------------------------------


def probability_summary(per_run: pd.DataFrame) -> pd.DataFrame:
    """Mean and sample standard deviation (ddof = 1) over seeds per (task, method).

    Returns:
        Columns ``task``, ``method``, ``n_seeds`` and ``<metric>_mean`` / ``<metric>_std``
        for every name in :data:`PROBABILITY_METRICS`; the std is NaN with one seed.
    """
    columns = ["task", "method", "n_seeds"]
    columns += [f"{m}_{s}" for m in PROBABILITY_METRICS for s in ("mean", "std")]
    if per_run.empty:
        return pd.DataFrame(columns=columns)
    grouped = per_run.groupby(["task", "method"], sort=True)
    table = grouped[list(PROBABILITY_METRICS)].agg(["mean", "std"])
    table.columns = [f"{m}_{stat}" for m, stat in table.columns]
    table["n_seeds"] = grouped["seed"].nunique()
    return table.reset_index()[columns]


def _is_prob(column: str) -> bool:
    return column[:1] == "p" and column[1:].isdigit()
