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
  random streams) has a true difference of 0 in expectation; it is estimated the same way,
  not assumed (a non-zero estimate is a sign the datasets share something);
* :data:`INTERVALS` and :func:`coverage`: each interval's empirical coverage of the truth
  over the ``K`` datasets, with its Monte-Carlo standard error ``sqrt(c (1 − c) / K)`` and
  Wilson's interval (:func:`wilson_interval`; the pooled row counts the draws as the
  effective number their clustering by dataset leaves, :func:`effective_draws`);
* :data:`TESTS` and :func:`rejections`: each test's rejection rate: its type-I error on a
  null pair, its power on a real pair;
* :func:`realised_correlation`: the between-seed correlation ρ the datasets actually show
  (the intraclass correlation of the per-seed differences, one-way random effects), beside
  the ρ = r / (1 + r) the corrected test assumes from ``r = n_test / n_train``;
* :func:`recommend`: the interval the table supports.

The intervals and tests are `engine.analysis.paired`'s (the Hodges–Lehmann interval the
Wilcoxon inverts among them) and, when the design crosses split seeds with init seeds
(``--seeds 3x2``), `engine.analysis.variance_components`' factorial, split-means and
design-corrected intervals, called, not restated; on independent seeds the factorial ones are
not computed and the tables say so. To add one, append an :class:`IntervalRule` to
:data:`INTERVALS` (and a :class:`TestRule` to :data:`TESTS`): its function gets a
:class:`PairSample` (extend it with the columns the design adds) and the level, and every
table, the command's CSV and the page pick it up.

The pairs, intervals and tests live in `engine.analysis.referee_rules`, the samples and truth
in `engine.analysis.referee_samples`; this module measures them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from engine.analysis import paired
from engine.analysis.referee_rules import (
    INTERVALS,
    MEAN,
    NEEDS_FACTORIAL,
    PSEUDO_MEDIAN,
    TESTS,
    Comparison,
    Interval,
    IntervalRule,
    PairSample,
    TestRule,
    has_baycomp,
)
from engine.analysis.referee_samples import (
    DRAW_KEYS,
    SEED_FACTORS,
    by_pair,
    fresh_column,
    pair_samples,
    test_column,
    true_differences,
)

# The pairs, samples, intervals and tests live in `engine.analysis.referee_rules` and
# `engine.analysis.referee_samples`; callers read them here, beside what is measured of them.
__all__ = [
    "ALPHA",
    "CORRELATION",
    "COVERAGE",
    "COVERAGE_COLUMNS",
    "DRAW_KEYS",
    "INTERVALS",
    "LEVEL",
    "MEAN",
    "MIN_DATASETS_TO_RECOMMEND",
    "NEEDS_FACTORIAL",
    "POWER",
    "PSEUDO_MEDIAN",
    "REAL_PAIRS",
    "REJECTION_COLUMNS",
    "RHO_ASSUMED",
    "RHO_REALISED",
    "RHO_TRAINING",
    "SEED_FACTORS",
    "SUMMARY_COLUMNS",
    "TEST",
    "TESTS",
    "TRUTH",
    "TYPE_I",
    "Comparison",
    "Correlation",
    "Interval",
    "IntervalRule",
    "PairSample",
    "TestRule",
    "below_nominal",
    "binomial_se",
    "effective_draws",
    "coverage",
    "covers",
    "fresh_column",
    "has_baycomp",
    "interval_draws",
    "intraclass_correlation",
    "pair_samples",
    "realised_correlation",
    "recommend",
    "rejections",
    "summary_table",
    "test_column",
    "true_differences",
    "wilson_interval",
]

LEVEL: float = paired.LEVEL
ALPHA: float = paired.ALPHA


# --------------------------------------------------------------------------------------------
# Coverage, rejections, realised correlation
# --------------------------------------------------------------------------------------------


def wilson_interval(share: float, n: float, *, level: float = LEVEL) -> tuple[float, float]:
    """Wilson's score interval of a share of ``n`` independent draws (``n`` may be an
    effective count): unlike the Wald interval ``share ± z·SE`` it is not a point at 0 or 1
    (24 of 24 covered is compatible with 0.95). NaNs with no draw."""
    if not n >= 1 or not math.isfinite(share):
        return math.nan, math.nan
    z = float(sps.norm.ppf(0.5 + level / 2))
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # At 0 or 1 one end is exactly the bound (the formula leaves rounding dust there).
    low = 0.0 if share == 0 else max(0.0, centre - half)
    high = 1.0 if share == 1 else min(1.0, centre + half)
    return low, high


