"""The paired tests of one set of per-seed differences between two methods: the corrected
resampled t-test and its interval (Nadeau & Bengio 2003), the corrected p across the
correlation it assumes, the Bayesian correlated t-test and its verdict (Corani & Benavoli
2015), TOST, the exact Wilcoxon signed-rank test and the Hodges–Lehmann interval it inverts,
the effect sizes ``d_z`` and the rank-biserial r, and Holm's adjustment.
`engine.analysis.paired` builds its tables from these (and re-exports them);
docs/statistics.md says what each assumes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special
from scipy import stats as sps

ALPHA: float = 0.05
LEVEL: float = 0.95
#: Posterior probability beyond the ROPE that a "better" verdict needs: 1 − α/2, the
#: two-sided level of the corrected test. Under the flat prior it is the corrected 95 %
#: interval lying wholly beyond the ROPE, so no "better" stands beside a corrected p ≥ α
#: (0.95, Benavoli et al.'s default, is a one-sided 5 % test: about a two-sided p < 0.10).
BAYES_THRESHOLD: float = 1.0 - ALPHA / 2
#: "Equivalent" needs each posterior tail beyond the ROPE below this: under the flat prior
#: that is TOST's p < α (the corrected 90 % interval inside ± the ROPE), one rule for both.
EQUIVALENCE_ALPHA: float = ALPHA
#: Fewer paired seeds than this give no verdict: with 2 the variance has 1 degree of freedom
#: and no Wilcoxon p can fall below 0.5.
MIN_VERDICT_SEEDS: int = 3
EQUIVALENT: str = "equivalent"
INCONCLUSIVE: str = "inconclusive"
NOT_ESTIMABLE: str = "not estimable"
NO_SPREAD: str = "no spread across seeds (every seed gives the same difference)"


@dataclass(frozen=True)
class CorrectedT:
    """The corrected resampled t-test of one set of paired differences.

    Attributes:
        n: paired seeds.
        mean: mean difference.
        sd: sample sd of the differences (ddof 1).
        se: corrected standard error ``sqrt((1/n + ratio) s²)``.
        t: ``mean / se``.
        df: ``n − 1``.
        p: two-sided p-value.
        ci_low, ci_high: the ``level`` confidence interval of the mean difference.
        p_naive: the ordinary paired t-test's p (``se = s / sqrt(n)``), for comparison.
    """

    n: int
    mean: float
    sd: float
    se: float
    t: float
    df: int
    p: float
    ci_low: float
    ci_high: float
    p_naive: float


def t_quantile(q: float, df: float) -> float:
    """Student t's upper quantile at ``q`` (0.5 to 1, as an interval's half-width needs) on
    ``df`` degrees of freedom: ``scipy.stats.t.ppf``.

    The special function that ``t.ppf`` calls, called directly: the same number for every
    such ``q`` and any ``df`` (NaN, zero and ``inf`` included), without the ~0.2 ms of
    argument handling a call to the distribution costs. The referee computes intervals for
    thousands of samples, where that handling was most of its time. (At ``q = 0`` the two
    differ: the special function answers +inf, ``t.ppf`` the lower bound -inf.)
    """
    return float(special.stdtrit(df, q))


def t_two_sided_p(t: float, df: float) -> float:
    """The two-sided p of ``t`` on ``df`` degrees of freedom: ``2 * scipy.stats.t.sf(|t|, df)``
    through the special function it calls (see :func:`t_quantile`)."""
    return float(2 * special.stdtr(df, -abs(t)))


def corrected_resampled_t(
    diffs: Sequence[float] | np.ndarray, ratio: float, *, level: float = LEVEL
) -> CorrectedT:
    """Nadeau & Bengio's corrected resampled t-test of paired differences over seeds.

    Args:
        diffs: one difference per seed (NaNs dropped).
        ratio: ``n_test / n_train`` of the seeds' splits (0 gives the naive paired t-test).
        level: confidence level of the interval.

    Returns:
        A :class:`CorrectedT`; with fewer than 2 differences every statistic is NaN. When all
        differences are equal (sd 0) the test is degenerate: p is 1 for a zero difference and
        0 otherwise, and the interval is the point.
    """
    d = np.asarray(diffs, dtype=np.float64)
    d = d[np.isfinite(d)]
    n = d.size
    if n < 2:
        nan = math.nan
        mean = float(d.mean()) if n else nan
        return CorrectedT(n, mean, nan, nan, nan, max(n - 1, 0), nan, nan, nan, nan)
    # np.ptp, not the sd: equal values can give an sd of 1e-17 from rounding.
    constant = np.ptp(d) == 0
    mean, sd = float(d.mean()), 0.0 if constant else float(d.std(ddof=1))
    se = math.sqrt((1.0 / n + ratio) * sd**2)
    se_naive = sd / math.sqrt(n)
    df = n - 1
    if constant:
        p = 1.0 if mean == 0 else 0.0
        return CorrectedT(n, mean, sd, se, math.copysign(math.inf, mean), df, p, mean, mean, p)
    t = mean / se
    p = t_two_sided_p(t, df)
    p_naive = t_two_sided_p(mean / se_naive, df)
    half = t_quantile(0.5 + level / 2, df) * se
    return CorrectedT(n, mean, sd, se, t, df, p, mean - half, mean + half, p_naive)


def corrected_mean_interval(
    values: Sequence[float] | np.ndarray, ratio: float, *, level: float = LEVEL
) -> tuple[float, float]:
    """The corrected resampled t interval of a mean over seeds (Table 4's CI, see
    `engine.analysis.paired.MEAN_CI_KIND`); (NaN, NaN) with fewer than 2 values."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size < 2:
        return math.nan, math.nan
    half = float(sps.t.ppf(0.5 + level / 2, v.size - 1)) * math.sqrt(
        (1.0 / v.size + ratio) * v.var(ddof=1)
    )
    return float(v.mean() - half), float(v.mean() + half)


