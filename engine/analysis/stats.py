"""Statistical comparison of methods across seeds (paper, "Statistical analysis").

Every test takes a long DataFrame ``scores`` with one row per run score: columns
``method``, ``seed``, ``value`` (and ``task`` for the two-way ANOVA); ``value`` is any
per-run number such as AMAE or the KL x CPPD divergence. Each function returns a
:class:`TestResult`: a table with one row per test, method or pair, a one-line reading in
plain language for people who do not read p-values daily, and a note when something could
not be tested. Too little data (one seed, one method) never raises: the table comes back
empty and the note says what is missing, so a page can show a study while it is still
running.

The statistics themselves come from scipy and statsmodels; this module only selects the
data, guards the small-sample cases and words the result. Rows whose ``value`` is missing
(e.g. a QWK that is undefined) are left out and counted in the note. Significance is
judged at ``alpha = 0.05`` unless a function takes another ``alpha``.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.multicomp import pairwise_tukeyhsd
from statsmodels.stats.multitest import multipletests

logger = logging.getLogger(__name__)

ALPHA: float = 0.05

# statsmodels.stats.multitest.multipletests method -> name shown in tables and readings.
# "none" keeps raw p-values (for a single planned comparison).
CORRECTIONS: dict[str, str] = {
    "holm": "Holm",
    "bonferroni": "Bonferroni",
    "holm-sidak": "Holm–Šidák",
    "sidak": "Šidák",
    "simes-hochberg": "Hochberg",
    "hommel": "Hommel",
    "fdr_bh": "Benjamini–Hochberg",
    "fdr_by": "Benjamini–Yekutieli",
    "none": "unadjusted",
}

# anova_lm row labels -> the factor names of the paper's Table 5.
_ANOVA_FACTORS: dict[str, str] = {
    "C(method)": "Method",
    "C(task)": "Task",
    "C(method):C(task)": "Method × Task",
    "Residual": "Residual",
}


# eq=False: the generated __eq__/__hash__ would compare DataFrames element-wise and fail.
@dataclass(frozen=True, eq=False)
class TestResult:
    """Outcome of one statistical procedure.

    Attributes:
        table: one row per test, method or pair; empty when nothing could be tested.
        reading: one line in plain language (equal to ``note`` when nothing was tested).
        note: what was left out or is missing, e.g. "needs at least 3 seeds per method".
    """

    __test__ = False  # not a pytest test class, despite the name

    table: pd.DataFrame
    reading: str
    note: str | None = None


@dataclass(frozen=True, eq=False)
class TukeyResult(TestResult):
    """Tukey HSD outcome: pairwise table plus homogeneous subsets.

    Attributes:
        subsets: one row per method in mean order, columns ``method``, ``n``, ``mean`` and
            ``S1``, ``S2``, ... holding the method's mean where it belongs to that subset
            and NaN elsewhere (the layout of the paper's Table 6).
    """

    subsets: pd.DataFrame = field(default_factory=pd.DataFrame)


def shapiro_by_method(scores: pd.DataFrame) -> TestResult:
    """Shapiro–Wilk normality test of each method's values across seeds.

    Args:
        scores: long frame with columns ``method``, ``seed``, ``value``.

    Returns:
        Table with columns ``method``, ``n``, ``W``, ``p``, ``normal`` (``p >= 0.05``), one
        row per method; ``W``, ``p`` and ``normal`` are missing for a method with fewer
        than 3 values (the test's minimum) or with all values identical.
    """
    data, dropped = _prepare(scores)
    columns = ["method", "n", "W", "p", "normal"]
    notes = _dropped_note(dropped)
    rows, short, constant = [], [], []
    for method, values in _groups(data):
        row = {"method": method, "n": values.size, "W": np.nan, "p": np.nan, "normal": pd.NA}
        if values.size < 3:
            short.append(f"{method} ({values.size})")
        elif np.ptp(values) == 0:
            # scipy returns W = p = 1 with a warning here; "normal" would be misleading.
            constant.append(str(method))
        else:
            result = stats.shapiro(values)
            row.update(W=result.statistic, p=result.pvalue, normal=result.pvalue >= ALPHA)
        rows.append(row)
    if short:
        notes.append(
            "Shapiro–Wilk needs at least 3 seeds per method; too few for " + _join(short) + "."
        )
    if constant:
        notes.append(f"All values are identical for {_join(constant)}; not tested.")
    table = pd.DataFrame(rows, columns=columns)
    table["normal"] = table["normal"].astype("boolean")
    note = " ".join(notes) or None
    tested = table.dropna(subset=["p"])
    if tested.empty:
        return _nothing(columns, note or "No scores to test.")

    normal = tested[tested["normal"]]
    not_normal = tested[~tested["normal"]]
    parts = []
    if not normal.empty:
        parts.append(f"Values look normal for {_join(normal['method'])}")
    if not not_normal.empty:
        details = [
            f"{m} ({_fmt_p(p)})" for m, p in zip(not_normal["method"], not_normal["p"], strict=True)
        ]
        parts.append(f"not normal for {_join(details)}")
    reading = "; ".join(parts) + " (Shapiro–Wilk, α = 0.05)."
    return TestResult(table=table, reading=reading[0].upper() + reading[1:], note=note)


def kruskal_across_methods(scores: pd.DataFrame) -> TestResult:
    """Kruskal–Wallis H test: do the methods' value distributions differ at all?

    Methods with fewer than 2 values are left out (named in the note).

    Args:
        scores: long frame with columns ``method``, ``seed``, ``value``.

    Returns:
        One-row table with columns ``test``, ``methods``, ``n``, ``H``, ``df``, ``p``.
    """
    data, dropped = _prepare(scores)
    columns = ["test", "methods", "n", "H", "df", "p"]
    notes = _dropped_note(dropped)
    groups = _groups(data)
    usable = [(method, values) for method, values in groups if values.size >= 2]
    left_out = [f"{method} ({values.size})" for method, values in groups if values.size < 2]
    if left_out:
        notes.append("Left out, fewer than 2 seeds: " + _join(left_out) + ".")
    if len(usable) < 2:
        need = (
            f"Kruskal–Wallis needs at least 2 methods with 2 or more seeds each; "
            f"this study has {len(usable)}."
        )
        return _nothing(columns, " ".join([need, *notes]))
    pooled = np.concatenate([values for _, values in usable])
    if np.ptp(pooled) == 0:
        identical = "All values are identical; nothing to compare."
        return _nothing(columns, " ".join([identical, *notes]))

    result = stats.kruskal(*(values for _, values in usable))
    table = pd.DataFrame(
        [
            {
                "test": "Kruskal–Wallis",
                "methods": len(usable),
                "n": pooled.size,
                "H": result.statistic,
                "df": len(usable) - 1,
                "p": result.pvalue,
            }
        ],
        columns=columns,
    )
    verdict = (
        "Methods differ overall"
        if result.pvalue < ALPHA
        else "No overall difference between methods detected"
    )
    reading = f"{verdict} (Kruskal–Wallis H = {_fmt(result.statistic)}, {_fmt_p(result.pvalue)})."
    return TestResult(table=table, reading=reading, note=" ".join(notes) or None)


def wilcoxon_pairwise(
    scores: pd.DataFrame, correction: str = "holm", *, alpha: float = ALPHA
) -> TestResult:
    """Wilcoxon signed-rank tests between every pair of methods, paired by seed.

    A pair uses only the seeds run for both methods (the same split, so like is compared
    with like). scipy's ``method="auto"`` gives exact p-values for small samples, so with
    ``n`` paired seeds the smallest reachable two-sided p is ``2 / 2**n``; the note says
    when that cannot fall below ``alpha``. Zero differences are dropped (Wilcox). p-values
    of all tested pairs are adjusted together with ``multipletests``.

    Args:
        scores: long frame with columns ``method``, ``seed``, ``value``; at most one row per
            (method, seed), so filter to one task and metric first.
        correction: a :data:`CORRECTIONS` key (statsmodels ``multipletests`` method, or
            ``"none"``).
        alpha: family-wise significance level for ``significant``.

    Returns:
        One row per tested pair with columns ``method_a``, ``method_b``, ``n_seeds``,
        ``median_diff`` (a − b, ``b`` the method listed first), ``statistic``, ``p``,
        ``p_adj``, ``correction``, ``significant``.

    Raises:
        ValueError: for an unknown correction or a repeated (method, seed).
    """
    if correction not in CORRECTIONS:
        raise ValueError(f"{correction=} must be one of {sorted(CORRECTIONS)}")
    data, dropped = _prepare(scores)
    repeated = data.duplicated(["method", "seed"])
    if repeated.any():
        raise ValueError(
            "scores hold more than one value per (method, seed); filter to one task first"
        )
    columns = [
        "method_a",
        "method_b",
        "n_seeds",
        "median_diff",
        "statistic",
        "p",
        "p_adj",
        "correction",
        "significant",
    ]
    notes = _dropped_note(dropped)
    wide = data.pivot(index="seed", columns="method", values="value")
    methods = list(pd.unique(data["method"]))
    rows, too_few, weak = [], [], []
    # b the earlier method: one sign convention with the paired table (a − b, the reference
    # method Nominal subtracted; `engine.analysis.compare.method_pairs`).
    for method_b, method_a in itertools.combinations(methods, 2):
        paired = wide[[method_a, method_b]].dropna()
        n = len(paired)
        if n < 2:
            too_few.append((method_a, method_b, n))
            continue
        diff = (paired[method_a] - paired[method_b]).to_numpy()
        if not diff.any():
            # Identical on every seed: nothing to rank; scipy would warn and return p = 1.
            statistic, p_value = 0.0, 1.0
        else:
            result = stats.wilcoxon(paired[method_a], paired[method_b])
            statistic, p_value = float(result.statistic), float(result.pvalue)
            n_nonzero = int(np.count_nonzero(diff))  # zero differences carry no rank
            if 2.0 / 2**n_nonzero >= alpha:
                weak.append(n_nonzero)
        rows.append(
            {
                "method_a": method_a,
                "method_b": method_b,
                "n_seeds": n,
                "median_diff": float(np.median(diff)),
                "statistic": statistic,
                "p": p_value,
            }
        )
    if too_few:
        most = max(n for *_, n in too_few)
        if not rows:
            need = f"Wilcoxon needs at least 2 seeds run for both methods; this study has {most}."
            return _nothing(columns, " ".join([need, *notes]))
        pairs = [f"{a} vs {b}" for a, b, _ in too_few]
        notes.append("Not tested, fewer than 2 shared seeds: " + _join(pairs) + ".")
    if weak:
        smallest = min(weak)
        notes.append(
            f"With {smallest} differing paired seeds a Wilcoxon test cannot reach p < {alpha:g} "
            f"(smallest possible p = {2.0 / 2**smallest:.3g}); run more seeds."
        )

    table = pd.DataFrame(rows, columns=columns)
    if correction == "none":
        table["p_adj"] = table["p"]
    else:
        table["p_adj"] = multipletests(table["p"].to_numpy(), alpha=alpha, method=correction)[1]
    table["correction"] = CORRECTIONS[correction]
    table["significant"] = table["p_adj"] < alpha
    reading = _wilcoxon_reading(table, correction)
    return TestResult(table=table, reading=reading, note=" ".join(notes) or None)


def two_way_anova(scores_with_task: pd.DataFrame) -> TestResult:
    """Two-way ANOVA of value on method, task and their interaction (paper Table 5).

    Fits ``value ~ C(method) * C(task)`` by OLS and reads type-II sums of squares with
    ``statsmodels.stats.anova.anova_lm(typ=2)``, which stay meaningful when seeds are
    unbalanced across cells.

    Args:
        scores_with_task: long frame with columns ``method``, ``task``, ``seed``, ``value``.

    Returns:
        Rows ``Method``, ``Task``, ``Method × Task``, ``Residual`` with columns ``factor``,
        ``SS``, ``DF``, ``F``, ``p`` (``F`` and ``p`` missing on the residual row).
    """
    data, dropped = _prepare(scores_with_task, extra=("task",))
    columns = ["factor", "SS", "DF", "F", "p"]
    notes = _dropped_note(dropped)
    n_methods, n_tasks = data["method"].nunique(), data["task"].nunique()
    cells = data.groupby(["method", "task"]).size()
    missing_cells = n_methods * n_tasks - len(cells)
    residual_df = len(data) - n_methods * n_tasks
    problem = None
    if n_methods < 2 or n_tasks < 2:
        problem = (
            f"Two-way ANOVA needs at least 2 methods and 2 tasks; "
            f"this study has {n_methods} and {n_tasks}."
        )
    elif missing_cells:
        problem = f"Two-way ANOVA needs every method run on every task; {missing_cells} missing."
    elif residual_df < 1:
        problem = "Two-way ANOVA needs more than 1 seed per method and task."
    elif np.ptp(data["value"].to_numpy()) == 0:
        problem = "All values are identical; nothing to compare."
    if problem:
        return _nothing(columns, " ".join([problem, *notes]))

    model = smf.ols("value ~ C(method) * C(task)", data=data).fit()
    anova = anova_lm(model, typ=2)
    table = pd.DataFrame(
        {
            "factor": [_ANOVA_FACTORS[name] for name in anova.index],
            "SS": anova["sum_sq"].to_numpy(),
            "DF": anova["df"].round().astype(int).to_numpy(),
            "F": anova["F"].to_numpy(),
            "p": anova["PR(>F)"].to_numpy(),
        },
        columns=columns,
    )
    by_factor = table.set_index("factor")

    def _effect(factor: str, yes: str, no: str) -> str:
        f_value, p_value = by_factor.loc[factor, "F"], by_factor.loc[factor, "p"]
        significant = p_value < ALPHA
        return f"{yes if significant else no} (F = {_fmt(f_value)}, {_fmt_p(p_value)})"

    reading = (
        "; ".join(
            [
                _effect("Method", "Values differ by method", "No difference by method"),
                _effect("Task", "they differ by task", "no difference by task"),
                # A non-significant interaction is no evidence that methods rank alike
                # across tasks (the runs are not independent, and the seed-blocked ANOVA
                # per task tells its own story), so the reading does not claim it.
                _effect(
                    "Method × Task",
                    "the method differences depend on the task",
                    "no method × task interaction detected",
                ),
            ]
        )
        + "."
    )
    return TestResult(table=table, reading=reading, note=" ".join(notes) or None)


def tukey_hsd(
    scores: pd.DataFrame, alpha: float = ALPHA, *, descending: bool = False
) -> TukeyResult:
    """Tukey HSD pairwise comparison of methods and their homogeneous subsets (Table 6).

    Uses ``statsmodels.stats.multicomp.pairwise_tukeyhsd``, a one-way Tukey test on the
    values pooled over whatever else varies (e.g. both tasks, as in the paper's Table 6).
    Its error term therefore still contains the task effect, so it is somewhat more
    conservative than SPSS's post hoc after a two-way ANOVA, which uses that model's
    residual mean square. Methods with fewer than 2 values are left out.

    Args:
        scores: long frame with columns ``method``, ``seed``, ``value`` (``task`` ignored).
        alpha: family-wise significance level.
        descending: order subsets and rows from the highest mean down (for lower-is-better
            metrics this lists the worst method first, as the paper does).

    Returns:
        ``table``: one row per pair, columns ``group1``, ``group2``, ``meandiff``
        (mean of group2 − mean of group1), ``p_adj``, ``lower``, ``upper``, ``reject``;
        ``subsets``: see :class:`TukeyResult`.
    """
    data, dropped = _prepare(scores)
    columns = ["group1", "group2", "meandiff", "p_adj", "lower", "upper", "reject"]
    notes = _dropped_note(dropped)
    data["method"] = data["method"].astype(str)  # statsmodels sorts groups; keep them uniform
    sizes = data.groupby("method", sort=False).size()
    left_out = [f"{m} ({n})" for m, n in sizes.items() if n < 2]
    if left_out:
        notes.append("Left out, fewer than 2 seeds: " + _join(left_out) + ".")
    data = data[data["method"].isin(sizes[sizes >= 2].index)]
    n_methods = data["method"].nunique()
    problem = None
    if n_methods < 2:
        problem = (
            f"Tukey HSD needs at least 2 methods with 2 or more seeds each; "
            f"this study has {n_methods}."
        )
    elif (data.groupby("method")["value"].var() == 0).all():
        problem = "Every method has identical values across seeds; nothing to compare."
    if problem:
        return TukeyResult(
            table=pd.DataFrame(columns=columns),
            reading=" ".join([problem, *notes]),
            note=" ".join([problem, *notes]),
            subsets=pd.DataFrame(columns=["method", "n", "mean"]),
        )

    result = pairwise_tukeyhsd(data["value"].to_numpy(), data["method"].to_numpy(), alpha=alpha)
    # pairwise_tukeyhsd orders pairs as combinations of its sorted unique groups.
    pairs = list(itertools.combinations(result.groupsunique, 2))
    table = pd.DataFrame(
        {
            "group1": [str(a) for a, _ in pairs],
            "group2": [str(b) for _, b in pairs],
            "meandiff": result.meandiffs,
            "p_adj": result.pvalues,
            "lower": result.confint[:, 0],
            "upper": result.confint[:, 1],
            "reject": result.reject.astype(bool),
        },
        columns=columns,
    )
    means = data.groupby("method", sort=False)["value"].mean()
    not_different = {
        frozenset((a, b))
        for a, b, r in zip(table["group1"], table["group2"], table["reject"], strict=True)
        if not r
    }
    subsets = homogeneous_subsets(means.to_dict(), not_different, descending=descending)
    order = sorted(means.index, key=lambda m: means[m], reverse=descending)
    subset_table = pd.DataFrame(
        {"method": order, "n": [int(sizes[m]) for m in order], "mean": [means[m] for m in order]}
    )
    for index, members in enumerate(subsets, start=1):
        subset_table[f"S{index}"] = [means[m] if m in members else np.nan for m in order]

    if len(subsets) == 1:
        reading = f"No two methods differ (Tukey HSD, α = {alpha:g}); all form one subset."
    else:
        described = [
            f"S{i} = {_join(members)} ({_fmt_range([means[m] for m in members])})"
            for i, members in enumerate(subsets, start=1)
        ]
        reading = (
            f"Tukey HSD (α = {alpha:g}) finds {len(subsets)} subsets of methods whose means "
            f"do not differ: " + "; ".join(described) + "."
        )
    return TukeyResult(
        table=table, reading=reading, note=" ".join(notes) or None, subsets=subset_table
    )


def homogeneous_subsets(
    means: dict[str, float],
    not_different: set[frozenset[str]],
    *,
    descending: bool = False,
) -> list[list[str]]:
    """Group methods into homogeneous subsets, as SPSS prints after a post hoc test.

    Methods are ordered by mean; a subset is a run of consecutive methods in that order in
    which every pair is not significantly different, kept only if no longer such run
    contains it. Subsets may overlap (a method can be close to two groups that differ).

    Args:
        means: method -> mean value.
        not_different: pairs ``frozenset({a, b})`` that the test did not separate; pairs
            naming unknown methods are ignored.
        descending: order methods from the highest mean down instead of the lowest up.

    Returns:
        Subsets in mean order, each a list of methods in mean order; every method appears
        in at least one subset (alone if it differs from both neighbours).
    """
    order = sorted(means, key=lambda m: means[m], reverse=descending)  # stable for ties

    def _same(a: str, b: str) -> bool:
        return frozenset((a, b)) in not_different

    # For each start i, extend to the furthest end with all pairs inside not different.
    ends = []
    for start in range(len(order)):
        end = start
        while end + 1 < len(order) and all(
            _same(order[k], order[end + 1]) for k in range(start, end + 1)
        ):
            end += 1
        ends.append(end)
    # The ends never decrease with the start (a sub-run of a valid run is valid), so a run
    # is maximal exactly when it reaches further than the run starting one place earlier.
    return [
        order[start : end + 1]
        for start, end in enumerate(ends)
        if start == 0 or end > ends[start - 1]
    ]


def _prepare(scores: pd.DataFrame, extra: Sequence[str] = ()) -> tuple[pd.DataFrame, int]:
    """Check columns, coerce ``value`` to float and drop missing values.

    Returns:
        The cleaned copy and the number of rows dropped for a missing value.
    """
    needed = ["method", "seed", "value", *extra]
    missing = [column for column in needed if column not in scores.columns]
    if missing:
        raise ValueError(f"scores lack columns {missing}; got {list(scores.columns)}")
    data = scores[needed].copy()
    data["value"] = pd.to_numeric(data["value"], errors="coerce").astype(float)
    keep = data["value"].notna() & np.isfinite(data["value"])
    dropped = int((~keep).sum())
    if dropped:
        logger.info("dropping %d scores with a missing value", dropped)
    return data[keep].reset_index(drop=True), dropped


def _groups(data: pd.DataFrame) -> list[tuple[Hashable, np.ndarray]]:
    """Values per method, in order of first appearance (the caller's method order)."""
    return [
        (method, group["value"].to_numpy()) for method, group in data.groupby("method", sort=False)
    ]


def _nothing(columns: list[str], note: str) -> TestResult:
    """An empty result whose reading and note say why nothing was tested."""
    return TestResult(table=pd.DataFrame(columns=columns), reading=note, note=note)


def _dropped_note(dropped: int) -> list[str]:
    return [f"{dropped} scores without a value were left out."] if dropped else []


def _wilcoxon_reading(table: pd.DataFrame, correction: str) -> str:
    """One line naming which pairs differ and in which direction."""
    adjusted = "unadjusted" if correction == "none" else f"{CORRECTIONS[correction]}-adjusted"

    def _pair(row: pd.Series, test: str = "") -> str:
        a, b = row["method_a"], row["method_b"]
        p_text = f"({test}{adjusted} {_fmt_p(row['p_adj'])})"
        if not row["significant"]:
            return f"{a} and {b} do not differ {p_text}"
        direction = "lower" if row["median_diff"] < 0 else "higher"
        return f"{a} is {direction} than {b} {p_text}"

    if len(table) == 1:
        row = table.iloc[0]
        return _pair(row, test=f"Wilcoxon, {row['n_seeds']} paired seeds, ") + "."
    if len(table) <= 3:
        return (
            "Wilcoxon signed-rank, paired by seed: "
            + "; ".join(_pair(row) for _, row in table.iterrows())
            + "."
        )
    differ = table[table["significant"]]
    if differ.empty:
        return (
            f"No pair of methods differs (Wilcoxon signed-rank paired by seed, "
            f"{adjusted} p ≥ 0.05 for all {len(table)} pairs)."
        )
    listed = [_pair(row) for _, row in differ.iterrows()]
    rest = len(table) - len(differ)
    tail = f"; the other {rest} pairs do not differ" if rest else ""
    return (
        f"{len(differ)} of {len(table)} pairs differ (Wilcoxon signed-rank, paired by seed): "
        + "; ".join(listed)
        + tail
        + "."
    )


def _fmt(value: float) -> str:
    """A statistic with four significant digits, e.g. 12.3 or 57.96."""
    return f"{value:.4g}"


def _fmt_p(p: float) -> str:
    """A p-value as readers expect it: 'p < 0.001' or 'p = 0.15'."""
    if not np.isfinite(p):
        return "p = n/a"
    if p < 0.001:
        return "p < 0.001"
    return f"p = {p:.2g}"


def _fmt_range(values: Iterable[float]) -> str:
    values = sorted(values)
    if values[0] == values[-1]:
        return f"mean {values[0]:.3g}"
    return f"means {values[0]:.3g}–{values[-1]:.3g}"


def _join(items: Iterable[object]) -> str:
    return ", ".join(str(item) for item in items)
