"""The phantom as referee: how often each interval covers the true difference, and how often
each test calls a difference where there is none.

One dataset cannot say which between-seed correlation ρ the corrected resampled t-test should
assume (Bengio & Grandvalet 2004). The phantom can draw as many datasets as asked, so the
intervals can be checked against the truth (`engine.referee_runs` trains the design on ``K``
independent phantom datasets, ``S`` seeds each, and scores every selected model on one large
fresh test set from the same generator). This module is the arithmetic over its results:

* :func:`pair_samples`: per dataset and pair of methods, the ``S`` per-seed differences on
  the dataset's own test splits (what a study sees), the same models' differences on the
  fresh films, the split ratio ``n_test / n_train`` and the film-sampling bootstrap interval;
* :func:`true_differences`: the true expected difference of a pair, the mean of the fresh
  differences over every dataset and seed; the interval of dataset ``k`` is checked against
  the mean over the *other* datasets (leave-one-out), so the truth it is scored on owes
  nothing to its own draws. A null pair (one method trained under two names with different
  random streams) has a true difference of exactly 0;
* :data:`INTERVALS` and :func:`coverage`: each interval's empirical coverage of the truth
  over the ``K`` datasets, with its Monte-Carlo standard error ``sqrt(c (1 − c) / K)``;
* :data:`TESTS` and :func:`rejections`: each test's rejection rate: its type-I error on a
  null pair, its power on a real pair;
* :func:`realised_correlation`: the between-seed correlation ρ the datasets actually show
  (the intraclass correlation of the per-seed differences, one-way random effects), beside
  the ρ = r / (1 + r) the corrected test assumes from ``r = n_test / n_train``;
* :func:`recommend`: the interval the table supports.

The intervals and tests are `engine.analysis.paired`'s, called, not restated. To add one (the
factorial design's interval, once a design separates split and initialisation seeds), append
an :class:`IntervalRule` to :data:`INTERVALS` (and a :class:`TestRule` to :data:`TESTS`):
its function gets a :class:`PairSample` (extend it with the columns the design adds) and the
level, and every table, the command's CSV and the page pick it up.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as sps

from engine.analysis import paired

LEVEL: float = paired.LEVEL
ALPHA: float = paired.ALPHA


@dataclass(frozen=True)
class Comparison:
    """A pair of methods compared as ``a − b``; ``null`` when ``b`` is ``a`` under another
    name (the same training, other random streams: the true difference is 0)."""

    method_a: str
    method_b: str
    null: bool = False

    @property
    def name(self) -> str:
        """``"a − b"``, as the tables name the pair."""
        return f"{self.method_a} − {self.method_b}"


@dataclass(frozen=True)
class PairSample:
    """What one dataset says about one pair.

    Attributes:
        dataset: the dataset's index ``k``.
        comparison: the pair.
        diffs: ``(S,)`` per-seed differences ``a − b`` on each seed's own test split, seeds in
            order (what a study of this dataset sees).
        fresh_diffs: ``(S,)`` the same selected models' differences on the fresh test set.
        ratio: ``n_test / n_train`` of the dataset's splits (mean test films over mean films
            used to fit and select, `paired.test_train_ratios`).
        boot: the film-sampling bootstrap interval (`paired.hierarchical_bootstrap`); NaNs
            when it was not run.
        rope: the region of practical equivalence of the Bayesian test.
        lower_is_better: the metric's direction (for "a better").
    """

    dataset: int
    comparison: Comparison
    diffs: np.ndarray
    fresh_diffs: np.ndarray
    ratio: float
    boot: tuple[float, float] = (math.nan, math.nan)
    rope: float = paired.DEFAULT_ROPE
    lower_is_better: bool = True
    corrected: paired.CorrectedT = field(init=False, repr=False, compare=False)
    naive: paired.CorrectedT = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Each interval and test below reads these; computed once per sample.
        object.__setattr__(self, "corrected", paired.corrected_resampled_t(self.diffs, self.ratio))
        object.__setattr__(self, "naive", paired.corrected_resampled_t(self.diffs, 0.0))


Interval = tuple[float, float]


@dataclass(frozen=True)
class IntervalRule:
    """One interval for the mean difference of a pair.

    Attributes:
        key: its column name (``naive_t``).
        label: as a reader names it.
        assumes: what it assumes, in one line.
        compute: ``(sample, level) -> (low, high)``.
    """

    key: str
    label: str
    assumes: str
    compute: Callable[[PairSample, float], Interval]


@dataclass(frozen=True)
class TestRule:
    """One test of "no difference" between a pair.

    Attributes:
        key: its column name.
        label: as a reader names it.
        rejects: ``(sample, alpha) -> 1.0`` when it declares a difference, ``0.0`` when not,
            NaN when it cannot say (fewer than 2 seeds).
    """

    key: str
    label: str
    rejects: Callable[[PairSample, float], float]


def _t_interval(test: paired.CorrectedT, level: float) -> Interval:
    """The interval of a `paired.CorrectedT` at ``level`` (its own is at `paired.LEVEL`)."""
    if test.n < 2 or not math.isfinite(test.se):
        return math.nan, math.nan
    half = float(sps.t.ppf(0.5 + level / 2, test.df)) * test.se
    return test.mean - half, test.mean + half


def _naive_interval(sample: PairSample, level: float) -> Interval:
    return _t_interval(sample.naive, level)


def _corrected_interval(sample: PairSample, level: float) -> Interval:
    return _t_interval(sample.corrected, level)


def _bayes_interval(sample: PairSample, level: float) -> Interval:
    """The equal-tailed credible interval of the Bayesian correlated t-test's posterior:
    Student t on ``n − 1`` df at the mean, scale the corrected standard error, as
    `paired.bayes_correlated_t` hands it to baycomp's ``Posterior``. Under its flat prior it
    is the corrected interval, number for number: the row shows that the Bayesian verdict
    inherits the corrected test's ρ."""
    test = sample.corrected
    if test.n < 2 or not math.isfinite(test.se):
        return math.nan, math.nan
    if test.se == 0:
        return test.mean, test.mean
    low, high = sps.t.interval(level, test.df, loc=test.mean, scale=test.se)
    return float(low), float(high)