def rho_of_ratio(ratio: float) -> float:
    """The between-seed correlation ``ρ = r / (1 + r)`` that the ratio ``r = n_test/n_train``
    of the corrected variance stands for (Nadeau & Bengio 2003: ``r = ρ / (1 − ρ)``)."""
    return float(ratio / (1.0 + ratio))


def ratio_of_rho(rho: float) -> float:
    """The ratio ``r = ρ / (1 − ρ)`` of the corrected variance for a correlation ``ρ < 1``."""
    if not 0.0 <= rho < 1.0:
        raise ValueError(f"{rho=} must lie in [0, 1)")
    return float(rho / (1.0 - rho))


def corrected_p_at(test: CorrectedT, ratio: float) -> float:
    """The corrected test's two-sided p had the variance used ``ratio`` instead (the same
    mean, sd and degrees of freedom); NaN with fewer than 2 differences."""
    if test.n < 2 or math.isnan(test.sd):
        return math.nan
    if test.sd == 0:
        return 1.0 if test.mean == 0 else 0.0
    se = math.sqrt((1.0 / test.n + ratio) * test.sd**2)
    return float(2 * sps.t.sf(abs(test.mean / se), test.df))


def break_even_ratio(test: CorrectedT, *, alpha: float = ALPHA) -> float:
    """The ratio ``r`` at which the corrected p equals ``alpha``.

    ``|mean| / (s · sqrt(1/n + r)) = t_{1−α/2, n−1}`` gives ``r* = (mean / (s·t))² − 1/n``
    in closed form (the degrees of freedom do not depend on ``r``). Below ``r*`` the
    difference is significant, above it not.

    Returns:
        ``r*``; NaN when p ≥ ``alpha`` already at ``r = 0`` (no ``r ≥ 0`` makes it
        significant) or with fewer than 2 differences; ``inf`` for a constant non-zero
        difference (significant at every ``r``).
    """
    if test.n < 2 or math.isnan(test.sd):
        return math.nan
    if test.sd == 0:
        return math.inf if test.mean != 0 else math.nan
    critical = float(sps.t.ppf(1 - alpha / 2, test.df))
    r_star = (test.mean / (test.sd * critical)) ** 2 - 1.0 / test.n
    return float(r_star) if r_star > 0 else math.nan


def bayes_correlated_t(test: CorrectedT, rope: float) -> tuple[float, float, float]:
    """The Bayesian correlated t-test (Corani & Benavoli 2015) of ``a − b``.

    Under the uninformative prior, the posterior of the mean difference is a Student t on
    ``n − 1`` degrees of freedom, located at the mean, scaled by the corrected standard
    error ``sqrt((1/n + ρ/(1 − ρ)) s²)``: the same variance as the corrected frequentist
    test. baycomp's ``CorrelatedTTest`` derives ``ρ`` from k-fold cross-validation
    (``ρ = 1/k``), which seeds with random splits do not have, so the variance is ours
    and the probabilities are baycomp's ``Posterior`` (the Student t's cdf).

    Returns:
        ``(P(a − b < −rope), P(|a − b| ≤ rope), P(a − b > rope))``; NaNs with fewer than
        2 differences or an unknown variance (results imported without split sizes).
    """
    if test.n < 2 or not math.isfinite(test.se):
        return math.nan, math.nan, math.nan
    # Imported here, not at the top: the phantom referee (`engine.analysis.referee`) runs
    # this module's intervals on GPU machines that may lack baycomp, and needs it only here.
    from baycomp.single import Posterior

    probs = Posterior(test.mean, test.se**2, test.df, rope).probs()
    if rope == 0:
        left, right = probs
        return float(left), 0.0, float(right)
    left, inside, right = probs
    return float(left), float(inside), float(right)


