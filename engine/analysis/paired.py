"""Paired comparisons of methods over seeds that count the films as well as the seeds.

Every seed of a study resamples the same films, so the seeds' test sets overlap and their
training sets overlap more: the per-seed differences between two methods are positively
correlated and the naive paired t-test and the Wilcoxon signed-rank test, which treat them as
independent, are too confident (Dietterich 1998; Nadeau & Bengio 2003). For every metric and
pair of methods of a task this module gives, for the mean paired difference ``a − b`` over
seeds:

* the **corrected resampled t-test** (Nadeau & Bengio 2003, as Bouckaert & Frank 2004 apply
  it): the variance of the mean difference is ``(1/n + n_test/n_train) s²`` instead of
  ``s²/n``, with ``n_test/n_train`` the study's own split sizes (films held out for testing
  over films used to fit and select), and ``t`` on ``n − 1`` degrees of freedom; its CI is
  ``mean ± t_{n−1} · sqrt((1/n + n_test/n_train) s²)``;
* a **hierarchical bootstrap** CI (:func:`hierarchical_bootstrap`): seeds resampled, then the
  patients of each drawn seed's test set, the metric recomputed on the resampled films for
  both methods at once (paired);
* the **Wilcoxon signed-rank test** as the Statistics page has always run it
  (`engine.analysis.stats.wilcoxon_pairwise`), Holm-adjusted over the pairs of the task and metric;
* effect sizes: ``d_z`` (mean difference over the sd of the differences) and the
  matched-pairs rank-biserial correlation ``r = (T+ − T−) / (T+ + T−)`` (Kerby 2014);
* the corrected test **across the correlation it assumes**: its p at ``r = 0, 0.1, 0.2``
  (:data:`R_STRIP`; ``r`` = the ratio in the variance, ``ρ = r / (1 + r)`` the between-seed
  correlation) beside the split-derived ``r = n_test/n_train``, and the break-even ``r`` at
  which p crosses ``alpha`` (:func:`break_even_ratio`, closed form). The same seed draws
  the split, the weights and the batch order, so one dataset cannot say which ``r`` is right
  (Bengio & Grandvalet 2004): the verdict of the corrected test is a consequence of ``ρ``;
* **equivalence and Bayesian verdicts**: the Bayesian correlated t-test (Corani & Benavoli
  2015; :func:`bayes_correlated_t`) with a region of practical equivalence (ROPE, per metric,
  :data:`ROPES`) gives P(A better), P(equivalent), P(B better); TOST (:func:`tost_p`) is
  the frequentist equivalence test on the same corrected variance; :func:`verdict` reads one
  plain verdict per pair.

"Consistent over seeds" (the Wilcoxon, the naive t-test) and "different by the corrected
test" (which assumes ``ρ``) are different claims; :func:`reading` says which one holds,
comparing unadjusted p with unadjusted p.

One endpoint is declared primary (:data:`PRIMARY_FAMILY`): AMAE, each soft method against
nominal, on both tasks — one Holm family of 8 comparisons on the corrected p-value. Every
other row is exploratory, Holm-adjusted within its task and metric.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pandas as pd
from scipy import stats as sps

from engine.analysis import compare
from engine.analysis.metrics import (
    LOWER_IS_BETTER,
    METRIC_LABELS,
    METRICS,
    PRIMARY_METRIC,
    PROBABILITY_LOWER_IS_BETTER,
    metrics_from_confusion,
)
from engine.methods import order_methods
from engine.vocab import TASK_CLASSES

ALPHA: float = 0.05
LEVEL: float = 0.95
BASELINE: str = "nominal"
# PRIMARY_METRIC is declared once, in the metric registry, and imported above: callers keep
# reading it here beside the rest of the primary endpoint (baseline, family).
PRIMARY_FAMILY: str = (
    f"primary: {METRIC_LABELS[PRIMARY_METRIC]}, each soft method vs nominal, both tasks"
)
EXPLORATORY: str = "exploratory"
MEAN_CI_KIND: str = (
    "95% corrected resampled t interval (Nadeau & Bengio 2003): mean ± t(n−1) · "
    "sqrt((1/n + n_test/n_train) · s²)"
)
BOOTSTRAP_CI_KIND: str = (
    "95% film-sampling bootstrap percentile interval (seeds, then patients within each "
    "seed's test set, resampled as if independent): how much resampling these test films "
    "moves the difference, not an interval for the comparison (it ignores the seeds' shared "
    "training films)"
)
#: ``r`` (the ratio in the corrected variance) at which every corrected p is also shown.
R_STRIP: tuple[float, ...] = (0.0, 0.1, 0.2)
#: Default region of practical equivalence: |difference| below it is "no practical
#: difference" (0.01 AMAE, the issue's default; the same on the other 0-1 grade metrics).
DEFAULT_ROPE: float = 0.01
ROPES: dict[str, float] = {metric: DEFAULT_ROPE for metric in METRICS}
#: Posterior probability at which the Bayesian correlated t-test gives a verdict
#: (Benavoli et al. 2017 use 0.95).
BAYES_THRESHOLD: float = 0.95
EQUIVALENT: str = "equivalent"
INCONCLUSIVE: str = "inconclusive"
#: Metrics of which a lower value is better (grade, probability metrics and the KL × CPPD
#: divergence), for the direction of "A better".
LOWER_BETTER: frozenset[str] = LOWER_IS_BETTER | PROBABILITY_LOWER_IS_BETTER | {"kld"}


def r_column(r: float) -> str:
    """The column of the corrected p at ``r`` (``p_r0``, ``p_r0.1``, ...)."""
    return f"p_r{r:g}"


#: The columns of `jobs stats` and of the paired table, in order (extras follow them).
PAIRED_COLUMNS: tuple[str, ...] = (
    "task",
    "metric",
    "method_a",
    "method_b",
    "n_seeds",
    "mean_diff",
    "ci_low",
    "ci_high",
    "p_corrected",
    "rho_assumed",
    "r_break_even",
    "p_wilcoxon",
    "p_wilcoxon_holm",
    "d_z",
    "rank_biserial",
    "p_bayes_a_better",
    "p_bayes_equivalent",
    "p_bayes_b_better",
    "verdict",
)
EXTRA_COLUMNS: tuple[str, ...] = (
    "sd_diff",
    "p_naive_t",
    "p_corrected_holm",
    "family",
    "test_train_ratio",
    *(r_column(r) for r in R_STRIP),
    "rope",
    "p_tost",
)


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


def test_train_ratios(split_sizes: pd.DataFrame) -> dict[str, float]:
    """``n_test / n_train`` per task from the study's split sizes.

    Args:
        split_sizes: columns ``task``, ``n_test`` (films held out for testing) and ``n_fit``
            (films used to fit and select: train + validation), one row per seed and task
            (`store.analysis.split_sizes`).

    Returns:
        Task -> mean test films over mean fit films across seeds.
    """
    means = split_sizes.groupby("task")[["n_test", "n_fit"]].mean()
    return {str(task): float(row.n_test / row.n_fit) for task, row in means.iterrows()}


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
    p = float(2 * sps.t.sf(abs(t), df))
    p_naive = float(2 * sps.t.sf(abs(mean / se_naive), df))
    half = float(sps.t.ppf(0.5 + level / 2, df)) * se
    return CorrectedT(n, mean, sd, se, t, df, p, mean - half, mean + half, p_naive)


def corrected_mean_interval(
    values: Sequence[float] | np.ndarray, ratio: float, *, level: float = LEVEL
) -> tuple[float, float]:
    """The corrected resampled t interval of a mean over seeds (Table 4's CI, see
    :data:`MEAN_CI_KIND`); (NaN, NaN) with fewer than 2 values."""
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


def verdict(
    a: str,
    b: str,
    probs: tuple[float, float, float],
    *,
    lower_is_better: bool,
    threshold: float = BAYES_THRESHOLD,
) -> str:
    """One plain verdict from the Bayesian correlated t-test's probabilities.

    Args:
        a, b: the methods (the difference is ``a − b``).
        probs: :func:`bayes_correlated_t`'s ``(P(a − b < −rope), P(rope), P(a − b > rope))``.
        lower_is_better: the metric's direction.
        threshold: the posterior probability a verdict needs.

    Returns:
        ``"<a> better"``, ``"<b> better"``, :data:`EQUIVALENT` or :data:`INCONCLUSIVE` (also
        when the probabilities are NaN).
    """
    left, inside, right = probs
    a_better, b_better = (left, right) if lower_is_better else (right, left)
    if a_better >= threshold:
        return f"{a} better"
    if b_better >= threshold:
        return f"{b} better"
    if inside >= threshold:
        return EQUIVALENT
    return INCONCLUSIVE


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
    # probability[k]: P(doubled T+ = k) under random signs, built one rank at a time.
    probability = np.zeros(int(doubled.sum()) + 1)
    probability[0] = 1.0
    for rank in doubled:
        shifted = np.zeros_like(probability)
        shifted[rank:] = probability[:-rank]
        probability = 0.5 * (probability + shifted)
    low, high = probability[: observed + 1].sum(), probability[observed:].sum()
    return float(min(1.0, 2 * min(low, high)))


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


def paired_table(
    per_run: pd.DataFrame,
    ratios: Mapping[str, float],
    *,
    metrics: Sequence[str] = METRICS,
    ropes: Mapping[str, float] | None = None,
    level: float = LEVEL,
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """Every pair of methods per task and metric: mean difference, tests and effect sizes.

    Args:
        per_run: one row per selected run with ``task``, ``method``, ``seed`` and a column per
            metric (`engine.analysis.compare.per_run_metrics`).
        ratios: task -> ``n_test / n_train`` (:func:`test_train_ratios`).
        metrics: metric columns to compare.
        ropes: metric -> region of practical equivalence (in the metric's units) of the
            Bayesian test and TOST; a metric not named gets :data:`DEFAULT_ROPE`.
        level: confidence level of ``ci_low``/``ci_high`` (the corrected t interval).
        alpha: level of the Holm adjustments and of ``r_break_even``.

    Returns:
        :data:`PAIRED_COLUMNS` then :data:`EXTRA_COLUMNS`, one row per task × metric × pair
        (methods in the paper's order, ``a`` before ``b``, difference ``a − b``). ``family``
        names the Holm family of ``p_corrected_holm``: :data:`PRIMARY_FAMILY` for AMAE soft vs
        nominal, else ``exploratory: <task> <metric>``. ``rho_assumed`` is the correlation
        the corrected test assumes (``r/(1 + r)``), ``r_break_even`` the ``r`` where its p
        crosses ``alpha`` (:func:`break_even_ratio`), ``p_r<r>`` its p at each
        :data:`R_STRIP` ``r``; ``p_bayes_*`` the Bayesian correlated t-test's probabilities
        ("better" in the metric's own direction) and ``verdict`` its reading
        (:func:`verdict`); ``p_tost`` the equivalence test within ``rope``.
    """
    rows = []
    for task in compare.task_order(per_run["task"].unique()):
        ratio = float(ratios[task])
        for metric in metrics:
            scores = compare.score_frame(per_run, metric, [task])
            rope = float((ropes or {}).get(metric, DEFAULT_ROPE))
            rows.extend(_pairs_of(scores, task, metric, ratio, rope, level, alpha))
    table = pd.DataFrame(rows, columns=[*PAIRED_COLUMNS, *EXTRA_COLUMNS])
    if table.empty:
        return table
    table["family"] = [
        PRIMARY_FAMILY
        if _is_primary(r.metric, r.method_a, r.method_b)
        else f"{EXPLORATORY}: {r.task} {r.metric}"
        for r in table.itertuples()
    ]
    table["p_corrected_holm"] = _holm_by(table, "p_corrected", "family", alpha)
    table["p_wilcoxon_holm"] = _holm_by(
        table.assign(_family=table["task"] + " " + table["metric"]), "p_wilcoxon", "_family", alpha
    )
    return table


def _pairs_of(
    scores: pd.DataFrame,
    task: str,
    metric: str,
    ratio: float,
    rope: float,
    level: float,
    alpha: float,
) -> list[dict[str, object]]:
    """The rows of one task and metric (Holm columns filled later)."""
    wide = scores.pivot_table(index="seed", columns="method", values="value", aggfunc="first")
    methods = [m for m in pd.unique(scores["method"]) if m in wide.columns]
    rows = []
    for a, b in itertools.combinations(methods, 2):
        diffs = (wide[a] - wide[b]).dropna().to_numpy()
        test = corrected_resampled_t(diffs, ratio, level=level)
        probs = bayes_correlated_t(test, rope)
        lower, _, higher = probs  # P(a − b < −rope), P(a − b > rope)
        a_better, b_better = (lower, higher) if metric in LOWER_BETTER else (higher, lower)
        rows.append(
            {
                "task": task,
                "metric": metric,
                "method_a": a,
                "method_b": b,
                "n_seeds": test.n,
                "mean_diff": test.mean,
                "ci_low": test.ci_low,
                "ci_high": test.ci_high,
                "p_corrected": test.p,
                "rho_assumed": rho_of_ratio(ratio),
                "r_break_even": break_even_ratio(test, alpha=alpha),
                "p_wilcoxon": wilcoxon_exact_p(diffs) if diffs.size >= 2 else math.nan,
                "p_wilcoxon_holm": math.nan,
                "d_z": d_z(diffs),
                "rank_biserial": rank_biserial(diffs),
                "p_bayes_a_better": a_better,
                "p_bayes_equivalent": probs[1],
                "p_bayes_b_better": b_better,
                "verdict": verdict(a, b, probs, lower_is_better=metric in LOWER_BETTER),
                "sd_diff": test.sd,
                "p_naive_t": test.p_naive,
                "p_corrected_holm": math.nan,
                "family": "",
                "test_train_ratio": ratio,
                **{r_column(r): corrected_p_at(test, r) for r in R_STRIP},
                "rope": rope,
                "p_tost": tost_p(test, rope),
            }
        )
    return rows


def _is_primary(metric: str, a: str, b: str) -> bool:
    return metric == PRIMARY_METRIC and BASELINE in (a, b) and a != b


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


def _holm_by(table: pd.DataFrame, column: str, family: str, alpha: float) -> np.ndarray:
    """Holm-adjusted ``column`` within each ``family`` (NaN p-values stay NaN, outside)."""
    out = np.full(len(table), np.nan)
    for _, index in table.groupby(family, sort=False).indices.items():
        p = table[column].to_numpy()[index]
        ok = np.isfinite(p)
        if ok.any():
            out[index[ok]] = holm(p[ok])
    return out


def primary_endpoint(table: pd.DataFrame, *, alpha: float = ALPHA) -> pd.DataFrame:
    """The declared primary endpoint's rows, each as ``soft − nominal`` (negative AMAE
    difference = the soft method errs less).

    Args:
        table: from :func:`paired_table`.
        alpha: the family-wise level of ``significant``.

    Returns:
        One row per task and soft method: ``task``, ``method``, ``n_seeds``, ``mean_diff``,
        ``ci_low``, ``ci_high``, ``p_corrected``, ``p_corrected_holm`` (Holm over the family
        of 8), ``p_wilcoxon``, ``d_z``, ``rank_biserial``, ``significant``
        (``p_corrected_holm < alpha``), ``rho_assumed``, ``test_train_ratio``,
        ``r_break_even``, the
        :data:`R_STRIP` p columns, ``p_bayes_soft_better``, ``p_bayes_equivalent``,
        ``p_bayes_baseline_better``, ``p_tost``, ``rope`` and ``verdict``.
    """
    rows = table[table["family"] == PRIMARY_FAMILY]
    out = []
    for record in rows.to_dict("records"):
        r = SimpleNamespace(**{k: v for k, v in record.items() if k.isidentifier()})
        flip = r.method_a == BASELINE  # pairs are a − b; the endpoint reads soft − nominal
        sign = -1.0 if flip else 1.0
        low, high = (-r.ci_high, -r.ci_low) if flip else (r.ci_low, r.ci_high)
        out.append(
            {
                "task": r.task,
                "method": r.method_b if flip else r.method_a,
                "n_seeds": r.n_seeds,
                "mean_diff": sign * r.mean_diff,
                "ci_low": low,
                "ci_high": high,
                "p_corrected": r.p_corrected,
                "p_corrected_holm": r.p_corrected_holm,
                "p_wilcoxon": r.p_wilcoxon,
                "d_z": sign * r.d_z,
                "rank_biserial": sign * r.rank_biserial,
                "significant": bool(r.p_corrected_holm < alpha),
                "rho_assumed": r.rho_assumed,
                "test_train_ratio": r.test_train_ratio,
                "r_break_even": r.r_break_even,
                **{r_column(x): record[r_column(x)] for x in R_STRIP},
                "p_bayes_soft_better": r.p_bayes_b_better if flip else r.p_bayes_a_better,
                "p_bayes_equivalent": r.p_bayes_equivalent,
                "p_bayes_baseline_better": r.p_bayes_a_better if flip else r.p_bayes_b_better,
                "p_tost": r.p_tost,
                "rope": r.rope,
                "verdict": r.verdict,
            }
        )
    return pd.DataFrame(out)


def mean_intervals(
    per_run: pd.DataFrame,
    ratios: Mapping[str, float],
    *,
    metrics: Sequence[str] = METRICS,
    level: float = LEVEL,
) -> pd.DataFrame:
    """Table 4's means with a confidence interval each (see :data:`MEAN_CI_KIND`).

    Returns:
        One row per task, method and metric: ``task``, ``method``, ``metric``, ``n_seeds``,
        ``mean``, ``sd``, ``ci_low``, ``ci_high`` (corrected), ``naive_ci_low``,
        ``naive_ci_high`` (the ordinary t interval ``mean ± t · s / sqrt(n)``, which treats
        the seeds as independent samples), ``ci_kind``.
    """
    rows = []
    for (task, method), part in per_run.groupby(["task", "method"], sort=False):
        ratio = float(ratios[str(task)])
        for metric in metrics:
            values = part[metric].astype(float).dropna().to_numpy()
            low, high = corrected_mean_interval(values, ratio, level=level)
            naive_low, naive_high = corrected_mean_interval(values, 0.0, level=level)
            rows.append(
                {
                    "task": task,
                    "method": method,
                    "metric": metric,
                    "n_seeds": values.size,
                    "mean": float(values.mean()) if values.size else math.nan,
                    "sd": float(values.std(ddof=1)) if values.size > 1 else math.nan,
                    "ci_low": low,
                    "ci_high": high,
                    "naive_ci_low": naive_low,
                    "naive_ci_high": naive_high,
                    "ci_kind": MEAN_CI_KIND,
                }
            )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Hierarchical bootstrap
# --------------------------------------------------------------------------------------------


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
        One row per task × metric × pair (as :func:`paired_table` orders them): ``task``,
        ``metric``, ``method_a``, ``method_b``, ``boot_ci_low``, ``boot_ci_high``,
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
            for a, b in itertools.combinations(methods, 2):
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


def reading(row: Mapping[str, object], *, alpha: float = ALPHA) -> str:
    """One line on a paired row that keeps "consistent over seeds" (the Wilcoxon) apart from
    "different by the corrected test" (which assumes a between-seed correlation ρ), like
    with like: both p-values unadjusted.

    Args:
        row: a row of :func:`paired_table` (a mapping with its columns; ``rho_assumed`` and
            ``r_break_even`` are derived from ``test_train_ratio`` when absent).
        alpha: significance level.
    """
    a, b, metric = row["method_a"], row["method_b"], str(row["metric"]).upper()
    over_seeds = float(row["p_wilcoxon"]) < alpha  # type: ignore[arg-type]
    corrected = float(row["p_corrected"]) < alpha  # type: ignore[arg-type]
    direction = "lower" if float(row["mean_diff"]) < 0 else "higher"  # type: ignore[arg-type]
    rho = row.get("rho_assumed")
    if rho is None or _missing(rho):
        rho = rho_of_ratio(float(row["test_train_ratio"]))  # type: ignore[arg-type]
    named = f"the corrected t-test (assuming ρ = {float(rho):.2f})"  # type: ignore[arg-type]
    unadjusted = "both p unadjusted"
    if over_seeds and corrected:
        return (
            f"{a}'s {metric} is {direction} than {b}'s on most seeds (Wilcoxon) and by {named} "
            f"({unadjusted})."
        )
    if over_seeds:
        return (
            f"{a}'s {metric} is {direction} than {b}'s on most seeds (Wilcoxon, seeds taken as "
            f"independent), but not by {named}{_break_even_clause(row)} ({unadjusted})."
        )
    if corrected:
        return (
            f"{a}'s {metric} is {direction} than {b}'s by {named}, though the Wilcoxon over "
            f"seeds does not separate them ({unadjusted})."
        )
    return (
        f"Neither {named} nor the Wilcoxon separates {a} and {b} in {metric} ({unadjusted}): "
        "no evidence of a difference, which is not evidence of none (see the verdict)."
    )


def _break_even_clause(row: Mapping[str, object]) -> str:
    """ ", which it would at ρ below 0.15" from the row's break-even ratio, or nothing."""
    r_star = row.get("r_break_even")
    if r_star is None or _missing(r_star) or not float(r_star) > 0:  # type: ignore[arg-type]
        return ""
    return f", which it would at ρ below {rho_of_ratio(float(r_star)):.2f}"  # type: ignore[arg-type]


def _missing(value: object) -> bool:
    try:
        return math.isnan(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return True
