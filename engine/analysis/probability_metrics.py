"""Metrics of the predicted probabilities, not only of the predicted grade.

Every run stores each film's softmax probabilities (``predictions.probs``). The paper's six
metrics read only the argmax; these read the whole distribution, which is what soft labels
are meant to shape. Input is the long frame `store.runs.selected_probabilities` returns
(one row per (run, film), probabilities in columns ``p0``, ``p1``, ...), so all runs are
scored at once with array operations and ``np.bincount``, no per-run Python loop.

Per run (:func:`per_run_probability_metrics`), in :data:`PROBABILITY_METRICS`:

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

import numpy as np
import pandas as pd

from engine.vocab import TASK_CLASSES

logger = logging.getLogger(__name__)

PROBABILITY_METRICS: tuple[str, ...] = ("rps", "ece", "ece_cum", "unimodal", "within1")
PROBABILITY_LOWER_IS_BETTER: frozenset[str] = frozenset({"rps", "ece", "ece_cum"})
PROBABILITY_LABELS: dict[str, str] = {
    "rps": "RPS",
    "ece": "ECE (top label)",
    "ece_cum": "ECE (P(grade > k))",
    "unimodal": "Unimodal share",
    "within1": "Accuracy within one grade",
}
#: One plain sentence per metric, for a page to show beside the numbers.
PROBABILITY_NOTES: dict[str, str] = {
    "rps": "Ranked probability score: the squared distance between the predicted and the true "
    "cumulative grade distributions, summed over grades and averaged over films (dlordinal's; "
    "not divided by J − 1, so 0 to 4 on KL and 0 to 3 on CPPD). Lower is better.",
    "ece": "Top-label calibration error: how far the probability given to the predicted grade "
    "is from how often that grade is right, over 10 equal-width bins. Lower is better.",
    "ece_cum": "Ordinal calibration error: the same for each event “grade > k” and its "
    "predicted probability, averaged over the J − 1 thresholds. Lower is better.",
    "unimodal": "Share of films whose predicted distribution has a single peak, as soft "
    "labels are meant to teach. Higher is better.",
    "within1": "Share of films whose predicted grade is at most one grade from the recorded "
    "one. Higher is better.",
}
N_BINS = 10
UNIMODAL_TOLERANCE = 1e-6
RUN_KEYS: tuple[str, ...] = ("study_id", "run_id", "task", "method", "seed")
# Columns of a probability frame that vary per film (the rest are constant within a run).
_ROW_COLUMNS = frozenset({"image_id", "y_true", "y_pred"})
TOP_LABEL = "top label"


def probability_columns(frame: pd.DataFrame) -> list[str]:
    """The ``p0``, ``p1``, ... columns of a probability frame, in grade order."""
    columns = [c for c in frame.columns if c[:1] == "p" and c[1:].isdigit()]
    return sorted(columns, key=lambda c: int(c[1:]))


def task_arrays(frame: pd.DataFrame, task: str) -> tuple[np.ndarray, np.ndarray]:
    """The ``(N, J)`` probabilities and ``(N,)`` true grades of one task's rows.

    Raises:
        ValueError: a row lacks a probability of one of the task's grades.
    """
    n_grades = TASK_CLASSES[task]
    columns = probability_columns(frame)[:n_grades]
    if len(columns) < n_grades:
        raise ValueError(f"{task} needs columns p0..p{n_grades - 1}; got {columns}")
    probs = frame[columns].to_numpy(dtype=np.float64)
    if np.isnan(probs).any():
        raise ValueError(f"some {task} rows lack a probability for one of grades 0..{n_grades - 1}")
    return probs, frame["y_true"].to_numpy(dtype=np.int64)


# --------------------------------------------------------------------------------------------
# Per-film quantities (pure numpy; (N, J) probabilities, (N,) grades)
# --------------------------------------------------------------------------------------------


def rps_per_film(probs: np.ndarray, y_true: np.ndarray) -> np.ndarray:
    """Ranked probability score of each film (dlordinal's, not divided by ``J - 1``)."""
    truth = np.zeros_like(probs)
    truth[np.arange(len(y_true)), y_true] = 1.0
    return ((probs.cumsum(axis=1) - truth.cumsum(axis=1)) ** 2).sum(axis=1)


def exceedance(probs: np.ndarray) -> np.ndarray:
    """``(N, J-1)`` predicted ``P(grade > k)`` for ``k = 0..J-2``, clipped to [0, 1]."""
    return np.clip(1.0 - probs.cumsum(axis=1)[:, :-1], 0.0, 1.0)


def is_unimodal(probs: np.ndarray, tolerance: float = UNIMODAL_TOLERANCE) -> np.ndarray:
    """``(N,)`` True where the distribution never rises again after it has fallen.

    Steps between neighbouring grades smaller than ``tolerance`` are ties (flat), so
    ``[0.5, 0.5, 0, 0]`` is unimodal and ``[0.4, 0.1, 0.1, 0.4]`` is not.
    """
    steps = np.diff(probs, axis=1)
    falls = steps < -tolerance
    rises = steps > tolerance
    fallen_before = np.logical_or.accumulate(falls, axis=1)[:, :-1]
    return np.asarray(~(fallen_before & rises[:, 1:]).any(axis=1))


def bin_index(values: np.ndarray, n_bins: int = N_BINS) -> np.ndarray:
    """Equal-width bin of each value in [0, 1], as scikit-learn's ``calibration_curve``."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return np.searchsorted(edges[1:-1], values)


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
    """Every metric of every run from the stacked films of one task."""
    n_films = np.bincount(run_index, minlength=n_runs).astype(np.float64)

    def run_mean(per_film: np.ndarray) -> np.ndarray:
        return np.bincount(run_index, weights=per_film, minlength=n_runs) / n_films

    predicted = probs.argmax(axis=1)
    confidence = probs.max(axis=1)
    top = _ece(run_index, n_runs, confidence, predicted == y_true, n_films, n_bins)
    cumulative = exceedance(probs)
    events = y_true[:, None] > np.arange(cumulative.shape[1])[None, :]
    per_threshold = [
        _ece(run_index, n_runs, cumulative[:, k], events[:, k], n_films, n_bins)
        for k in range(cumulative.shape[1])
    ]
    return {
        "n_films": n_films.astype(np.int64),
        "rps": run_mean(rps_per_film(probs, y_true)),
        "ece": top,
        "ece_cum": np.mean(per_threshold, axis=0),
        "unimodal": run_mean(is_unimodal(probs, tolerance).astype(np.float64)),
        "within1": run_mean((np.abs(predicted - y_true) <= 1).astype(np.float64)),
    }


def _ece(
    run_index: np.ndarray,
    n_runs: int,
    predicted: np.ndarray,
    observed: np.ndarray,
    n_films: np.ndarray,
    n_bins: int,
) -> np.ndarray:
    """``(R,)`` ECE: ``sum_b |sum observed − sum predicted| / N`` per run.

    ``(n_b / N) |acc_b − conf_b|`` equals ``|Σ_b observed − Σ_b predicted| / N``, so the
    per-bin sums are all that is needed: one bincount each over (run, bin) cells.
    """
    cell = run_index * n_bins + bin_index(predicted, n_bins)
    size = n_runs * n_bins
    gap = np.bincount(cell, weights=observed.astype(np.float64), minlength=size) - np.bincount(
        cell, weights=predicted, minlength=size
    )
    return np.abs(gap).reshape(n_runs, n_bins).sum(axis=1) / n_films


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
