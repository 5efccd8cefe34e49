"""From the phantom referee's per-seed results to samples and truth: per dataset and pair,
the per-seed differences on the seeds' own test splits and on the fresh films
(`pair_samples`), and the true expected difference of each pair, leave-one-out
(`true_differences`). `engine.analysis.referee` re-exports these names.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from engine.analysis import paired
from engine.analysis.referee_rules import Comparison, Interval, PairSample

#: Columns of the per-run results table (`engine.referee_runs`): one row per dataset, seed and
#: method, with ``test_<metric>`` (the seed's own test split) and ``fresh_<metric>`` columns.
DRAW_KEYS: tuple[str, ...] = ("dataset", "seed", "method")
#: Columns of the per-run results that say which split and which initialisation each seed
#: drew (`engine.seeds`); results from before they were recorded lack them.
SEED_FACTORS: tuple[str, str] = ("split_seed", "init_seed")


def test_column(metric: str) -> str:
    """The column of ``metric`` on a seed's own test split."""
    return f"test_{metric}"


def fresh_column(metric: str) -> str:
    """The column of ``metric`` on the fresh test set."""
    return f"fresh_{metric}"


def pair_samples(
    draws: pd.DataFrame,
    comparisons: Sequence[Comparison],
    metric: str,
    *,
    boot: pd.DataFrame | None = None,
    rope: float = paired.DEFAULT_ROPE,
) -> list[PairSample]:
    """Every (dataset, pair) of the results.

    Args:
        draws: one row per dataset, seed and method: ``dataset``, ``seed``, ``method``,
            ``n_test``, ``n_fit`` (films to fit and select), :func:`test_column` and
            :func:`fresh_column` of ``metric``, and where recorded ``split_seed`` and
            ``init_seed`` (:data:`SEED_FACTORS`: a factorial design's factors).
        comparisons: the pairs.
        metric: the metric compared.
        boot: ``dataset``, ``method_a``, ``method_b``, ``boot_ci_low``, ``boot_ci_high``
            (either orientation of a pair; the other is flipped); None: no bootstrap.
        rope: the Bayesian test's region of practical equivalence.

    Returns:
        Samples ordered by pair, then dataset. A dataset missing a method has no sample of
        its pairs; a seed missing either method is left out of that pair's differences.
    """
    missing = [c for c in (test_column(metric), fresh_column(metric)) if c not in draws]
    if missing:
        raise ValueError(f"the results have no {missing[0]} column (metric {metric!r})")
    lower = metric in paired.LOWER_BETTER
    out = []
    for comparison in comparisons:
        for dataset, part in draws.groupby("dataset", sort=True):
            sample = _sample(part, int(dataset), comparison, metric, boot, rope, lower)
            if sample is not None:
                out.append(sample)
    return out


def _sample(
    part: pd.DataFrame,
    dataset: int,
    comparison: Comparison,
    metric: str,
    boot: pd.DataFrame | None,
    rope: float,
    lower: bool,
) -> PairSample | None:
    a, b = comparison.method_a, comparison.method_b
    if not {a, b} <= set(part["method"]):
        return None
    wide = part.pivot_table(
        index="seed",
        columns="method",
        values=[test_column(metric), fresh_column(metric)],
        aggfunc="first",
    ).dropna()
    diffs = (wide[test_column(metric)][a] - wide[test_column(metric)][b]).to_numpy(np.float64)
    fresh = (wide[fresh_column(metric)][a] - wide[fresh_column(metric)][b]).to_numpy(np.float64)
    sizes = part[part["method"] == a]
    ratio = float(sizes["n_test"].mean() / sizes["n_fit"].mean())
    splits, inits = _seed_factors(sizes, wide.index)
    return PairSample(
        dataset=dataset,
        comparison=comparison,
        diffs=diffs,
        fresh_diffs=fresh,
        ratio=ratio,
        boot=_boot_of(boot, dataset, a, b),
        rope=rope,
        lower_is_better=lower,
        split_seeds=splits,
        init_seeds=inits,
    )


def _seed_factors(
    rows: pd.DataFrame, seeds: pd.Index
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The split seed and init seed of each paired seed, in ``seeds``' order; (None, None)
    for results from before the referee recorded them (every seed drew both: independent)."""
    if not set(SEED_FACTORS) <= set(rows.columns):
        return None, None
    factors = rows.drop_duplicates("seed").set_index("seed").reindex(seeds)
    split, init = (factors[name].to_numpy() for name in SEED_FACTORS)
    return split, init


def _boot_of(boot: pd.DataFrame | None, dataset: int, a: str, b: str) -> Interval:
    if boot is None or boot.empty:
        return math.nan, math.nan
    mine = boot[boot["dataset"] == dataset]
    same = mine[(mine["method_a"] == a) & (mine["method_b"] == b)]
    if len(same):
        return float(same["boot_ci_low"].iloc[0]), float(same["boot_ci_high"].iloc[0])
    flipped = mine[(mine["method_a"] == b) & (mine["method_b"] == a)]
    if len(flipped):
        return -float(flipped["boot_ci_high"].iloc[0]), -float(flipped["boot_ci_low"].iloc[0])
    return math.nan, math.nan


def true_differences(samples: Sequence[PairSample]) -> pd.DataFrame:
    """The true expected difference of every pair, and the leave-one-out truth each dataset's
    interval is scored against.

    Returns:
        One row per sample: ``pair``, ``dataset``, ``truth`` (the pair's mean fresh difference
        over every dataset and seed, a null pair's too), ``truth_loo`` (the same mean without
        this dataset), ``truth_se`` (the sd of the datasets' mean fresh
        differences over ``sqrt(K)``: how well ``K`` datasets pin the truth down; the fresh
        set's own sampling error, common to all, is not in it).
    """
    rows = []
    for pair, group in by_pair(samples).items():
        means = np.array([np.nanmean(s.fresh_diffs) for s in group])
        sums = np.array([np.nansum(s.fresh_diffs) for s in group])
        counts = np.array([np.isfinite(s.fresh_diffs).sum() for s in group])
        total = sums.sum() / counts.sum()
        se = float(means.std(ddof=1) / math.sqrt(means.size)) if means.size > 1 else math.nan
        for i, sample in enumerate(group):
            others = counts.sum() - counts[i]
            loo = (sums.sum() - sums[i]) / others if others else math.nan
            # A null pair's truth is estimated like any other, not assumed 0: its twins share
            # the split, so only independent streams make its expectation 0.
            rows.append(
                {
                    "pair": pair,
                    "dataset": sample.dataset,
                    "truth": float(total),
                    "truth_loo": float(loo),
                    "truth_se": se,
                    "fresh_mean": float(total),
                }
            )
    return pd.DataFrame(rows)


def by_pair(samples: Sequence[PairSample]) -> dict[str, list[PairSample]]:
    """The samples grouped by pair (its name), in order."""
    groups: dict[str, list[PairSample]] = {}
    for sample in samples:
        groups.setdefault(sample.comparison.name, []).append(sample)
    return groups
