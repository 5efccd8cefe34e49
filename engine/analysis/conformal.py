"""Split conformal grade sets from stored probabilities (docs/conformal.md).

A run's validation films calibrate a threshold on a nonconformity score; on its test films
every grade whose score is at most the threshold is in the set. When calibration and test
films are exchangeable (same site, same protocol, films drawn the same way), a test film's
true grade is in its set with probability at least the nominal coverage, on average over
calibration draws (Vovk et al. 2005; Angelopoulos & Bates 2021, "A gentle introduction").
Nothing here is trained: the sets are a function of the stored probabilities alone, so they
work for every registered method and for imported results.

Scores (:data:`SCORES`), each an ``(N, J)`` matrix, lower = more conforming:

* ``lac``: ``1 − p_y`` (least ambiguous classifier, Sadinle et al. 2019). Nominal: its sets
  need not be ranges of grades.
* ``aps``: the probability mass of grades more likely than ``y`` plus half of ``p_y``
  (adaptive prediction sets, Romano et al. 2020, with its randomised share ``u · p_y`` of the
  own grade fixed at ``u = ½``, so sets are reproducible). Nominal.
* ``ordinal``: Lu et al. 2022's ordinal APS: from the most likely grade, grow a range by the
  more likely neighbour at each step; ``y``'s score is the mass of the range before ``y``
  joins plus half of ``p_y`` (the same fixed ``u = ½``). Sets are ranges of grades.

Why half the own mass, not all of it (the form without randomisation): with the whole
``p_y`` counted, a model sure of the right grade scores every calibration film 1, the
threshold becomes 1, and every grade, whose score is then also 1, is in every set: the
surest model got the widest sets. With half, the sure model's own grade scores ½ and every
other grade 1, so its sets are single grades. Any fixed score keeps the coverage guarantee.
* ``cumulative``: ``max(P(grade < y), P(grade > y))``, the larger tail beyond ``y`` of the
  predicted cumulative distribution. Its sets ``{y: P(< y) ≤ q, P(> y) ≤ q}`` are ranges
  centred on the predicted median (the central-interval idea behind the RPS-based scores
  of the ordinal conformal literature). Ranges of grades.

Two rules keep sets useful without breaking the guarantee (adding grades to a set can only
raise coverage): a set always holds the grade with the lowest score (never empty), and the
sets of the ordinal scores are filled to a range (needed only with per-grade thresholds,
whose sets may otherwise skip a grade).

Quantile: with ``n`` calibration scores the threshold is the ``ceil((n + 1)(1 − α))``-th
smallest (``+inf``, the full set, when that exceeds ``n``); per-grade (class-conditional,
"Mondrian") thresholds do the same within the calibration films of each true grade, so the
coverage holds for each grade separately, which matters because grades are imbalanced.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.analysis.probability_scores import CalibratedBatch, task_arrays

# The arithmetic beneath the metric registry (not probability_metrics, which reads the
# registry): the registry's set-size metric is computed here.
from engine.vocab import TASK_CLASSES

DEFAULT_COVERAGE = 0.9
#: Why a run may have no sets: what the command line and the pages say then.
NO_VALIDATION_NOTE = (
    "grade sets need each run's validation probabilities to calibrate on; runs without them "
    "(per-seed metrics imported without per-film predictions) have none"
)
RUN_KEYS = ("task", "method", "seed")
TOLERANCE = 1e-9


@dataclass(frozen=True)
class Score:
    """One nonconformity score: its name, label, whether its sets are ranges of grades,
    and its ``(N, J)`` probabilities -> ``(N, J)`` scores function."""

    name: str
    label: str
    ordinal: bool
    scores: Callable[[np.ndarray], np.ndarray]
    summary: str


def lac_scores(probs: np.ndarray) -> np.ndarray:
    """``1 − p_y`` for every grade ``y``."""
    return 1.0 - probs


#: The share of a grade's own probability its APS-type score counts (APS's randomised ``u``,
#: fixed): ½, so a sure model's sets are single grades (see the module's docstring).
OWN_SHARE = 0.5


def aps_scores(probs: np.ndarray) -> np.ndarray:
    """Mass of the grades strictly more likely than ``y``, plus :data:`OWN_SHARE` of ``p_y``."""
    above = probs[:, None, :] > probs[:, :, None]  # [i, y, k]: p_k > p_y
    return (above * probs[:, None, :]).sum(axis=2) + OWN_SHARE * probs


def ordinal_scores(probs: np.ndarray) -> np.ndarray:
    """Lu et al. 2022: the mass of the greedily grown range around the mode before ``y``
    joins it, plus :data:`OWN_SHARE` of ``p_y`` (the more likely neighbour joins first; the
    lower one on a tie)."""
    n, j = probs.shape
    rows = np.arange(n)
    lo = probs.argmax(axis=1)
    hi = lo.copy()
    mass = probs[rows, lo].copy()
    out = np.empty_like(probs)
    out[rows, lo] = OWN_SHARE * mass
    for _ in range(j - 1):
        left = np.where(lo > 0, probs[rows, np.maximum(lo - 1, 0)], -np.inf)
        right = np.where(hi < j - 1, probs[rows, np.minimum(hi + 1, j - 1)], -np.inf)
        go_left = left >= right
        lo = np.where(go_left, lo - 1, lo)
        hi = np.where(go_left, hi, hi + 1)
        added = np.where(go_left, lo, hi)
        out[rows, added] = mass + OWN_SHARE * probs[rows, added]
        mass = mass + probs[rows, added]
    return out


def cumulative_scores(probs: np.ndarray) -> np.ndarray:
    """``max(P(grade < y), P(grade > y))`` from the predicted cumulative distribution."""
    cdf = np.cumsum(probs, axis=1)
    below = cdf - probs
    above = np.clip(1.0 - cdf, 0.0, None)
    return np.maximum(below, above)


SCORES: dict[str, Score] = {
    s.name: s
    for s in (
        Score(
            "lac",
            "LAC (1 − p)",
            False,
            lac_scores,
            "nominal baseline: smallest sets on average, may skip a grade",
        ),
        Score(
            "aps",
            "APS (mass above)",
            False,
            aps_scores,
            "nominal: adapts to how unsure the film is, may skip a grade",
        ),
        Score(
            "ordinal",
            "Ordinal APS (Lu 2022)",
            True,
            ordinal_scores,
            "a range grown from the most likely grade",
        ),
        Score(
            "cumulative",
            "Cumulative (median-centred)",
            True,
            cumulative_scores,
            "a range centred on the predicted median grade",
        ),
    )
}
DEFAULT_SCORE = "ordinal"


def get_score(name: str) -> Score:
    """The score named ``name``.

    Raises:
        ValueError: no such score; the message lists the valid names.
    """
    try:
        return SCORES[name.lower()]
    except KeyError:
        raise ValueError(f"unknown score {name!r}; choose one of {', '.join(SCORES)}") from None


def check_coverage(coverage: float) -> float:
    """``coverage`` as a float in (0, 1).

    Raises:
        ValueError: outside (0, 1).
    """
    value = float(coverage)
    if not 0.0 < value < 1.0:
        raise ValueError(f"coverage must be between 0 and 1 (e.g. 0.9); got {coverage!r}")
    return value


def conformal_quantile(scores: np.ndarray, coverage: float) -> float:
    """The ``ceil((n + 1) · coverage)``-th smallest of ``n`` calibration scores; ``+inf``
    when that rank exceeds ``n`` (too few films for the coverage: every grade is in)."""
    n = int(np.size(scores))
    rank = math.ceil((n + 1) * check_coverage(coverage) - 1e-9)  # 1e-9: (n+1)·0.9 in floats
    if rank > n:
        return math.inf
    return float(np.partition(np.asarray(scores, dtype=np.float64), rank - 1)[rank - 1])


def calibrate(
    probs: np.ndarray,
    y_true: np.ndarray,
    *,
    score: str = DEFAULT_SCORE,
    coverage: float = DEFAULT_COVERAGE,
    per_grade: bool = False,
) -> np.ndarray:
    """Thresholds from calibration films.

    Args:
        probs: ``(N, J)`` calibration (validation) probabilities.
        y_true: ``(N,)`` their recorded grades.
        score: a name of :data:`SCORES`.
        coverage: the nominal coverage ``1 − α``.
        per_grade: one threshold per true grade (class-conditional) instead of one for all.

    Returns:
        ``(J,)`` thresholds, the one for grade ``y`` applying to ``y``'s score; equal
        unless ``per_grade``.
    """
    matrix = get_score(score).scores(np.asarray(probs, dtype=np.float64))
    y_true = np.asarray(y_true, dtype=np.int64)
    own = matrix[np.arange(y_true.size), y_true]
    n_grades = matrix.shape[1]
    if not per_grade:
        return np.full(n_grades, conformal_quantile(own, coverage))
    return np.array([conformal_quantile(own[y_true == g], coverage) for g in range(n_grades)])


def predict_sets(
    probs: np.ndarray, thresholds: np.ndarray, *, score: str = DEFAULT_SCORE
) -> np.ndarray:
    """``(N, J)`` boolean sets: grades whose score is within their threshold, plus the
    lowest-scored grade; filled to a range for the ordinal scores."""
    record = get_score(score)
    matrix = record.scores(np.asarray(probs, dtype=np.float64))
    # Scores that are sums (APS, ordinal, cumulative) reach the same value, e.g. the whole
    # mass 1, through different float orders; within TOLERANCE counts as equal (a larger set).
    inside = matrix <= np.asarray(thresholds)[None, :] + TOLERANCE
    inside[np.arange(matrix.shape[0]), matrix.argmin(axis=1)] = True
    if record.ordinal:
        lo, hi = set_bounds(inside)
        grades = np.arange(matrix.shape[1])[None, :]
        inside = (grades >= lo[:, None]) & (grades <= hi[:, None])
    return inside


#: The set-size metric's coverage and score (`engine.analysis.metrics`' ``set_size``): one
#: threshold, so methods are compared at one marginal coverage. The cumulative score: its
#: sets are ranges, and a model sure of the right grade gets one grade; the ordinal APS
#: (not randomised) gives such a model every grade, its neighbours' zero mass tying with
#: the threshold, so it would rank a perfect model worst.
SET_SIZE_COVERAGE = DEFAULT_COVERAGE
SET_SIZE_SCORE = "cumulative"


def mean_set_size(batch: CalibratedBatch) -> np.ndarray:
    """``(R,)`` each run's mean test set size at `SET_SIZE_COVERAGE` with `SET_SIZE_SCORE`,
    calibrated on its own validation films; ``nan`` for a run without validation or test
    films."""
    sizes = np.full(batch.n_runs, np.nan)
    for run in range(batch.n_runs):
        cal_probs, cal_y, probs, _ = batch.run_films(run)
        if cal_y.size == 0 or probs.shape[0] == 0:
            continue
        limits = calibrate(cal_probs, cal_y, score=SET_SIZE_SCORE, coverage=SET_SIZE_COVERAGE)
        sizes[run] = predict_sets(probs, limits, score=SET_SIZE_SCORE).sum(axis=1).mean()
    return sizes


def set_bounds(sets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lowest and highest grade of each (non-empty) set: its range's ends."""
    lo = sets.argmax(axis=1)
    hi = sets.shape[1] - 1 - sets[:, ::-1].argmax(axis=1)
    return lo, hi


