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

import math
from collections.abc import Mapping, Sequence
from types import SimpleNamespace

import numpy as np
import pandas as pd

from engine.analysis import compare
from engine.analysis.metrics import (
    LOWER_IS_BETTER,
    METRIC_LABELS,
    METRICS,
    PRIMARY_METRIC,
    PROBABILITY_LOWER_IS_BETTER,
)
from engine.analysis.paired_bootstrap import hierarchical_bootstrap
from engine.analysis.paired_tests import (
    ALPHA,
    BAYES_THRESHOLD,
    EQUIVALENCE_ALPHA,
    EQUIVALENT,
    INCONCLUSIVE,
    LEVEL,
    MIN_VERDICT_SEEDS,
    NO_SPREAD,
    NOT_ESTIMABLE,
    CorrectedT,
    HodgesLehmann,
    bayes_correlated_t,
    better_method,
    break_even_ratio,
    corrected_mean_interval,
    corrected_p_at,
    corrected_resampled_t,
    d_z,
    hodges_lehmann,
    holm,
    not_estimable_reason,
    rank_biserial,
    ratio_of_rho,
    rho_of_ratio,
    tost_p,
    verdict,
    wilcoxon_exact_p,
)
from engine.analysis.table_columns import PAIRED, R_STRIP, r_column

# The tests of one set of differences live in `engine.analysis.paired_tests`, the bootstrap in
# `engine.analysis.paired_bootstrap`; callers read them here, beside the tables.
__all__ = [
    "ALPHA",
    "BASELINE",
    "BAYES_THRESHOLD",
    "BOOTSTRAP_CI_KIND",
    "DEFAULT_ROPE",
    "EQUIVALENCE_ALPHA",
    "EQUIVALENT",
    "EXPLORATORY",
    "EXPLORATORY_SUFFIX",
    "EXTRA_COLUMNS",
    "INCONCLUSIVE",
    "LEVEL",
    "LOWER_BETTER",
    "MEAN_CI_KIND",
    "MIN_VERDICT_SEEDS",
    "NOT_ESTIMABLE",
    "NO_SPREAD",
    "PAIRED_COLUMNS",
    "PRIMARY_FAMILY",
    "PRIMARY_METRIC",
    "ROPES",
    "R_STRIP",
    "VERDICT_FIRST_COLUMNS",
    "VERDICT_RULE",
    "CorrectedT",
    "HodgesLehmann",
    "bayes_correlated_t",
    "better_method",
    "break_even_ratio",
    "corrected_mean_interval",
    "corrected_p_at",
    "corrected_resampled_t",
    "d_z",
    "families_sentence",
    "hierarchical_bootstrap",
    "hodges_lehmann",
    "holm",
    "mean_intervals",
    "not_estimable_reason",
    "paired_table",
    "primary_endpoint",
    "r_column",
    "rank_biserial",
    "ratio_of_rho",
    "reading",
    "rho_of_ratio",
    "test_train_ratios",
    "tost_p",
    "verdict",
    "verdict_note",
    "wilcoxon_exact_p",
]

BASELINE: str = "nominal"
# PRIMARY_METRIC is declared once, in the metric registry, and imported above: callers keep
# reading it here beside the rest of the primary endpoint (baseline, family).
PRIMARY_FAMILY: str = (
    f"primary: {METRIC_LABELS[PRIMARY_METRIC]}, each soft method vs nominal, both tasks"
)
EXPLORATORY: str = "exploratory"
#: Appended to a verdict other than "inconclusive" on a row outside the primary family: the
#: verdict column itself says the row is exploratory (its "better" is Holm-controlled only
#: within its own task and metric).
EXPLORATORY_SUFFIX: str = f" ({EXPLORATORY})"
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
#: The verdict's rule in words, once, for every page, the report and `softgrade stats`
#: (docs/statistics.md gives its operating characteristics).
VERDICT_RULE: str = (
    f"Verdict (the Bayesian correlated t-test on the corrected variance): “A better” when "
    f"P(A better by more than the ROPE) ≥ {BAYES_THRESHOLD:g}, i.e. the corrected 95 % "
    f"interval lies wholly beyond the ROPE, and the corrected p is below {ALPHA:g} after Holm "
    f"within the row's family; “equivalent” when each tail beyond the ROPE has posterior "
    f"< {EQUIVALENCE_ALPHA:g}, which is TOST p < {EQUIVALENCE_ALPHA:g} (the corrected 90 % "
    f"interval inside ± the ROPE); else “inconclusive”. Rows outside the primary family say "
    f"“({EXPLORATORY})” in the verdict. Fewer than {MIN_VERDICT_SEEDS} seeds, or no spread "
    "across seeds, give “not estimable”."
)
#: Default region of practical equivalence: |difference| below it is "no practical
#: difference" (0.01 AMAE, the issue's default; the same on the other 0-1 grade metrics).
DEFAULT_ROPE: float = 0.01
ROPES: dict[str, float] = {metric: DEFAULT_ROPE for metric in METRICS}
#: Metrics of which a lower value is better (grade, probability metrics and the KL × CPPD
#: divergence), for the direction of "A better".
LOWER_BETTER: frozenset[str] = LOWER_IS_BETTER | PROBABILITY_LOWER_IS_BETTER | {"kld"}


