"""The Statistics tab's default view: the careful reviewer's analysis (issue 21).

The numbers are `jobs.services.study_analysis`'s (one call per statistic), cached per study,
metric and the study's change marker (`content_marker`: a seed finishing changes it; a
finished study's is its content, so the same study in another store shares it), so a rerun
costs nothing and the hierarchical bootstrap (seconds) runs once per study and metric. The text is
``pages.present.reviewer_tables``'s. Streamlit widgets: the Compare page's AppTests
(tests/app/test_compare_reviewer.py) drive them.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from engine.analysis import compare, designs, paired, power
from engine.analysis.metrics import LOWER_IS_BETTER, METRIC_LABELS, METRICS
from jobs.services import study_analysis
from pages.present import power_tables
from pages.present import reviewer_tables as rt
from pages.present.charts import HALF_PAGE_PX
from pages.present.endpoint_text import endpoint_sentence
from pages.present.formatting import table_height
from pages.present.user_text import plain
from pages.widgets import chart_cache, reads
from pages.widgets.tables import show_table
from pages.widgets.variance_view import show_variance_components

BOOTSTRAP_REPLICATES = study_analysis.DEFAULT_BOOTSTRAP
Marker = tuple[Any, ...]


# The two below are keyed on the study's content (`content_marker`), not its store: ``_path``
# (underscored) is left out of Streamlit's cache key.
@st.cache_data(max_entries=64, show_spinner="Bootstrapping seeds and patients…")
def cached_paired(
    _path: str, study_id: str, metric: str, rope: float, marker: Marker
) -> pd.DataFrame:
    """The study's paired table of one metric (Bayesian verdicts within ``rope``) with its
    film-sampling bootstrap interval."""
    del marker  # part of the cache key only
    return study_analysis.paired_table(
        study_id,
        metrics=(metric,),
        n_boot=BOOTSTRAP_REPLICATES,
        ropes={metric: rope},
        path=_path,
    )


@st.cache_data(max_entries=32, show_spinner=False)
def cached_primary(_path: str, study_id: str, rope: float, marker: Marker) -> pd.DataFrame:
    """The declared primary endpoint's rows (AMAE, soft vs nominal, both tasks)."""
    del marker
    metric = paired.PRIMARY_METRIC
    table = study_analysis.paired_table(
        study_id, metrics=(metric,), n_boot=0, ropes={metric: rope}, path=_path
    )
    return paired.primary_endpoint(table) if not table.empty else pd.DataFrame()


def rope_key(metric: str) -> str:
    """The ROPE input's key: one per metric, so each metric keeps its own ROPE."""
    return f"compare_rope_{metric}"


def rope_of(metric: str) -> float:
    """The ROPE the user set for ``metric`` (its default until then)."""
    return float(st.session_state.get(rope_key(metric), paired.ROPES.get(metric, 0.01)))


def pick_rope(metric: str) -> float:
    """The region of practical equivalence of the picked metric, on the page."""
    return float(
        st.number_input(
            f"ROPE: {METRIC_LABELS[metric]} differences within ± this are practically equivalent",
            min_value=0.0,
            value=rope_of(metric),
            step=0.005,
            format="%.3f",
            key=rope_key(metric),
            help="The region of practical equivalence of the Bayesian correlated t-test and "
            "TOST: the verdict reads “equivalent” when TOST within it gives p < 0.05 (each "
            "posterior tail beyond it below 0.05), and “better” needs the corrected 95 % "
            "interval wholly beyond it. Set per metric.",
        )
    )


@st.cache_data(max_entries=32, show_spinner=False)
def cached_ratios(path: str, study_id: str, marker: Marker) -> dict[str, float]:
    """``n_test / n_train`` per task from the study's splits (empty when none is stored)."""
    del marker
    try:
        return study_analysis.ratios(study_id, path=path)
    except (KeyError, ValueError, ZeroDivisionError):
        return {}


@st.cache_data(max_entries=32, show_spinner=False)
def cached_unsized(path: str, study_id: str, marker: Marker) -> list[str]:
    """Tasks of imported results without split sizes (`study_analysis.unsized_tasks`)."""
    del marker
    return study_analysis.unsized_tasks(study_id, path=path)


@st.cache_data(max_entries=64, show_spinner=False)
def blocked_designs(scores: pd.DataFrame, per_run: pd.DataFrame, metric: str) -> tuple:
    """Seed-blocked ANOVA, the paper's OLS ANOVA (both with partial η²) and Friedman."""
    return (
        designs.seed_blocked_anova(scores),
        designs.ols_anova_with_effect_sizes(scores[["method", "task", "seed", "value"]]),
        designs.friedman_table(per_run, (metric,)),
    )


