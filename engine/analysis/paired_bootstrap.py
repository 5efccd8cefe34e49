"""The film-sampling (hierarchical) bootstrap of every pair's mean difference: seeds, then
the patients of each drawn seed's test set, the metric recomputed on the drawn films for both
methods at once. `engine.analysis.paired` re-exports it; docs/statistics.md says why it is
no interval for the comparison.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from engine.analysis import compare
from engine.analysis.metrics import METRICS, metrics_from_confusion
from engine.analysis.paired_tests import LEVEL
from engine.methods import order_methods
from engine.vocab import TASK_CLASSES


def hierarchical_bootstrap(
    films: pd.DataFrame,
    *,
    metrics: Sequence[str] = METRICS,
    n_boot: int = 1000,
    level: float = LEVEL,
    seed: int = 0,
) -> pd.DataFrame:
    """Bootstrap CIs of every pair's mean difference: seeds, then patients within a seed.

    Each replicate draws ``S`` seeds with replacement from the ``S`` seeds; for each drawn
    seed it draws that seed's test patients with replacement (all of a patient's films come
    along) and recomputes every method's metric on the drawn films, the same draw for every
    method, so the difference stays paired. The replicate's statistic is the mean over its
    drawn seeds of ``metric(a) − metric(b)``.

    Args:
        films: one row per selected run and test film: ``task``, ``method``, ``seed``,
            ``patient_id``, ``y_true``, ``y_pred`` (`store.analysis.selected_test_films`).
        metrics: metrics of `engine.analysis.metrics.METRICS` to bootstrap.
        n_boot: replicates.
        level: confidence level of the percentile interval.
        seed: random seed, so the interval is reproducible.

    Returns:
        One row per task × metric × pair (as `engine.analysis.paired.paired_table` orders
        them): ``task``, ``metric``, ``method_a``, ``method_b``, ``boot_ci_low``, ``boot_ci_high``,
        ``boot_sd`` (sd of the replicates) and ``within_seed_sd`` (the mean over seeds of
        the patient-bootstrap sd of one seed's difference: how much a single test set's
        films alone move the difference).
    """
    rng = np.random.default_rng(seed)
    rows = []
    for task in compare.task_order(films["task"].unique()):
        part = films[films["task"] == task]
        methods = order_methods(part["method"].unique())
        values, within = _bootstrap_task(part, str(task), methods, metrics, n_boot, rng)
        tail = (1 - level) / 2
        for metric in metrics:
            for a, b in compare.method_pairs(methods):
                diff = values[metric][a] - values[metric][b]  # (B, S)
                replicate = np.nanmean(diff, axis=1)
                low, high = np.nanquantile(replicate, [tail, 1 - tail])
                rows.append(
                    {
                        "task": task,
                        "metric": metric,
                        "method_a": a,
                        "method_b": b,
                        "boot_ci_low": float(low),
                        "boot_ci_high": float(high),
                        "boot_sd": float(np.nanstd(replicate, ddof=1)),
                        "within_seed_sd": float(
                            np.nanmean(_within_sd(within[metric][a], within[metric][b]))
                        ),
                    }
                )
    return pd.DataFrame(rows)


def _within_sd(a: list[np.ndarray], b: list[np.ndarray]) -> np.ndarray:
    """Per seed, the sd over that seed's patient draws of ``a − b``."""
    return np.array(
        [np.nanstd(x - y, ddof=1) if x.size > 1 else np.nan for x, y in zip(a, b, strict=True)]
    )


def _bootstrap_task(
    part: pd.DataFrame,
    task: str,
    methods: list[str],
    metrics: Sequence[str],
    n_boot: int,
    rng: np.random.Generator,
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict[str, list[np.ndarray]]]]:
    """Metric values of every (replicate, drawn seed) per method, and per seed the values of
    its own patient draws."""
    n_classes = TASK_CLASSES[task]
    seeds = np.sort(part["seed"].unique())
    draws = rng.integers(0, seeds.size, size=(n_boot, seeds.size))
    values = {
        metric: {m: np.full((n_boot, seeds.size), np.nan) for m in methods} for metric in metrics
    }
    within: dict[str, dict[str, list[np.ndarray]]] = {
        metric: {m: [] for m in methods} for metric in metrics
    }
    by_seed = dict(tuple(part.groupby("seed", sort=True)))
    for s_index, s in enumerate(seeds):
        rows = by_seed[s]
        where = np.nonzero(draws == s_index)
        patient_codes, patients = pd.factorize(rows["patient_id"])
        n_patients = patients.size
        weights = rng.multinomial(
            n_patients, np.full(n_patients, 1.0 / n_patients), size=max(len(where[0]), 2)
        ).astype(np.float64)
        cell = rows["y_true"].to_numpy(np.int64) * n_classes + rows["y_pred"].to_numpy(np.int64)
        method_of = rows["method"].to_numpy()
        for m in methods:
            mine = method_of == m
            if not mine.any():
                for metric in metrics:
                    within[metric][m].append(np.full(weights.shape[0], np.nan))
                continue
            per_patient = np.zeros((n_patients, n_classes * n_classes))
            np.add.at(per_patient, (patient_codes[mine], cell[mine]), 1.0)
            cms = (weights @ per_patient).reshape(-1, n_classes, n_classes)
            scored = metrics_from_confusion(cms)
            for metric in metrics:
                got = scored[metric]
                values[metric][m][where] = got[: len(where[0])]
                within[metric][m].append(got)
    return values, within