def set_summary(sets: np.ndarray, y_true: np.ndarray) -> dict[str, float]:
    """Coverage (overall and per true grade), mean size, singleton and range shares.

    Returns:
        ``coverage``, ``coverage_g{k}`` for every grade (NaN where no film has it),
        ``mean_size``, ``singleton_share``, ``range_share`` (sets with no skipped grade),
        ``n_test``.
    """
    y_true = np.asarray(y_true, dtype=np.int64)
    hit = sets[np.arange(y_true.size), y_true]
    sizes = sets.sum(axis=1)
    lo, hi = set_bounds(sets)
    out: dict[str, float] = {
        "n_test": float(y_true.size),
        "coverage": float(hit.mean()) if hit.size else math.nan,
    }
    for g in range(sets.shape[1]):
        mine = y_true == g
        out[f"coverage_g{g}"] = float(hit[mine].mean()) if mine.any() else math.nan
    out["mean_size"] = float(sizes.mean()) if sizes.size else math.nan
    out["singleton_share"] = float((sizes == 1).mean()) if sizes.size else math.nan
    out["range_share"] = float((hi - lo + 1 == sizes).mean()) if sizes.size else math.nan
    return out


def run_sets(
    val: pd.DataFrame,
    test: pd.DataFrame,
    *,
    coverage: float = DEFAULT_COVERAGE,
    scores: tuple[str, ...] = tuple(SCORES),
    per_grade: bool = False,
) -> pd.DataFrame:
    """Each run's sets: thresholds from its validation films, summaries on its test films.

    Args:
        val: `store.runs.selected_probabilities` with ``split="val"`` (``run_id``, ``task``,
            ``method``, ``seed``, ``y_true``, ``p0..``).
        test: the same with ``split="test"``.
        coverage: the nominal coverage.
        scores: names of :data:`SCORES`.
        per_grade: class-conditional thresholds.

    Returns:
        One row per run and score: ``task``, ``method``, ``seed``, ``run_id``, ``score``,
        ``per_grade``, ``target``, ``n_cal``, then :func:`set_summary`'s columns; runs
        without validation films are left out (nothing to calibrate on).
    """
    check_coverage(coverage)
    for name in scores:
        get_score(name)
    rows = []
    val_by_run = dict(tuple(val.groupby("run_id", sort=False))) if len(val) else {}
    for run_id, films in test.groupby("run_id", sort=True):
        cal = val_by_run.get(run_id)
        if cal is None or cal.empty:
            continue
        task = str(films["task"].iloc[0])
        cal_probs, cal_y = task_arrays(cal, task)
        test_probs, test_y = task_arrays(films, task)
        keys = {k: films[k].iloc[0] for k in RUN_KEYS}
        for name in scores:
            limits = calibrate(cal_probs, cal_y, score=name, coverage=coverage, per_grade=per_grade)
            sets = predict_sets(test_probs, limits, score=name)
            summary = set_summary(sets, test_y)
            rows.append(
                {
                    **keys,
                    "run_id": run_id,
                    "score": name,
                    "per_grade": per_grade,
                    "target": coverage,
                    "n_cal": cal_y.size,
                    **summary,
                }
            )
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    return _grade_columns_last(frame)