def marker_of(progress: list[compare.StudyProgress], study_id: str) -> Marker:
    """A study's change marker: its status and finished seeds."""
    for item in progress:
        if item.study_id == study_id:
            return (item.status, tuple(item.finished))
    return ()


@st.cache_data(ttl=reads.RESULTS_TTL_S, show_spinner=False)
def cached_content_key(path: str, study_id: str, marker: Marker) -> str:
    """The study's content key (`study_analysis.content_key`), read again when it changes."""
    del marker
    return study_analysis.content_key(study_id, path=path)


def content_marker(path: str, progress: list[compare.StudyProgress], study_id: str) -> Marker:
    """The cache key of a study's analyses. A finished study's is its content, so the same
    study in another store (the reference study loaded again, a bundle imported) reuses
    the bootstrap already run in this server; a running study's is its store, status and
    finished seeds, so a run stored mid-seed does not start the bootstrap again."""
    marker = marker_of(progress, study_id)
    if marker[:1] == ("succeeded",):
        return (*marker, cached_content_key(path, study_id, marker))
    return (*marker, path)


def pick_study(per_run: pd.DataFrame, progress: list[compare.StudyProgress]) -> str:
    """The study the reviewer's analysis is about (its tests are per study's splits)."""
    ids = list(dict.fromkeys(per_run["study_id"]))
    if len(ids) == 1:
        return ids[0]
    names = {p.study_id: p.name for p in progress}
    return st.selectbox(
        "Study for the reviewer's analysis",
        ids,
        format_func=lambda s: names.get(s, s),
        key="compare_reviewer_study",
        help="The corrected test uses each study's own split sizes, so it compares the "
        "methods of one study at a time.",
    )


def study_rows(per_run: pd.DataFrame, study_id: str) -> pd.DataFrame:
    """The picked rows of one study, methods under their plain names."""
    rows = per_run[per_run["study_id"] == study_id]
    if "base_method" in rows:
        rows = rows.assign(method=rows["base_method"])
    return rows


def reviewer_view(
    path: str,
    per_run: pd.DataFrame,
    progress: list[compare.StudyProgress],
    tasks: list[str],
    metric: str,
) -> pd.DataFrame:
    """The default Statistics view; returns the paired rows shown (for the exports)."""
    study_id = pick_study(per_run, progress)
    rows = study_rows(per_run, study_id)
    methods = set(rows["method"])
    marker = content_marker(path, progress, study_id)
    n_seeds = int(rows.groupby(["task", "method"])["seed"].nunique().min())
    st.subheader("The careful reviewer's analysis", divider="gray")
    count_line = st.empty()  # filled once every test of the view is counted
    if note := rt.seed_shortfall(n_seeds):
        st.info(note, icon=":material/info:")
    if n_seeds < 2 or len(methods) < 2:
        if len(methods) < 2:
            st.info("The paired comparisons need 2 methods.", icon=":material/info:")
        return pd.DataFrame(columns=list(rt.EXPORT_COLUMNS))
    if unsized := cached_unsized(path, study_id, marker):
        st.info(
            f"No split sizes for {', '.join(unsized)}: {study_analysis.UNSIZED_NOTE}.",
            icon=":material/info:",
        )
    elif not cached_ratios(path, study_id, marker):
        st.info(
            "This study's split sizes are not in the store, so the corrected test (which "
            "needs n_test/n_train) cannot be computed.",
            icon=":material/info:",
        )
        return pd.DataFrame(columns=list(rt.EXPORT_COLUMNS))
    result_line = st.empty()  # the primary endpoint's result, once it is computed
    rope = pick_rope(metric)
    primary = show_primary(path, study_id, marker, methods)
    if not primary.empty:
        # Escaped as plain text: the sentence names methods, which are data.
        result_line.markdown(plain(endpoint_sentence(primary)))
    table = cached_paired(path, study_id, metric, rope, marker)
    picked = table["method_a"].isin(methods) & table["method_b"].isin(methods)
    table = table[table["task"].isin(tasks) & picked]
    show_pairs(table, metric)
    show_bootstrap(table)
    n_components, design_rho = show_variance_components(
        path, study_id, marker, metric, tasks, methods
    )
    n_design_tests = show_designs(rows, tasks, metric) + n_components
    show_power(table, metric, design_rho)
    # Per paired row: the corrected t, the Wilcoxon and TOST; the primary endpoint's rows
    # are rows of the paired table when it shows AMAE.
    n_primary_extra = 0 if metric == paired.PRIMARY_METRIC else 2 * len(primary)
    n_tests = 3 * len(table) + n_primary_extra + n_design_tests
    count_line.info(rt.tests_on_page_line(n_tests, len(primary)), icon=":material/info:")
    return rt.paired_export(table)