#: The columns of `jobs stats` and of the paired table, in order (extras follow them); every
#: view of the table is declared once, in `engine.analysis.table_columns.PAIRED`.
PAIRED_COLUMNS: tuple[str, ...] = PAIRED.view("computed")
#: The columns a reader needs first, in order, on every surface that shows the paired table
#: (the Statistics tab's compact table, the report, `softgrade stats`): what was compared,
#: the difference with its interval, the verdict and the Holm-adjusted p; the rest of the
#: paired columns (p across r, Wilcoxon, Bayesian probabilities, TOST, effect sizes) follow.
VERDICT_FIRST_COLUMNS: tuple[str, ...] = PAIRED.view("verdict_first")
EXTRA_COLUMNS: tuple[str, ...] = PAIRED.view("extra")


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
    table["verdict"] = [_controlled_verdict(r, alpha) for r in table.to_dict("records")]
    return table


def families_sentence(table: pd.DataFrame) -> str:
    """This table's own Holm families in one sentence: the primary family's size (or that
    the study has none) and how many exploratory families of what sizes."""
    if table.empty:
        return "No comparisons, so no Holm family."
    tested = table[table["p_corrected_holm"].notna()]
    sizes = tested.groupby("family", sort=False).size()
    primary = int(sizes.get(PRIMARY_FAMILY, 0))
    first = (
        f"The primary endpoint ({PRIMARY_FAMILY}) is one confirmatory Holm family of "
        f"{primary} comparison{'s' if primary != 1 else ''} here"
        if primary
        else "This study has no primary-endpoint comparison (it needs AMAE with nominal and "
        "a soft method), so no family is confirmatory"
    )
    rest = sizes.drop(PRIMARY_FAMILY, errors="ignore")
    if rest.empty:
        return f"{first}; no exploratory family."
    counts = ", ".join(f"{n} of {k}" for k, n in sorted(rest.value_counts().items(), reverse=True))
    return (
        f"{first}; every other row is exploratory, Holm-adjusted within its task and metric "
        f"({len(rest)} famil{'ies' if len(rest) != 1 else 'y'}: {counts} comparisons)."
    )


def _controlled_verdict(row: Mapping[str, object], alpha: float) -> str:
    """The posterior's verdict under the table's multiplicity rule: a "better" stands only
    when the corrected p is also significant after Holm within the row's family (so a
    family of comparisons issues "better" no more often than Holm allows), and every
    verdict off the primary family is labelled exploratory in the column itself."""
    text = str(row["verdict"])
    if text.startswith(NOT_ESTIMABLE) or text == INCONCLUSIVE:
        return text
    holm_p = float(row["p_corrected_holm"])  # type: ignore[arg-type]
    if better_method(text) is not None and not holm_p < alpha:
        return INCONCLUSIVE
    return text if row["family"] == PRIMARY_FAMILY else text + EXPLORATORY_SUFFIX


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
    for a, b in compare.method_pairs(methods):
        diffs = (wide[a] - wide[b]).dropna().to_numpy()
        test = corrected_resampled_t(diffs, ratio, level=level)
        sd = test.sd
        unestimable = not_estimable_reason(diffs)
        if unestimable == NO_SPREAD:
            # Every seed the same: the corrected p is exactly 0 or 1 and the posterior a
            # point, a certainty the seeds cannot give; leave the corrected family empty.
            test = _without_spread(test)
        probs = bayes_correlated_t(test, rope)
        lower, _, higher = probs  # P(a − b < −rope), P(a − b > rope)
        a_better, b_better = (lower, higher) if metric in LOWER_BETTER else (higher, lower)
        said = verdict(a, b, probs, lower_is_better=metric in LOWER_BETTER)
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
                "verdict": f"{NOT_ESTIMABLE}: {unestimable}" if unestimable else said,
                "sd_diff": sd,
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


