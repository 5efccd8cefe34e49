"""Calibration with its uncertainty: the top-label ECE's bootstrap interval, the noise floor a
perfectly calibrated model would show on the same films, and temperature scaling fitted on
each run's stored validation probabilities (no retraining).

ECE is biased upwards on finite samples: even a model whose probabilities are exactly right
scores above 0 because each bin's accuracy is estimated from a few hundred films. The floor
(:func:`ece_uncertainty`) simulates that case for the very films and confidences of each run
(labels drawn from the model's own probabilities: the predicted grade is right with
probability equal to its confidence) so a method's ECE can be read against it: differences
below the floor's spread are noise.

ECE here is `probability_metrics`'s top-label ECE (10 equal-width bins), per run, then
averaged over seeds as the Probabilities tab's table does; the reliability diagram
(`engine.analysis.probability_metrics.reliability_table`) pools the films of all seeds instead
(:data:`POOLED_NOTE`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from engine.analysis import probability_metrics as pm
from engine.analysis.metrics import ECE, RPS
from engine.vocab import TASK_CLASSES

LEVEL = 0.95
POOLED_NOTE = (
    "The reliability diagram pools the test films of every seed of a method; the ECE in the "
    "table is computed per seed (per run) and averaged over seeds, so the two need not agree."
)
FLOOR_NOTE = (
    "Floor: the ECE a perfectly calibrated model would score on the same films, simulated by "
    "drawing each film's outcome from the model's own probabilities; ECE differences smaller "
    "than the floor's spread are noise."
)
# log-temperature search interval: T between e^-3 ≈ 0.05 and e^3 ≈ 20.
ECE_CI_KIND = (
    "95% bootstrap interval of the mean ECE over seeds: films resampled within each run, "
    "percentiles shifted back by the bootstrap bias"
)
_LOG_T_BOUNDS = (-3.0, 3.0)
_TINY = 1e-12


def ece_uncertainty(
    frame: pd.DataFrame,
    *,
    n_boot: int = 100,
    n_floor: int = 100,
    level: float = LEVEL,
    n_bins: int = pm.N_BINS,
    seed: int = 0,
) -> pd.DataFrame:
    """Top-label ECE per method with a film-bootstrap interval and the calibrated floor.

    Args:
        frame: one row per (run, test film) with ``run_id``, ``task``, ``method``, ``seed``,
            ``y_true``, ``p0..`` (`store.runs.selected_probabilities`).
        n_boot: bootstrap replicates (films resampled within each run).
        n_floor: simulated perfectly calibrated replicates.
        level: interval level.
        n_bins: calibration bins.
        seed: random seed.

    Returns:
        One row per task and method: ``n_seeds``, ``ece`` (mean over seeds), ``ci_low``,
        ``ci_high`` (percentile interval of the mean over seeds, films resampled),
        ``floor`` (mean calibrated ECE), ``floor_high`` (its upper ``level`` quantile),
        ``excess`` (``ece − floor``).
    """
    rng = np.random.default_rng(seed)
    per_run = []
    for task, rows in frame.groupby("task", sort=True):
        probs, y_true = pm.task_arrays(rows, str(task))
        run_codes, run_ids = pd.factorize(rows["run_id"])
        confidence = probs.max(axis=1)
        correct = (probs.argmax(axis=1) == y_true).astype(np.float64)
        bins = pm.bin_index(confidence, n_bins)
        keys = rows.groupby("run_id", sort=False)[["method", "seed"]].first()
        for code, run_id in enumerate(run_ids):
            mine = run_codes == code
            boot, floor, ece = _run_replicates(
                confidence[mine], correct[mine], bins[mine], n_bins, n_boot, n_floor, rng
            )
            per_run.append(
                {
                    "task": task,
                    "method": keys.loc[run_id, "method"],
                    "seed": keys.loc[run_id, "seed"],
                    ECE: ece,
                    "boot": boot,
                    "floor": floor,
                }
            )
    runs = pd.DataFrame(per_run)
    tail = (1 - level) / 2
    rows_out = []
    for (task, method), part in runs.groupby(["task", "method"], sort=False):
        boot = np.mean(np.stack(part["boot"].to_list()), axis=0)
        floor = np.mean(np.stack(part["floor"].to_list()), axis=0)
        ece = float(part[ECE].mean())
        # Resampling films inflates a plug-in ECE (each bin's gap gains noise), so the
        # percentile interval is shifted back by the bootstrap's own bias.
        bias = float(boot.mean()) - ece
        rows_out.append(
            {
                "task": task,
                "method": method,
                "n_seeds": len(part),
                ECE: ece,
                "ci_low": float(np.quantile(boot, tail)) - bias,
                "ci_high": float(np.quantile(boot, 1 - tail)) - bias,
                "floor": float(floor.mean()),
                "floor_high": float(np.quantile(floor, level)),
                "excess": ece - float(floor.mean()),
            }
        )
    return pd.DataFrame(rows_out)


def _run_replicates(
    confidence: np.ndarray,
    correct: np.ndarray,
    bins: np.ndarray,
    n_bins: int,
    n_boot: int,
    n_floor: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, float]:
    """One run's bootstrap ECEs, calibrated-floor ECEs and observed ECE.

    ECE is ``Σ_b |Σ_{i in b} (correct_i − confidence_i)| / N``, so each replicate needs only
    per-bin sums: a (replicates × films) @ (films × bins) product.
    """
    n = confidence.size
    onehot = np.zeros((n, n_bins))
    onehot[np.arange(n), bins] = 1.0
    gap = correct - confidence
    ece = float(np.abs(gap @ onehot).sum() / n)
    # Resampled films: per replicate, per-bin sums of the drawn films' gaps in one bincount.
    drawn = rng.integers(0, n, size=(n_boot, n))
    cells = (np.arange(n_boot)[:, None] * n_bins + bins[drawn]).ravel()
    sums = np.bincount(cells, weights=gap[drawn].ravel(), minlength=n_boot * n_bins)
    boot = np.abs(sums.reshape(n_boot, n_bins)).sum(axis=1) / n
    outcomes = (rng.random((n_floor, n)) < confidence).astype(np.float64)
    floor = np.abs((outcomes - confidence) @ onehot).sum(axis=1) / n
    return boot, floor, ece


def scaled(probs: np.ndarray, temperature: float | np.ndarray) -> np.ndarray:
    """Probabilities with temperature ``T``: ``softmax(log p / T)`` (the argmax is kept);
    ``temperature`` is one number or one per film."""
    t = np.asarray(temperature, dtype=np.float64)
    logits = np.log(np.clip(probs, _TINY, None)) / (t[:, None] if t.ndim else t)
    logits -= logits.max(axis=1, keepdims=True)
    out = np.exp(logits)
    return out / out.sum(axis=1, keepdims=True)


def fit_temperature(probs: np.ndarray, y_true: np.ndarray) -> float:
    """The temperature minimising the validation negative log-likelihood (Guo et al. 2017),
    searched over ``log T`` in [−3, 3]; 1 for an empty validation set."""
    if y_true.size == 0:
        return 1.0
    rows = np.arange(y_true.size)

    def nll(log_t: float) -> float:
        chosen = scaled(probs, math.exp(log_t))[rows, y_true]
        return float(-np.log(np.clip(chosen, _TINY, None)).mean())

    best = minimize_scalar(nll, bounds=_LOG_T_BOUNDS, method="bounded", options={"xatol": 1e-4})
    return float(math.exp(best.x))


def temperature_scaling(val: pd.DataFrame, test: pd.DataFrame) -> pd.DataFrame:
    """Fit a temperature on each run's validation films and score its test films before and
    after.

    Args:
        val: `store.runs.selected_probabilities` with ``split="val"``.
        test: the same with ``split="test"``.

    Returns:
        One row per run: ``run_id``, ``task``, ``method``, ``seed``, ``temperature``,
        ``ece_before``, ``ece_after``, ``rps_before``, ``rps_after`` (the test set's
        top-label ECE and RPS, `engine.analysis.probability_metrics`).
    """
    temperatures = {}
    for (task, run_id), rows in val.groupby(["task", "run_id"], sort=False):
        probs, y_true = pm.task_arrays(rows, str(task))
        temperatures[run_id] = fit_temperature(probs, y_true)
    after_parts = []
    for task, rows in test.groupby("task", sort=False):
        columns = pm.probability_columns(rows)[: TASK_CLASSES[str(task)]]
        per_film = rows["run_id"].map(temperatures).fillna(1.0).to_numpy()
        new = scaled(rows[columns].to_numpy(np.float64), per_film)
        after_parts.append(rows.assign(**dict(zip(columns, new.T, strict=True))))
    keys = ["run_id", "task", "method", "seed"]
    before = pm.per_run_probability_metrics(test[[*keys, "y_true", *pm.probability_columns(test)]])
    after = pm.per_run_probability_metrics(
        pd.concat(after_parts)[[*keys, "y_true", *pm.probability_columns(test)]]
    )
    table = before[[*keys, ECE, RPS]].merge(
        after[["run_id", ECE, RPS]], on="run_id", suffixes=("_before", "_after")
    )
    table.insert(4, "temperature", table["run_id"].map(temperatures).fillna(1.0))
    changes = [f"{m}_{when}" for m in (ECE, RPS) for when in ("before", "after")]
    return table[[*keys, "temperature", *changes]]