def tost_p(test: CorrectedT, rope: float) -> float:
    """Two one-sided tests (Schuirmann 1987) of ``|a − b| < rope`` on the corrected variance:
    the larger of the two one-sided p-values (p < α: equivalent within ``rope``, which is
    the corrected ``1 − 2α`` interval lying inside ``±rope``); NaN with fewer than 2
    differences."""
    if test.n < 2 or math.isnan(test.sd):
        return math.nan
    if test.se == 0:
        return 0.0 if abs(test.mean) < rope else 1.0
    above_lower = float(sps.t.sf((test.mean + rope) / test.se, test.df))
    below_upper = float(sps.t.cdf((test.mean - rope) / test.se, test.df))
    return max(above_lower, below_upper)


def not_estimable_reason(diffs: Sequence[float] | np.ndarray) -> str | None:
    """Why no verdict can be read from these per-seed differences, or None.

    Fewer than :data:`MIN_VERDICT_SEEDS` finite differences, or differences with no spread
    (every seed the same: the corrected test's p is then exactly 0 or 1 and the posterior a
    point, certainty that the seeds cannot give)."""
    d = np.asarray(diffs, dtype=np.float64)
    d = d[np.isfinite(d)]
    if d.size < MIN_VERDICT_SEEDS:
        return f"fewer than {MIN_VERDICT_SEEDS} seeds ({d.size})"
    # np.ptp, not the sd: equal values can give an sd of 1e-17 from rounding.
    if np.ptp(d) == 0:
        return NO_SPREAD
    return None


def verdict(
    a: str,
    b: str,
    probs: tuple[float, float, float],
    *,
    lower_is_better: bool,
    threshold: float = BAYES_THRESHOLD,
    equivalence_alpha: float = EQUIVALENCE_ALPHA,
) -> str:
    """One plain verdict from the Bayesian correlated t-test's probabilities.

    Args:
        a, b: the methods (the difference is ``a − b``).
        probs: :func:`bayes_correlated_t`'s ``(P(a − b < −rope), P(rope), P(a − b > rope))``.
        lower_is_better: the metric's direction.
        threshold: the posterior probability beyond the ROPE a "better" needs
            (:data:`BAYES_THRESHOLD`, the corrected test's two-sided level).
        equivalence_alpha: "equivalent" needs both tails beyond the ROPE below it (TOST's
            rule, :data:`EQUIVALENCE_ALPHA`).

    Returns:
        ``"<a> better"``, ``"<b> better"``, :data:`EQUIVALENT` or :data:`INCONCLUSIVE` (also
        when the probabilities are NaN). Multiplicity is the table's business
        (`engine.analysis.paired.paired_table` adds it).
    """
    left, _, right = probs
    if not (math.isfinite(left) and math.isfinite(right)):
        return INCONCLUSIVE
    a_better, b_better = (left, right) if lower_is_better else (right, left)
    if a_better >= threshold:
        return f"{a} better"
    if b_better >= threshold:
        return f"{b} better"
    if max(left, right) < equivalence_alpha:
        return EQUIVALENT
    return INCONCLUSIVE


def better_method(text: str) -> str | None:
    """The method a verdict names better (``"a better (exploratory)"`` -> ``"a"``), or None."""
    head = str(text).split(" (", 1)[0]
    return head.removesuffix(" better") if head.endswith(" better") else None


def wilcoxon_exact_p(diffs: Sequence[float] | np.ndarray) -> float:
    """The exact two-sided Wilcoxon signed-rank p, ties and zeros included.

    Zero differences are dropped (Wilcox's convention, as scipy's default); tied absolute
    differences share their mean rank. The null distribution of ``T+`` is that of the sum
    of the observed ranks under independent fair sign flips, counted exactly by a
    convolution over the doubled ranks (mean ranks are multiples of 1/2), so it is exact at
    any number of seeds. scipy's ``method="exact"`` refuses ties and its default falls back
    to the normal approximation when differences tie or are zero (up to 0.02 off on the
    reference study). Without ties it equals scipy's exact p.

    Returns:
        ``min(1, 2 · min(P(T+ ≤ t), P(T+ ≥ t)))``; 1 when every difference is zero; NaN
        with no finite difference.
    """
    d = np.asarray(diffs, dtype=np.float64)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return math.nan
    d = d[d != 0]
    if d.size == 0:
        return 1.0
    doubled = np.rint(2 * sps.rankdata(np.abs(d))).astype(np.int64)
    observed = int(doubled[d > 0].sum())
    probability = _sign_flip_distribution(doubled)
    low, high = probability[: observed + 1].sum(), probability[observed:].sum()
    return float(min(1.0, 2 * min(low, high)))