def effective_draws(share: float, mc_se: float, n_units: int, n_draws: int) -> float:
    """The number of independent draws a share's clustered Monte-Carlo SE stands for
    (``share (1 − share) / SE²``), kept between the units (datasets) and the draws: the
    pooled row's draws share their dataset's films, so they count as fewer than they are."""
    if not (math.isfinite(mc_se) and mc_se > 0):
        return float(n_units)
    return float(min(max(share * (1 - share) / mc_se**2, n_units), n_draws))


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
            coverage, mc_se = float(row["coverage"]), float(row["mc_se"])  # type: ignore[arg-type]
            n_eff = effective_draws(coverage, mc_se, per_dataset.size, len(real))
            row["ci_low"], row["ci_high"] = wilson_interval(coverage, n_eff, level=level)
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
    "ci_low",
    "ci_high",
    "mean_width",
    "miss_low",
    "miss_high",
    "level",
)


def _coverage_row(
    key: str, labels: dict[str, str], pair: str, part: pd.DataFrame, level: float
) -> dict[str, object]:
    share = float(part["covered"].mean())
    low, high = wilson_interval(share, len(part), level=level)
    return {
        "interval": key,
        "label": labels[key],
        "pair": pair,
        "null": bool(part["null"].all()),
        "n_datasets": int(part["dataset"].nunique()),
        "coverage": share,
        "mc_se": binomial_se(share, len(part)),
        "ci_low": low,
        "ci_high": high,
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
        for pair, group in by_pair(samples).items():
            calls = np.array([rule.rejects(s, alpha) for s in group], dtype=np.float64)
            calls = calls[np.isfinite(calls)]
            rate = float(calls.mean()) if calls.size else math.nan
            null = group[0].comparison.null
            low, high = wilson_interval(rate, int(calls.size))
            rows.append(
                {
                    "test": rule.key,
                    "label": rule.label,
                    "pair": pair,
                    "null": null,
                    "n_datasets": int(calls.size),
                    "rate": rate,
                    "mc_se": binomial_se(rate, int(calls.size)),
                    "ci_low": low,
                    "ci_high": high,
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
    "ci_low",
    "ci_high",
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
    for pair, group in by_pair(samples).items():
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
    :data:`MIN_DATASETS_TO_RECOMMEND` datasets. Only intervals for the mean compete: the
    Wilcoxon's Hodges–Lehmann interval covers the pseudo-median, whatever it scores.

    Args:
        summary: :func:`summary_table`'s (its :data:`COVERAGE` rows: the pooled
            :data:`REAL_PAIRS` row where there is one, else each real pair's, each of which
            must be adequate).
        level: the intervals' nominal level.
    """
    other_centre = {rule.key for rule in INTERVALS if rule.targets != MEAN}
    rows = summary[
        (summary["section"] == COVERAGE)
        & ~summary["null"].astype(bool)
        & summary["value"].notna()
        & ~summary["procedure"].isin(other_centre)
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
    ``value`` the coverage, ``mc_se``, ``mean_width``; an interval computed on no dataset,
    such as the factorial ones on independent seeds, one row per pair with ``value`` NaN and
    ``n_datasets`` 0), :data:`TEST` (per test and pair:
    ``measure`` type-I error or power, ``value`` the rate), :data:`CORRELATION` (per pair:
    :data:`RHO_REALISED` with its interval in ``low``/``high``, :data:`RHO_ASSUMED`,
    :data:`RHO_TRAINING`) and :data:`TRUTH` (per pair: the true expected difference and
    its standard error over datasets).
    """
    rows: list[dict[str, object]] = []
    covered = coverage(samples, level=level)
    for r in covered.itertuples():
        rows.append(
            _summary(COVERAGE, r.interval, r.label, r.pair, r.null, "coverage", r.coverage)
            | {"mc_se": r.mc_se, "n_datasets": r.n_datasets, "mean_width": r.mean_width}
            | {"low": r.ci_low, "high": r.ci_high}
        )
    # An interval the design could not give (the factorial ones on independent seeds) is
    # kept as a row with no dataset behind it, so a reader tells "not run" from "predates".
    pairs = {name: group[0].comparison.null for name, group in by_pair(samples).items()}
    for rule in INTERVALS:
        if rule.key not in set(covered["interval"]):
            rows.extend(
                _summary(COVERAGE, rule.key, rule.label, pair, null, "coverage", math.nan)
                for pair, null in pairs.items()
            )
    for r in rejections(samples, alpha=alpha).itertuples():
        rows.append(
            _summary(TEST, r.test, r.label, r.pair, r.null, r.measure, r.rate)
            | {"mc_se": r.mc_se, "n_datasets": r.n_datasets, "low": r.ci_low, "high": r.ci_high}
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
