"""The arithmetic of the probability metrics: per film, then per run (pure numpy).

The metric registry (`engine.analysis.metrics`) names these scores and points at the per-run
functions here; `engine.analysis.probability_metrics` reads the stored probabilities into
arrays, calls the registry and draws the reliability tables. This module knows no metric
names, so both can import it without importing each other.

Binning (ECE and the reliability diagrams): :data:`N_BINS` = 10 equal-width bins on [0, 1]
with edges 0, 0.1, …, 1, exactly as scikit-learn's ``calibration_curve(strategy="uniform")``:
the first bin is [0, 0.1], the others (low, high], so a value on an inner edge goes to the
lower bin. ECE is ``sum_b (n_b / N) |accuracy_b − confidence_b|`` over non-empty bins (Guo et
al. 2017).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.vocab import TASK_CLASSES

N_BINS = 10
UNIMODAL_TOLERANCE = 1e-6


# --------------------------------------------------------------------------------------------
# A stored probability frame as arrays
# --------------------------------------------------------------------------------------------


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
# Per film ((N, J) probabilities, (N,) grades)
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
# Per run: every registered probability metric is a function of one `ProbabilityBatch`
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbabilityBatch:
    """The films of many runs of one task, stacked, with what their scores need.

    Attributes:
        probs: ``(N, J)`` predicted probabilities, rows summing to one.
        y_true: ``(N,)`` true grades in ``0 .. J-1``.
        run_index: ``(N,)`` the run of each film, ``0 .. n_runs-1``.
        n_runs: number of runs ``R``; a run with no films scores ``nan``.
        n_bins: calibration bins.
        tolerance: ties for :func:`is_unimodal`.
    """

    probs: np.ndarray
    y_true: np.ndarray
    run_index: np.ndarray
    n_runs: int
    n_bins: int = N_BINS
    tolerance: float = UNIMODAL_TOLERANCE

    @classmethod
    def one_run(cls, probs: np.ndarray, y_true: np.ndarray) -> ProbabilityBatch:
        """One run's films (for a test or a single model)."""
        y = np.asarray(y_true, dtype=np.int64)
        return cls(np.asarray(probs, dtype=np.float64), y, np.zeros_like(y), 1)

    @property
    def n_films(self) -> np.ndarray:
        """``(R,)`` films per run, as floats."""
        return np.bincount(self.run_index, minlength=self.n_runs).astype(np.float64)

    @property
    def predicted(self) -> np.ndarray:
        """``(N,)`` the predicted grade: the argmax (the first on a tie), as stored."""
        return self.probs.argmax(axis=1)

    def run_mean(self, per_film: np.ndarray) -> np.ndarray:
        """``(R,)`` the mean of a per-film quantity over each run's films."""
        total = np.bincount(self.run_index, weights=per_film, minlength=self.n_runs)
        with np.errstate(invalid="ignore", divide="ignore"):
            return total / self.n_films

    def ece(self, predicted: np.ndarray, observed: np.ndarray) -> np.ndarray:
        """``(R,)`` ECE of predicted probabilities of an event against whether it happened.

        ``(n_b / N) |acc_b − conf_b|`` equals ``|Σ_b observed − Σ_b predicted| / N``, so the
        per-bin sums are all that is needed: one bincount each over (run, bin) cells.
        """
        cell = self.run_index * self.n_bins + bin_index(predicted, self.n_bins)
        size = self.n_runs * self.n_bins
        hits = np.bincount(cell, weights=observed.astype(np.float64), minlength=size)
        gap = hits - np.bincount(cell, weights=predicted, minlength=size)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.abs(gap).reshape(self.n_runs, self.n_bins).sum(axis=1) / self.n_films


@dataclass(frozen=True)
class CalibratedBatch:
    """The films of many runs of one task, each run's validation films beside its test
    films: the input of a metric that calibrates on the first and scores the second (a
    `engine.analysis.metric_base.FROM_CALIBRATION` metric, e.g. the conformal set size).

    Attributes:
        calibration: each run's validation films (``run_index`` as in ``test``).
        test: each run's test films; ``n_runs`` is the same in both.
    """

    calibration: ProbabilityBatch
    test: ProbabilityBatch

    def __post_init__(self) -> None:
        if self.calibration.n_runs != self.test.n_runs:
            raise ValueError(
                f"calibration has {self.calibration.n_runs} runs and test {self.test.n_runs}"
            )

    @classmethod
    def one_run(
        cls, cal_probs: np.ndarray, cal_y: np.ndarray, probs: np.ndarray, y_true: np.ndarray
    ) -> CalibratedBatch:
        """One run's validation and test films."""
        calibration = ProbabilityBatch.one_run(cal_probs, cal_y)
        return cls(calibration, ProbabilityBatch.one_run(probs, y_true))

    @property
    def n_runs(self) -> int:
        """Runs ``R``."""
        return self.test.n_runs

    def run_films(self, run: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Run ``run``'s validation probabilities and grades, then its test ones."""
        cal, test = self.calibration, self.test
        mine, theirs = cal.run_index == run, test.run_index == run
        return cal.probs[mine], cal.y_true[mine], test.probs[theirs], test.y_true[theirs]


def ranked_probability_score(batch: ProbabilityBatch) -> np.ndarray:
    """``(R,)`` mean RPS per run (dlordinal's ``ranked_probability_score``)."""
    return batch.run_mean(rps_per_film(batch.probs, batch.y_true))


def top_label_ece(batch: ProbabilityBatch) -> np.ndarray:
    """``(R,)`` top-label ECE: the predicted grade's probability against its being right."""
    probs = batch.probs
    return batch.ece(probs.max(axis=1), batch.predicted == batch.y_true)


def cumulative_ece(batch: ProbabilityBatch) -> np.ndarray:
    """``(R,)`` the mean over ``k = 0..J-2`` of the ECE of ``P(grade > k)``."""
    cumulative = exceedance(batch.probs)
    per_threshold = [
        batch.ece(cumulative[:, k], batch.y_true > k) for k in range(cumulative.shape[1])
    ]
    return np.mean(per_threshold, axis=0)


def unimodal_share(batch: ProbabilityBatch) -> np.ndarray:
    """``(R,)`` share of films whose predicted distribution has a single peak."""
    return batch.run_mean(is_unimodal(batch.probs, batch.tolerance).astype(np.float64))


def within_one_grade(batch: ProbabilityBatch) -> np.ndarray:
    """``(R,)`` share of films predicted at most one grade from the true one."""
    return batch.run_mean((np.abs(batch.predicted - batch.y_true) <= 1).astype(np.float64))