def _bootstrap_interval(sample: PairSample, level: float) -> Interval:
    """The hierarchical bootstrap's percentile interval as it was computed (at the level the
    run used; see `engine.referee_runs`)."""
    return sample.boot


INTERVALS: tuple[IntervalRule, ...] = (
    IntervalRule(
        "naive_t",
        "naive paired t",
        "seeds independent: mean ± t(n−1) · s/√n",
        _naive_interval,
    ),
    IntervalRule(
        "corrected_t",
        "corrected t (Nadeau-Bengio)",
        "between-seed correlation ρ = n_test/n: mean ± t(n−1) · √((1/n + n_test/n_train) s²)",
        _corrected_interval,
    ),
    IntervalRule(
        "bayes_t",
        "Bayesian correlated t (credible)",
        "flat prior, the corrected variance (so the same ρ)",
        _bayes_interval,
    ),
    IntervalRule(
        "hier_bootstrap",
        "film-sampling bootstrap",
        "seeds, then test patients, resampled as if independent",
        _bootstrap_interval,
    ),
)


def _p_below(p: float, alpha: float) -> float:
    return math.nan if not math.isfinite(p) else float(p < alpha)


def _naive_rejects(sample: PairSample, alpha: float) -> float:
    return _p_below(sample.naive.p, alpha)


def _corrected_rejects(sample: PairSample, alpha: float) -> float:
    return _p_below(sample.corrected.p, alpha)


def _wilcoxon_rejects(sample: PairSample, alpha: float) -> float:
    d = sample.diffs[np.isfinite(sample.diffs)]
    return math.nan if d.size < 2 else _p_below(paired.wilcoxon_exact_p(d), alpha)


def _bootstrap_rejects(sample: PairSample, alpha: float) -> float:
    low, high = sample.boot
    if not (math.isfinite(low) and math.isfinite(high)):
        return math.nan
    return float(low > 0 or high < 0)