def rho_help(view: pd.DataFrame) -> dict[str, Any]:
    """Tooltips naming r (the corrected variance's ratio) on every column read on the ρ
    scale: the page shows one scale, the other one hover away."""
    return {c: st.column_config.Column(help=rt.RHO_HELP) for c in view.columns if "ρ" in c}


def show_pairs(table: pd.DataFrame, metric: str) -> None:
    """Every pair of the picked metric, verdict first: its result in one sentence, the
    compact table (task, pair, difference with its interval, verdict, Holm p), and every
    other column one click away."""
    label = METRIC_LABELS[metric]
    st.markdown(rt.pairs_heading(label))
    st.markdown(plain(rt.result_sentence(table, label)))  # names methods: data, escaped
    compact = rt.compact_view(table)
    show_table(compact, rows=len(table), column_config=rho_help(compact))
    with st.expander(
        "Every other column: p across ρ, Wilcoxon, Bayesian probabilities, TOST, effect "
        "sizes and a reading per row"
    ):
        details = rt.details_view(table)
        show_table(details, rows=len(table), column_config=rho_help(details))
    st.caption(rt.PAIRED_NOTE)


def show_primary(path: str, study_id: str, marker: Marker, methods: set[str]) -> pd.DataFrame:
    """The declared primary endpoint, first and labelled primary; returns its rows."""
    primary = cached_primary(path, study_id, rope_of(paired.PRIMARY_METRIC), marker)
    st.markdown(f"**Primary endpoint** — {paired.PRIMARY_FAMILY} (one Holm family)")
    if primary.empty:
        st.info("The primary endpoint needs nominal and a soft method.", icon=":material/info:")
        return primary
    view = rt.primary_view(primary)
    height = table_height(len(primary))
    first = view.iloc[:, : rt.PRIMARY_COMPACT]
    show_table(
        first, hide_index=True, width="stretch", height=height, column_config=rho_help(first)
    )
    with st.expander("The primary endpoint's other columns: p across ρ, Wilcoxon, Bayesian"):
        rest = view.iloc[:, [0, 1, *range(rt.PRIMARY_COMPACT, view.shape[1])]]
        show_table(
            rest, hide_index=True, width="stretch", height=height, column_config=rho_help(rest)
        )
    st.caption(
        "Negative = the method's AMAE is lower than Nominal's (the pairs below read A − B "
        "the same way). Declared before looking; "
        "every other row on this tab is exploratory. Whether a row is significant depends on "
        "the assumed ρ: see p across ρ and the break-even ρ; the verdict uses the AMAE ROPE."
    )
    return primary


def show_bootstrap(table: pd.DataFrame) -> None:
    """The film-sampling bootstrap, apart from the paired table and labelled for what it
    measures."""
    view = rt.bootstrap_view(table)
    if view.empty:
        return
    with st.expander("Film-sampling bootstrap: how much the test films alone move each pair"):
        show_table(view, hide_index=True, width="stretch")
        st.caption(rt.BOOTSTRAP_NOTE)


def show_designs(rows: pd.DataFrame, tasks: list[str], metric: str) -> int:
    """Friedman per task, the seed-blocked ANOVA per task beside the paper's, and the CD
    diagrams, each saying what it assumes; returns the number of tests shown."""
    rows = rows[rows["task"].isin(tasks)]
    scores = compare.score_frame(rows, metric)
    blocked, ols, friedman = blocked_designs(scores, rows, metric)
    st.markdown("**Do the methods differ at all? (Friedman, seeds as blocks)**")
    show_table(rt.friedman_view(friedman), hide_index=True, width="content")
    st.caption(rt.FRIEDMAN_NOTE)
    left, right = st.columns(2)
    left.markdown("**Seed-blocked ANOVA per task** (repeated measures, Greenhouse–Geisser)")
    if blocked.table.empty:
        left.info(blocked.reading, icon=":material/info:")
    else:
        left.dataframe(rt.anova_view(blocked.table), hide_index=True, width="content")
        left.caption(blocked.reading + (f" {blocked.note}" if blocked.note else ""))
    right.markdown("**OLS two-way ANOVA, as in the paper** (runs as independent)")
    if ols.table.empty:
        right.info(ols.note or ols.reading, icon=":material/info:")
    else:
        right.dataframe(rt.anova_view(ols.table), hide_index=True, width="content")
        right.caption(rt.OLS_NOTE)
    n_tests = int(friedman["p"].notna().sum()) + len(blocked.table)
    n_tests += int(ols.table["p"].notna().sum()) if not ols.table.empty else 0
    return n_tests + show_cd_diagrams(rows, tasks, metric)