def _without_spread(test: CorrectedT) -> CorrectedT:
    """A zero-spread test with its sd, p, interval and variance unknown (NaN), not 0 or 1:
    every test built on it (p across r, break-even r, posterior, TOST) then reads NaN."""
    nan = math.nan
    return CorrectedT(test.n, test.mean, nan, nan, nan, test.df, nan, nan, nan, nan)


def _is_primary(metric: str, a: str, b: str) -> bool:
    return metric == PRIMARY_METRIC and BASELINE in (a, b) and a != b


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


def reading(row: Mapping[str, object], *, alpha: float = ALPHA) -> str:
    """One line on a paired row that keeps "consistent over seeds" (the Wilcoxon) apart from
    "different by the corrected test" (which assumes a between-seed correlation ρ), like
    with like: both p-values unadjusted.

    Args:
        row: a row of :func:`paired_table` (a mapping with its columns; ``rho_assumed`` and
            ``r_break_even`` are derived from ``test_train_ratio`` when absent).
        alpha: significance level.
    """
    said = str(row.get("verdict", ""))
    if said.startswith(NOT_ESTIMABLE):
        return (
            f"No verdict: {said}; a verdict needs at least {MIN_VERDICT_SEEDS} seeds whose "
            "differences vary."
        )
    return f"{_tests_reading(row, alpha)}{verdict_note(row, alpha)}"


def _tests_reading(row: Mapping[str, object], alpha: float) -> str:
    """What the corrected test and the Wilcoxon say of one row, like with like."""
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


def verdict_note(row: Mapping[str, object], alpha: float) -> str:
    """Why the verdict is not what the corrected p beside it seems to say, or nothing: a
    posterior past the threshold held back by Holm, a significant difference within the
    ROPE, or one whose interval still reaches into it."""
    said = str(row.get("verdict", ""))
    if not said or _missing(row.get("p_corrected")):
        return ""
    p, holm_p = float(row["p_corrected"]), row.get("p_corrected_holm")  # type: ignore[arg-type]
    rope = float(row.get("rope", DEFAULT_ROPE))  # type: ignore[arg-type]
    posterior = max(_number(row.get("p_bayes_a_better")), _number(row.get("p_bayes_b_better")))
    if said == INCONCLUSIVE and posterior >= BAYES_THRESHOLD:
        return (
            f" The verdict stays inconclusive although the posterior beyond the ROPE reaches "
            f"{posterior:.3f}: after Holm over its family the corrected p is "
            f"{_number(holm_p):.3g}, not below {alpha:g}."
        )
    if said == INCONCLUSIVE and p < alpha:
        holm_clause = (
            f" and its family's Holm-adjusted p ({_number(holm_p):.3g}) is not below {alpha:g}"
            if not _number(holm_p) < alpha
            else ""
        )
        return (
            f" The corrected p ({p:.3g}) is below {alpha:g}, so the interval excludes 0, yet "
            f"the verdict is inconclusive: a “better” needs the interval wholly beyond the "
            f"ROPE (± {rope:g}), and it reaches into it{holm_clause}; the difference may be "
            "too small to matter."
        )
    if said.startswith(EQUIVALENT) and p < alpha:
        return (
            f" Equivalent although the corrected p is {p:.3g}: the difference is detectable "
            f"but lies within the ROPE (± {rope:g}), too small to matter by that bound."
        )
    return ""


def _number(value: object) -> float:
    return math.nan if _missing(value) else float(value)  # type: ignore[arg-type]


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