def _sign_flip_distribution(weights: np.ndarray) -> np.ndarray:
    """``P(Σ of the weights given a + sign = k)`` for ``k = 0 .. Σ weights`` under independent
    fair sign flips: the signed-rank statistic's null distribution over whole-number
    (doubled, where ranks tie) ranks, built one rank at a time."""
    probability = np.zeros(int(weights.sum()) + 1)
    probability[0] = 1.0
    for weight in weights:
        shifted = np.zeros_like(probability)
        shifted[weight:] = probability[:-weight]
        probability = 0.5 * (probability + shifted)
    return probability


@dataclass(frozen=True)
class HodgesLehmann:
    """The Hodges–Lehmann estimate of a set of paired differences and the exact signed-rank
    confidence interval around it.

    Attributes:
        n: differences used.
        estimate: the median of the Walsh averages ``(d_i + d_j)/2``, ``i ≤ j``.
        low, high: the interval: the ``k``-th smallest and ``k``-th largest Walsh average;
            ``(−inf, inf)`` when ``n`` is too small for any finite interval at the level
            (``n ≤ 5`` at 95 %).
        confidence: its exact confidence ``1 − 2 P(T+ ≤ k − 1)`` (at least the level asked;
            the signed-rank statistic is discrete).
    """

    n: int
    estimate: float
    low: float
    high: float
    confidence: float


def hodges_lehmann(diffs: Sequence[float] | np.ndarray, *, level: float = LEVEL) -> HodgesLehmann:
    """The Hodges–Lehmann estimate and the interval the Wilcoxon signed-rank test inverts.

    The interval holds every shift ``θ`` that the exact two-sided signed-rank test of
    ``d − θ`` does not reject at ``α = 1 − level`` (Hollander, Wolfe & Chicken 2014, §3.3):
    ``T+(θ)`` is the number of Walsh averages above ``θ``, so the interval runs from the
    ``k``-th smallest to the ``k``-th largest Walsh average, ``k`` the largest count with
    ``P(T+ ≤ k − 1) ≤ α/2`` under the null distribution of ``T+`` on ``n`` untied ranks.

    It is an interval for the **pseudo-median** of the differences (the median of the Walsh
    averages' distribution), which is the mean only when the differences are symmetric about
    their centre; it assumes the differences independent, as the Wilcoxon test does. Exact
    for continuous differences; with tied differences it is the conventional interval.

    Returns:
        A :class:`HodgesLehmann`; NaNs with no finite difference.
    """
    d = np.asarray(diffs, dtype=np.float64)
    d = np.sort(d[np.isfinite(d)])
    n = d.size
    if n == 0:
        return HodgesLehmann(0, math.nan, math.nan, math.nan, math.nan)
    upper = np.triu_indices(n)
    walsh = np.sort((d[:, None] + d[None, :])[upper] / 2.0)
    estimate = float(np.median(walsh))
    # Untied ranks 1..n, doubled as `_sign_flip_distribution` counts them: every other entry.
    null = _sign_flip_distribution(2 * np.arange(1, n + 1))[::2]
    cdf = np.cumsum(null)  # cdf[c] = P(T+ <= c)
    k = int(np.searchsorted(cdf, (1.0 - level) / 2.0 + 1e-12, side="right"))
    if k == 0:
        return HodgesLehmann(n, estimate, -math.inf, math.inf, 1.0)
    return HodgesLehmann(
        n, estimate, float(walsh[k - 1]), float(walsh[walsh.size - k]), float(1 - 2 * cdf[k - 1])
    )


def d_z(diffs: Sequence[float] | np.ndarray) -> float:
    """Cohen's ``d_z``: mean paired difference over the sd of the differences (NaN when the
    sd is 0 or fewer than 2 differences)."""
    d = np.asarray(diffs, dtype=np.float64)
    d = d[np.isfinite(d)]
    if d.size < 2:
        return math.nan
    if np.ptp(d) == 0:
        return math.nan
    return float(d.mean() / d.std(ddof=1))


def rank_biserial(diffs: Sequence[float] | np.ndarray) -> float:
    """Matched-pairs rank-biserial correlation ``(T+ − T−) / (T+ + T−)`` (Kerby 2014).

    Zero differences are dropped, as the Wilcoxon test drops them; ties share their mean
    rank. +1: every seed favours ``a − b > 0``; −1: every seed ``a − b < 0``; NaN when every
    difference is zero.
    """
    d = np.asarray(diffs, dtype=np.float64)
    d = d[np.isfinite(d) & (d != 0)]
    if d.size == 0:
        return math.nan
    ranks = sps.rankdata(np.abs(d))
    positive, negative = ranks[d > 0].sum(), ranks[d < 0].sum()
    return float((positive - negative) / (positive + negative))


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (as ``statsmodels.stats.multitest.multipletests``
    with ``method="holm"``, which this replaces because it runs a full garbage collection on
    every call: 0.1-0.2 s each in a large process)."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out