def show_cd_diagrams(rows: pd.DataFrame, tasks: list[str], metric: str) -> int:
    """The critical-difference diagram of the picked metric per task, and of every grade
    metric on request; returns the number of pairwise tests they show."""
    every = st.toggle(
        "Critical-difference diagrams of every grade metric",
        value=False,
        key="compare_cd_every_metric",
        help="Friedman and Nemenyi ranks per task for AMAE, QWK, MAE, MMAE, MS and BA.",
    )
    n_tests = sum(
        show_cd_diagram(rows, tasks, shown) for shown in (METRICS if every else (metric,))
    )
    st.caption(rt.CD_NOTE)
    return n_tests


def show_cd_diagram(rows: pd.DataFrame, tasks: list[str], metric: str) -> int:
    """The critical-difference diagram of one metric per task (Friedman + Nemenyi ranks),
    side by side when they fit half the page, else one under the other; returns its number
    of pairwise tests."""
    st.markdown(f"**Critical-difference diagram: {METRIC_LABELS[metric]}** (1 = best rank)")
    n_tests = 0
    ranked = {}
    for task in compare.task_order(tasks):
        scores = compare.score_frame(rows, metric, [task])[["method", "seed", "value"]]
        ranked[task] = (scores, chart_cache.ranked(scores, metric in LOWER_IS_BETTER)[1])
    widest = max((spec["width"] for _, spec in ranked.values() if spec), default=0)
    places = st.columns(len(ranked)) if widest <= HALF_PAGE_PX else [st.container() for _ in ranked]
    for column, (task, (scores, spec)) in zip(places, ranked.items(), strict=True):
        if spec is None:
            column.info(f"{task}: the CD diagram needs 3 methods and 2 seeds.")
        else:
            column.caption(task)
            column.vega_lite_chart(spec, width="content")
            k = scores["method"].nunique()
            n_tests += 1 + k * (k - 1) // 2  # Friedman, then Nemenyi per pair
    return n_tests


def show_power(table: pd.DataFrame, metric: str, design_rho: float | None = None) -> None:
    """Seeds needed for 80 % power with the corrected variance, for a smallest effect of
    interest, over a range of between-seed correlations ρ and, for a factorial study, the
    design's own estimate (`engine.analysis.variance_components.design_rho`)."""
    st.markdown("**How many seeds?** (80 % power, corrected test, two-sided α = 0.05)")
    chosen = st.number_input(
        f"Smallest effect of interest ({METRIC_LABELS[metric]} difference)",
        min_value=0.0,
        value=power.DEFAULT_EFFECT,
        step=0.01,
        format="%.3f",
        key="compare_power_effect",
    )
    plan = power.power_table(table, effect=chosen, design_rho=design_rho)
    if plan.empty:
        return
    show_table(power_tables.power_view(plan), rows=len(plan))
    st.caption(power_tables.POWER_NOTE.format(target="80 %"))


def table4_intervals(path: str, per_run: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """Table 4 as mean [95 % CI] (the corrected interval, n_test/n_train of the first picked
    study's splits); returns the intervals (empty when the splits are not stored)."""
    study_id = str(per_run["study_id"].iloc[0])
    ratios = cached_ratios(path, study_id, (len(per_run),))
    tasks = set(per_run["task"])
    if not tasks <= set(ratios):
        st.info("The study's split sizes are not stored: no interval can be computed.")
        return pd.DataFrame()
    intervals = paired.mean_intervals(per_run, ratios, metrics=metrics)
    show_table(rt.mean_ci_table(intervals, metrics), hide_index=True, width="stretch")
    st.caption(rt.mean_ci_note(intervals))
    if clipped := rt.clipped_sentence(intervals):
        st.caption(clipped)
    return intervals