@functools.cache
def has_baycomp() -> bool:
    """Whether baycomp is importable: the Bayesian test's probabilities are its ``Posterior``'s
    (`paired.bayes_correlated_t`); without it that test's row is left empty (NaN)."""
    try:
        import baycomp.single  # noqa: F401
    except ImportError:
        return False
    return True


def _bayes_rejects(sample: PairSample, alpha: float) -> float:
    """The Bayesian verdict names a better method (posterior ≥ `paired.BAYES_THRESHOLD` beyond
    the ROPE); ``alpha`` is not used: the rule is the verdict's own. NaN without baycomp."""
    if not has_baycomp():
        return math.nan
    probs = paired.bayes_correlated_t(sample.corrected, sample.rope)
    if not all(math.isfinite(p) for p in probs):
        return math.nan
    verdict = paired.verdict(
        "a", "b", probs, lower_is_better=sample.lower_is_better, threshold=paired.BAYES_THRESHOLD
    )
    return float(verdict not in (paired.EQUIVALENT, paired.INCONCLUSIVE))


TESTS: tuple[TestRule, ...] = (
    TestRule("naive_t", "naive paired t, p < α", _naive_rejects),
    TestRule("corrected_t", "corrected t (Nadeau-Bengio), p < α", _corrected_rejects),
    TestRule("wilcoxon", "Wilcoxon signed-rank (exact), p < α", _wilcoxon_rejects),
    TestRule("hier_bootstrap", "film-sampling bootstrap interval excludes 0", _bootstrap_rejects),
    TestRule("bayes_t", "Bayesian correlated t names a better method", _bayes_rejects),
)


# --------------------------------------------------------------------------------------------
# From per-seed results to samples and truth
# --------------------------------------------------------------------------------------------