def _grade_columns_last(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-grade coverage columns after the summary ones, in grade order (NaN beyond a
    task's grades)."""
    grades = sorted(
        (c for c in frame.columns if c.startswith("coverage_g")), key=lambda c: int(c[10:])
    )
    rest = [c for c in frame.columns if c not in grades]
    return frame[rest + grades]


def method_summary(per_run: pd.DataFrame) -> pd.DataFrame:
    """:func:`run_sets`' rows averaged over seeds: one row per task, method and score with
    ``n_seeds`` and the mean coverage, per-grade coverage, size and singleton share."""
    if per_run.empty:
        return per_run
    keys = ["task", "method", "score", "per_grade", "target"]
    values = [c for c in per_run.columns if c.startswith("coverage") or c in _SUMMED]
    grouped = per_run.groupby(keys, sort=False)
    out = grouped[values].mean().reset_index()
    out.insert(len(keys), "n_seeds", grouped.size().to_numpy())
    return out


_SUMMED = ("mean_size", "singleton_share", "range_share")


def range_words(lo: int, hi: int, task: str, coverage: float) -> str:
    """``"likely range KL 2–3 at 90 %"`` (one grade: ``"likely KL 2 at 90 %"``); every grade
    of the task: ``"any grade KL 0–4 at 90 %: the models cannot narrow it"``, so a range that
    excludes nothing is not read as a finding."""
    span = f"{task} {lo}" if lo == hi else f"{task} {lo}–{hi}"
    at = f"at {round(coverage * 100):g} %"
    if lo == 0 and hi == TASK_CLASSES.get(task, hi + 2) - 1:
        return f"any grade {span} {at}: the models cannot narrow it"
    word = "likely" if lo == hi else "likely range"
    return f"{word} {span} {at}"


def ensemble_range(
    probs_per_seed: np.ndarray, thresholds_per_seed: np.ndarray, *, score: str = DEFAULT_SCORE
) -> tuple[int, int]:
    """The range of grades covering every seed's set for one film.

    Each seed's model is calibrated on its own validation films, so each seed's set holds
    the true grade with at least the nominal probability; a range containing all of them
    holds it at least as often. (Averaging the seeds' probabilities and calibrating on
    pooled validation films would not be valid: a film in one seed's validation split may
    be in another seed's training split.)

    Args:
        probs_per_seed: ``(S, J)`` one film's probabilities from each seed's model.
        thresholds_per_seed: ``(S, J)`` each seed's thresholds (:func:`calibrate`).
        score: a name of :data:`SCORES`.
    """
    los, his = [], []
    for probs, limits in zip(probs_per_seed, thresholds_per_seed, strict=True):
        lo, hi = set_bounds(predict_sets(probs[None, :], limits, score=score))
        los.append(int(lo[0]))
        his.append(int(hi[0]))
    return min(los), max(his)


def referee_summary(draws: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """The phantom referee's verdict on each score (`engine.referee.sets`).

    Each dataset's coverage is its mean over seeds; the datasets are independent draws, so
    the mean over them has a t interval (Monte-Carlo error of the referee, not of a study).

    Args:
        draws: `engine.referee.sets.run_sets_referee`'s rows.
        level: the interval's level.

    Returns:
        One row per task, method, score and threshold kind: ``datasets``, ``target``,
        ``coverage`` with ``mc_low``/``mc_high``, ``true_coverage``, ``mean_size``,
        ``singleton_share``, ``min_grade_coverage`` (the lowest per-grade mean) and
        ``coverage_g{k}`` per grade (each the mean over datasets), and ``holds`` (the
        interval reaches the target).
    """
    # Here, not at the top: Grade a film and the kiosk read this module for a film's range
    # and need no scipy.stats (~0.5 s to import on a busy 2-core machine).
    from scipy import stats

    keys = ["task", "method", "score", "per_grade", "target"]
    values = [c for c in draws.columns if c.startswith("coverage")] + [
        "true_coverage",
        "mean_size",
        "singleton_share",
    ]
    per_dataset = draws.groupby([*keys, "dataset"], sort=False)[values].mean().reset_index()
    rows = []
    for key, part in per_dataset.groupby(keys, sort=False):
        k = len(part)
        mean = float(part["coverage"].mean())
        half = (
            float(stats.t.ppf(0.5 + level / 2, k - 1) * part["coverage"].std(ddof=1) / math.sqrt(k))
            if k > 1
            else math.nan
        )
        grades = part[[c for c in values if c.startswith("coverage_g")]].mean()
        rows.append(
            {
                **dict(zip(keys, key, strict=True)),
                "datasets": k,
                "coverage": mean,
                "mc_low": mean - half,
                "mc_high": mean + half,
                "true_coverage": float(part["true_coverage"].mean()),
                "mean_size": float(part["mean_size"].mean()),
                "singleton_share": float(part["singleton_share"].mean()),
                "min_grade_coverage": float(grades.min()),
                **grades.to_dict(),
                "holds": bool(mean + half >= key[-1]) if k > 1 else False,
            }
        )
    return pd.DataFrame(rows)