#: Columns of the per-run results table (`engine.referee_runs`): one row per dataset, seed and
#: method, with ``test_<metric>`` (the seed's own test split) and ``fresh_<metric>`` columns.
DRAW_KEYS: tuple[str, ...] = ("dataset", "seed", "method")


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
            :func:`fresh_column` of ``metric``.
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
    return PairSample(
        dataset=dataset,
        comparison=comparison,
        diffs=diffs,
        fresh_diffs=fresh,
        ratio=ratio,
        boot=_boot_of(boot, dataset, a, b),
        rope=rope,
        lower_is_better=lower,
    )


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
        over every dataset and seed; 0 for a null pair), ``truth_loo`` (the same mean without
        this dataset; 0 for a null pair), ``truth_se`` (the sd of the datasets' mean fresh
        differences over ``sqrt(K)``: how well ``K`` datasets pin the truth down; the fresh
        set's own sampling error, common to all, is not in it).
    """
    rows = []
    for pair, group in _by_pair(samples).items():
        means = np.array([np.nanmean(s.fresh_diffs) for s in group])
        sums = np.array([np.nansum(s.fresh_diffs) for s in group])
        counts = np.array([np.isfinite(s.fresh_diffs).sum() for s in group])
        total = sums.sum() / counts.sum()
        se = float(means.std(ddof=1) / math.sqrt(means.size)) if means.size > 1 else math.nan
        for i, sample in enumerate(group):
            others = counts.sum() - counts[i]
            loo = (sums.sum() - sums[i]) / others if others else math.nan
            null = sample.comparison.null
            rows.append(
                {
                    "pair": pair,
                    "dataset": sample.dataset,
                    "truth": 0.0 if null else float(total),
                    "truth_loo": 0.0 if null else float(loo),
                    "truth_se": 0.0 if null else se,
                    "fresh_mean": float(total),
                }
            )
    return pd.DataFrame(rows)


def _by_pair(samples: Sequence[PairSample]) -> dict[str, list[PairSample]]:
    groups: dict[str, list[PairSample]] = {}
    for sample in samples:
        groups.setdefault(sample.comparison.name, []).append(sample)
    return groups


# --------------------------------------------------------------------------------------------
# Coverage, rejections, realised correlation
# --------------------------------------------------------------------------------------------


def binomial_se(share: float, n: int) -> float:
    """Monte-Carlo standard error ``sqrt(p (1 − p) / n)`` of a share of ``n`` independent
    draws (NaN with none)."""
    if n < 1 or not math.isfinite(share):
        return math.nan
    return math.sqrt(share * (1.0 - share) / n)


def covers(interval: Interval, truth: float) -> float:
    """1.0 when ``low ≤ truth ≤ high``, 0.0 when not, NaN for an interval not computed."""
    low, high = interval
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(truth)):
        return math.nan
    return float(low <= truth <= high)


def interval_draws(
    samples: Sequence[PairSample],
    *,
    level: float = LEVEL,
    intervals: Sequence[IntervalRule] = INTERVALS,
) -> pd.DataFrame:
    """Every interval of every (dataset, pair), with the truth it is scored on.

    Returns:
        One row per sample and interval: ``interval``, ``pair``, ``null``, ``dataset``,
        ``low``, ``high``, ``width``, ``truth_loo``, ``covered``.
    """
    truth = true_differences(samples).set_index(["pair", "dataset"])["truth_loo"]
    rows = []
    for sample in samples:
        target = float(truth.loc[(sample.comparison.name, sample.dataset)])
        for rule in intervals:
            low, high = rule.compute(sample, level)
            rows.append(
                {
                    "interval": rule.key,
                    "pair": sample.comparison.name,
                    "null": sample.comparison.null,
                    "dataset": sample.dataset,
                    "low": low,
                    "high": high,
                    "width": high - low,
                    "truth_loo": target,
                    "covered": covers((low, high), target),
                }
            )
    return pd.DataFrame(rows)


def coverage(
    samples: Sequence[PairSample],
    *,
    level: float = LEVEL,
    intervals: Sequence[IntervalRule] = INTERVALS,
) -> pd.DataFrame:
    """Each interval's empirical coverage of the true difference, per pair and pooled.

    Returns:
        One row per interval and pair, then per interval a pooled row over the real (non-null)
        pairs (``pair`` = :data:`REAL_PAIRS`): ``interval``, ``label``, ``pair``, ``null``,
        ``n_datasets``, ``coverage``, ``mc_se``, ``mean_width``, ``miss_low`` (share of
        datasets whose interval lies wholly below the truth), ``miss_high``, ``level``. The
        pooled row's ``mc_se`` treats datasets as the independent units (the sd over datasets
        of their mean coverage across pairs, over ``sqrt(K)``), since a dataset's pairs share
        its films.
    """
    draws = interval_draws(samples, level=level, intervals=intervals)
    labels = {rule.key: rule.label for rule in intervals}
    rows = []
    for rule in intervals:
        mine = draws[(draws["interval"] == rule.key) & draws["covered"].notna()]
        for pair, part in mine.groupby("pair", sort=False):
            rows.append(_coverage_row(rule.key, labels, str(pair), part, level))
        real = mine[~mine["null"].astype(bool)]
        if real["pair"].nunique() > 1:
            row = _coverage_row(rule.key, labels, REAL_PAIRS, real, level)
            per_dataset = real.groupby("dataset")["covered"].mean()
            row["n_datasets"] = int(per_dataset.size)
            row["mc_se"] = (
                float(per_dataset.std(ddof=1) / math.sqrt(per_dataset.size))
                if per_dataset.size > 1
                else math.nan
            )
            rows.append(row)
    return pd.DataFrame(rows, columns=COVERAGE_COLUMNS)


#: The pooled row of :func:`coverage` and :func:`rejections`: every real pair together.
REAL_PAIRS: str = "all real pairs"
COVERAGE_COLUMNS: tuple[str, ...] = (
    "interval",
    "label",
    "pair",
    "null",
    "n_datasets",
    "coverage",
    "mc_se",
    "mean_width",
    "miss_low",
    "miss_high",
    "level",
)


def _coverage_row(
    key: str, labels: dict[str, str], pair: str, part: pd.DataFrame, level: float
) -> dict[str, object]:
    share = float(part["covered"].mean())
    return {
        "interval": key,
        "label": labels[key],
        "pair": pair,
        "null": bool(part["null"].all()),
        "n_datasets": int(part["dataset"].nunique()),
        "coverage": share,
        "mc_se": binomial_se(share, len(part)),
        "mean_width": float(part["width"].mean()),
        "miss_low": float((part["high"] < part["truth_loo"]).mean()),
        "miss_high": float((part["low"] > part["truth_loo"]).mean()),
        "level": level,
    }


def rejections(
    samples: Sequence[PairSample],
    *,
    alpha: float = ALPHA,
    tests: Sequence[TestRule] = TESTS,
) -> pd.DataFrame:
    """Each test's rejection rate per pair: its type-I error on a null pair (true difference
    0), its power on a real pair.

    Returns:
        One row per test and pair: ``test``, ``label``, ``pair``, ``null``, ``n_datasets``,
        ``rate``, ``mc_se``, ``measure`` (``"type-I error"`` or ``"power"``), ``alpha``.
    """
    rows = []
    for rule in tests:
        for pair, group in _by_pair(samples).items():
            calls = np.array([rule.rejects(s, alpha) for s in group], dtype=np.float64)
            calls = calls[np.isfinite(calls)]
            rate = float(calls.mean()) if calls.size else math.nan
            null = group[0].comparison.null
            rows.append(
                {
                    "test": rule.key,
                    "label": rule.label,
                    "pair": pair,
                    "null": null,
                    "n_datasets": int(calls.size),
                    "rate": rate,
                    "mc_se": binomial_se(rate, int(calls.size)),
                    "measure": TYPE_I if null else POWER,
                    "alpha": alpha,
                }
            )
    return pd.DataFrame(rows, columns=REJECTION_COLUMNS)


TYPE_I: str = "type-I error"
POWER: str = "power"
REJECTION_COLUMNS: tuple[str, ...] = (
    "test",
    "label",
    "pair",
    "null",
    "n_datasets",
    "rate",
    "mc_se",
    "measure",
    "alpha",
)


@dataclass(frozen=True)
class Correlation:
    """A one-way random-effects intraclass correlation of a ``(K, S)`` table.

    Attributes:
        rho: ``σ²_between / (σ²_between + σ²_within)`` (ANOVA estimator; may fall below 0
            when the datasets' means vary less than their seeds alone would make them).
        low, high: its ``level`` confidence interval (Searle 1971, from the F distribution).
        between_var, within_var: the variance components.
    """

    rho: float
    low: float
    high: float
    between_var: float
    within_var: float


def intraclass_correlation(table: np.ndarray, *, level: float = LEVEL) -> Correlation:
    """ICC(1) of a balanced ``(K groups, S members)`` table: here datasets × seeds of one
    pair's differences, which is the ρ of Nadeau & Bengio's variance ``σ² (1/S + ρ/(1 − ρ))``
    of a dataset's mean difference around the population's.

    Rows with a NaN are dropped. NaNs with fewer than 2 rows or 2 columns, or no variation
    within the rows.
    """
    x = np.asarray(table, dtype=np.float64)
    x = x[np.isfinite(x).all(axis=1)] if x.ndim == 2 else x
    nan = Correlation(math.nan, math.nan, math.nan, math.nan, math.nan)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        return nan
    k, s = x.shape
    ms_between = s * x.mean(axis=1).var(ddof=1)
    ms_within = float(((x - x.mean(axis=1, keepdims=True)) ** 2).sum() / (k * (s - 1)))
    if ms_within <= 0:
        return nan
    between = (ms_between - ms_within) / s
    rho = between / (between + ms_within)
    f = ms_between / ms_within
    tail = (1 - level) / 2
    f_low = f / sps.f.ppf(1 - tail, k - 1, k * (s - 1))
    f_high = f / sps.f.ppf(tail, k - 1, k * (s - 1))
    return Correlation(
        rho=float(rho),
        low=float((f_low - 1) / (f_low + s - 1)),
        high=float((f_high - 1) / (f_high + s - 1)),
        between_var=float(between),
        within_var=ms_within,
    )


def realised_correlation(samples: Sequence[PairSample], *, level: float = LEVEL) -> pd.DataFrame:
    """The between-seed correlation the datasets show, beside the one the corrected test
    assumes.

    Returns:
        One row per pair: ``pair``, ``null``, ``n_datasets``, ``n_seeds``, ``rho_realised``
        (ICC of the per-seed differences on the datasets' own test splits, datasets as groups)
        with ``rho_low``/``rho_high``, ``r_realised`` (``ρ/(1 − ρ)``, the ratio the corrected
        variance would need), ``rho_assumed`` (``r/(1 + r)`` of the mean ``n_test/n_train``),
        ``r_assumed``, and ``rho_training`` (the ICC of the fresh differences: the part of ρ
        that comes from sharing a dataset's films for training, since every model is scored on
        the same fresh films).
    """
    rows = []
    for pair, group in _by_pair(samples).items():
        seeds = min(s.diffs.size for s in group)
        table = np.vstack([s.diffs[:seeds] for s in group])
        fresh = np.vstack([s.fresh_diffs[:seeds] for s in group])
        icc = intraclass_correlation(table, level=level)
        trained = intraclass_correlation(fresh, level=level)
        r_assumed = float(np.mean([s.ratio for s in group]))
        rows.append(
            {
                "pair": pair,
                "null": group[0].comparison.null,
                "n_datasets": len(group),
                "n_seeds": seeds,
                "rho_realised": icc.rho,
                "rho_low": icc.low,
                "rho_high": icc.high,
                "r_realised": icc.rho / (1 - icc.rho) if icc.rho < 1 else math.inf,
                "rho_assumed": paired.rho_of_ratio(r_assumed),
                "r_assumed": r_assumed,
                "rho_training": trained.rho,
            }
        )
    return pd.DataFrame(rows)


#: Fewest datasets from which :func:`recommend` names an interval: below it a coverage 0.05
#: short of the nominal level is not told apart from it.
MIN_DATASETS_TO_RECOMMEND = 10


def below_nominal(coverage_share: float, n: int, level: float = LEVEL) -> bool:
    """Whether a coverage over ``n`` datasets is detectably below ``level``: more than two
    standard errors of a share at ``level`` (``sqrt(level (1 − level) / n)``) short of it.

    The error is taken at the nominal level, not at the observed share, so a small ``n``
    whose intervals all happened to cover (share 1, observed error 0) is not read as exact.
    """
    return coverage_share < level - 2 * math.sqrt(level * (1 - level) / max(n, 1))


def recommend(summary: pd.DataFrame, *, level: float = LEVEL) -> str | None:
    """The interval the referee supports: of those whose coverage of the real pairs is not
    detectably below ``level`` (:func:`below_nominal`), the narrowest on average; if none
    is, the one that covers most. None without a real pair, or with fewer than
    :data:`MIN_DATASETS_TO_RECOMMEND` datasets.

    Args:
        summary: :func:`summary_table`'s (its :data:`COVERAGE` rows: the pooled
            :data:`REAL_PAIRS` row where there is one, else each real pair's, each of which
            must be adequate).
        level: the intervals' nominal level.
    """
    rows = summary[
        (summary["section"] == COVERAGE) & ~summary["null"].astype(bool) & summary["value"].notna()
    ]
    if rows.empty or int(rows["n_datasets"].max()) < MIN_DATASETS_TO_RECOMMEND:
        return None
    pooled = rows[rows["pair"] == REAL_PAIRS]
    rows = pooled if not pooled.empty else rows
    scored = rows.groupby("procedure", sort=False).agg(
        worst=("value", "min"), n=("n_datasets", "min"), width=("mean_width", "mean")
    )
    adequate = scored[[not below_nominal(r.worst, int(r.n), level) for r in scored.itertuples()]]
    if not adequate.empty:
        return str(adequate.sort_values("width", kind="stable").index[0])
    return str(scored.sort_values("worst", ascending=False, kind="stable").index[0])


# --------------------------------------------------------------------------------------------
# One long table of everything the referee measured
# --------------------------------------------------------------------------------------------

#: The sections of :func:`summary_table`.
COVERAGE, TEST, CORRELATION, TRUTH = "coverage", "test", "correlation", "truth"
SUMMARY_COLUMNS: tuple[str, ...] = (
    "section",
    "procedure",
    "label",
    "pair",
    "null",
    "measure",
    "value",
    "mc_se",
    "low",
    "high",
    "n_datasets",
    "mean_width",
)
#: :func:`summary_table`'s correlation rows, by ``procedure``.
RHO_REALISED, RHO_ASSUMED, RHO_TRAINING = "rho_realised", "rho_assumed", "rho_training"


def summary_table(
    samples: Sequence[PairSample], *, level: float = LEVEL, alpha: float = ALPHA
) -> pd.DataFrame:
    """Everything the referee measured, one row per number (:data:`SUMMARY_COLUMNS`): the
    command's CSV and what the page reads back.

    Sections: :data:`COVERAGE` (one row per interval and pair, and the pooled real pairs:
    ``value`` the coverage, ``mc_se``, ``mean_width``), :data:`TEST` (per test and pair:
    ``measure`` type-I error or power, ``value`` the rate), :data:`CORRELATION` (per pair:
    :data:`RHO_REALISED` with its interval in ``low``/``high``, :data:`RHO_ASSUMED`,
    :data:`RHO_TRAINING`) and :data:`TRUTH` (per pair: the true expected difference and
    its standard error over datasets).
    """
    rows: list[dict[str, object]] = []
    for r in coverage(samples, level=level).itertuples():
        rows.append(
            _summary(COVERAGE, r.interval, r.label, r.pair, r.null, "coverage", r.coverage)
            | {"mc_se": r.mc_se, "n_datasets": r.n_datasets, "mean_width": r.mean_width}
        )
    for r in rejections(samples, alpha=alpha).itertuples():
        rows.append(
            _summary(TEST, r.test, r.label, r.pair, r.null, r.measure, r.rate)
            | {"mc_se": r.mc_se, "n_datasets": r.n_datasets}
        )
    for r in realised_correlation(samples, level=level).itertuples():
        common = {"n_datasets": r.n_datasets}
        rows.append(
            _summary(
                CORRELATION,
                RHO_REALISED,
                "ρ realised (ICC over datasets)",
                r.pair,
                r.null,
                "rho",
                r.rho_realised,
            )
            | common
            | {"low": r.rho_low, "high": r.rho_high}
        )
        rows.append(
            _summary(
                CORRELATION,
                RHO_ASSUMED,
                "ρ assumed (n_test/n)",
                r.pair,
                r.null,
                "rho",
                r.rho_assumed,
            )
            | common
        )
        rows.append(
            _summary(
                CORRELATION,
                RHO_TRAINING,
                "ρ from shared training films",
                r.pair,
                r.null,
                "rho",
                r.rho_training,
            )
            | common
        )
    truth = true_differences(samples)
    for pair, part in truth.groupby("pair", sort=False):
        first = part.iloc[0]
        null = bool(pair in {s.comparison.name for s in samples if s.comparison.null})
        rows.append(
            _summary(
                TRUTH,
                "true_difference",
                "true expected difference",
                str(pair),
                null,
                "difference",
                float(first["truth"]),
            )
            | {"mc_se": float(first["truth_se"]), "n_datasets": int(part["dataset"].nunique())}
        )
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def _summary(
    section: str, procedure: str, label: str, pair: str, null: bool, measure: str, value: float
) -> dict[str, object]:
    return {
        "section": section,
        "procedure": procedure,
        "label": label,
        "pair": pair,
        "null": bool(null),
        "measure": measure,
        "value": float(value),
        "mc_se": math.nan,
        "low": math.nan,
        "high": math.nan,
        "n_datasets": 0,
        "mean_width": math.nan,
    }
