"""Compare methods: the paper's Table 4, Fig. 5, Fig. 6 and the statistics of Tables 5-6.

Everything is derived from the stored test predictions of each (task, method, seed)'s
selected run. The numbers come from ``engine.compare`` and ``engine.stats``; this page only
reads widgets, calls them and renders.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from engine import compare, stats
from engine.metrics import LOWER_IS_BETTER, METRIC_LABELS, METRICS
from engine.vocab import order_methods
from pages import _tables
from pages._ui import (
    RESULTS_TTL_S,
    cached_group_counts,
    chart_spec,
    pick_studies,
    run_inside_shell,
    show_test,
    store_path,
    warn_partial,
)
from store import runs as store_runs
from store.db import StoreError

ABSENT_CLASSES_NOTE = (
    "A grade absent from a test set is left out of that run's per-class metrics (AMAE, "
    "MMAE, MS, BA), as dlordinal does; grade distances stay |i − j| whatever is absent."
)


@st.cache_data(ttl=RESULTS_TTL_S, show_spinner="Reading predictions…")
def cached_results(
    path: str, study_ids: tuple[str, ...], names: tuple[str, ...]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Confusion counts and per-run metrics of the selected runs (methods labelled)."""
    counts = store_runs.confusion_counts(list(study_ids), path=path)
    counts = compare.label_methods(counts, dict(zip(study_ids, names, strict=True)))
    return counts, compare.per_run_metrics(counts)


@st.cache_data(max_entries=32, show_spinner=False)
def method_tests(
    task_scores: pd.DataFrame, all_scores: pd.DataFrame, correction: str, descending: bool
) -> dict[str, stats.TestResult]:
    """Every test of the Statistics tab (Tukey's studentised range and statsmodels' Holm
    step, which runs a full garbage collection, cost ~0.25 s each: computed once per input).
    """
    return {
        "shapiro": stats.shapiro_by_method(task_scores),
        "kruskal": stats.kruskal_across_methods(task_scores),
        "wilcoxon": stats.wilcoxon_pairwise(task_scores, correction=correction),
        "anova": stats.two_way_anova(all_scores),
        "tukey": stats.tukey_hsd(all_scores, descending=descending),
    }


def metric_name(metric: str) -> str:
    """``"AMAE (lower is better)"``."""
    better = "lower" if metric in LOWER_IS_BETTER else "higher"
    return f"{METRIC_LABELS[metric]} ({better} is better)"


run_inside_shell()
st.title("Compare methods")
st.caption(
    "Test-set metrics of each method's selected model (the search configuration with the "
    "best validation AMAE), per seed, as in the paper's Table 4 and Figs. 5–6."
)

path = str(store_path())
picked = pick_studies(
    path,
    key="compare_studies",
    empty_hint="No study has finished runs yet. Launch one from the Launch page; its results "
    "appear here as soon as its first seed is done.",
    dependent_keys=(
        "compare_tasks",
        "compare_methods",
        "compare_cm_method_a",
        "compare_cm_method_b",
    ),
)
chosen = picked["study_id"].tolist()

try:
    progress = compare.study_progress(picked, cached_group_counts(path, tuple(chosen)))
    names = tuple(picked["name"].astype(str))
    counts, per_run = cached_results(path, tuple(chosen), names)
except StoreError as exc:
    st.error(f"The store cannot be read right now: {exc}")
    st.stop()

warn_partial(progress)
counts = compare.keep_finished_seeds(counts, progress)
per_run = compare.keep_finished_seeds(per_run, progress)
if per_run.empty:
    st.info("Nothing to compare yet: no seed of the selected studies has finished.")
    st.stop()

tasks_present = compare.task_order(per_run["task"])
missing_tasks = sorted({t for item in progress for t in item.tasks} - set(tasks_present))
if missing_tasks:
    st.info(
        f"No {' or '.join(missing_tasks)} predictions in these studies yet; showing "
        f"{' and '.join(tasks_present)} only."
    )

left, right = st.columns(2)
tasks = left.multiselect("Tasks", options=tasks_present, default=tasks_present, key="compare_tasks")
methods_present = order_methods(per_run["method"])
methods = right.multiselect(
    "Methods",
    options=methods_present,
    default=methods_present,
    format_func=_tables.method_title,
    key="compare_methods",
)
if not tasks or not methods:
    st.info("Pick at least one task and one method.")
    st.stop()

per_run = per_run[per_run["task"].isin(tasks) & per_run["method"].isin(methods)]
counts = counts[counts["task"].isin(tasks) & counts["method"].isin(methods)]
n_seeds = per_run.groupby(["task", "method"])["seed"].nunique()
seed_range = (
    str(n_seeds.min()) if n_seeds.min() == n_seeds.max() else f"{n_seeds.min()}–{n_seeds.max()}"
)
st.caption(
    f"{len(per_run)} selected runs · {seed_range} seed(s) per task and method. "
    f"{ABSENT_CLASSES_NOTE}"
)
if len(methods) == 1:
    st.info(
        "Only one method is selected: the table and plots show it alone, and the tests "
        "that compare methods need at least two."
    )

tab_table, tab_dist, tab_cm, tab_stats = st.tabs(
    ["Metrics table", "Distributions over seeds", "Confusion matrices", "Statistics"]
)

# ---- Table 4 --------------------------------------------------------------------------------
with tab_table:
    summary = compare.summary_table(per_run)
    show_paper = st.toggle(
        "Show the paper's published values under each method",
        value=False,
        key="compare_published",
        help="From the paper's Table 4 (20 seeds on the private radiographs): a reference, "
        "not something these runs are expected to match.",
    )
    published = compare.published_table() if show_paper else None
    if show_paper and published is None:
        st.caption(
            f"The paper's values were not found ({compare.REFERENCE_DIR / compare.PUBLISHED_FILE})."
        )
    shown = compare.with_published(summary, published)
    marks = compare.rank_marks(shown)
    st.table(_tables.style_summary(shown, marks))
    st.caption(
        "Mean ± standard deviation over seeds. Per task and metric, **bold** is the best "
        "method and *italics* the second (↑ higher is better, ↓ lower is better). "
        "The Average row is the mean of the methods' means and of their standard "
        "deviations, as in the paper."
        + (
            " Grey rows are the paper's published values (20 seeds on its private "
            "radiographs): a reference point, not a result these runs should reproduce."
            if published is not None
            else ""
        )
    )
    c1, c2, c3 = st.columns(3)
    c1.download_button(
        "Table as CSV",
        _tables.summary_csv(shown),
        file_name="softgrade_table4.csv",
        mime="text/csv",
        key="compare_download_csv",
        icon=":material/download:",
    )
    c2.download_button(
        "Table as LaTeX",
        _tables.summary_latex(shown, marks),
        file_name="softgrade_table4.tex",
        mime="text/x-tex",
        key="compare_download_latex",
        icon=":material/download:",
    )
    c3.download_button(
        "Every run's metrics (CSV)",
        per_run.to_csv(index=False),
        file_name="softgrade_runs.csv",
        mime="text/csv",
        key="compare_download_runs",
        icon=":material/download:",
    )

# ---- Fig. 5 ---------------------------------------------------------------------------------
with tab_dist:
    metric = st.selectbox(
        "Metric",
        options=list(METRICS),
        index=list(METRICS).index("amae"),
        format_func=metric_name,
        key="compare_metric",
    )
    columns = st.columns(len(tasks))
    for column, task in zip(columns, compare.task_order(tasks), strict=True):
        scores = compare.score_frame(per_run, metric, [task])
        column.vega_lite_chart(
            chart_spec("violin_box", scores, {"value_title": metric_name(metric), "title": task}),
            width="stretch",
        )
    st.caption("A violin is drawn for methods with at least two different values.")

# ---- Fig. 6 ---------------------------------------------------------------------------------
with tab_cm:
    c1, c2, c3 = st.columns(3)
    cm_task = c1.selectbox("Task", options=compare.task_order(tasks), key="compare_cm_task")
    task_methods = order_methods(per_run.loc[per_run["task"] == cm_task, "method"])
    default_a = "nominal" if "nominal" in task_methods else task_methods[0]
    method_a = c2.selectbox(
        "First method",
        options=task_methods,
        index=task_methods.index(default_a),
        format_func=_tables.method_title,
        key="compare_cm_method_a",
    )
    others = [m for m in task_methods if m != method_a]
    best = compare.best_method(per_run, cm_task, "amae", exclude=[method_a])
    method_b = c3.selectbox(
        "Second method",
        options=others,
        index=others.index(best) if best in others else 0,
        format_func=_tables.method_title,
        key="compare_cm_method_b",
        help="Defaults to the best other method by mean AMAE.",
        disabled=not others,
    )
    c4, c5 = st.columns(2)
    how = c4.radio(
        "Over seeds",
        options=["sum", "mean"],
        format_func={"sum": "Summed", "mean": "Averaged (one typical seed)"}.get,
        horizontal=True,
        key="compare_cm_how",
    )
    scale = c5.radio(
        "Cells show",
        options=["count", "share"],
        format_func={"count": "Counts", "share": "Row-normalised (% of each true grade)"}.get,
        horizontal=True,
        key="compare_cm_scale",
    )
    shown_methods = [method_a] + ([method_b] if others and method_b else [])
    if not others:
        st.info(
            f"Only one method has {cm_task} predictions, so there is nothing to set it against."
        )
    matrices = {m: compare.method_confusion(counts, cm_task, m, how=how) for m in shown_methods}
    frames = {m: compare.confusion_frame(cm) for m, (cm, _) in matrices.items()}
    shared_top = max(float(f[scale].max()) for f in frames.values())
    columns = st.columns(2)
    for column, method in zip(columns, shown_methods, strict=False):
        n_runs = matrices[method][1]
        mean_amae = per_run.loc[
            (per_run["task"] == cm_task) & (per_run["method"] == method), "amae"
        ].mean()
        options = {
            "normalised": scale == "share",
            "decimals": 1 if how == "mean" else 0,
            "domain_max": 1.0 if scale == "share" else shared_top,
            "title": f"{cm_task} · {_tables.method_title(method)} "
            f"({n_runs} seeds, mean AMAE {mean_amae:.3f})",
        }
        column.vega_lite_chart(
            chart_spec("confusion_heatmap", frames[method], options),
            width="content",
        )
    st.caption(
        "Rows are the recorded (true) grade, columns the predicted grade; both matrices "
        "share one colour scale. Summed: every test image of every seed counted once; "
        "averaged: that sum divided by the number of seeds."
    )

# ---- Tables 5-6 and tests -------------------------------------------------------------------
with tab_stats:
    c1, c2, c3 = st.columns(3)
    stats_metric = c1.selectbox(
        "Metric",
        options=list(METRICS),
        index=list(METRICS).index("amae"),
        format_func=metric_name,
        key="compare_stats_metric",
    )
    stats_task = c2.selectbox(
        "Task for the per-task tests",
        options=compare.task_order(tasks),
        key="compare_stats_task",
    )
    correction = c3.selectbox(
        "Correction for the pairwise tests",
        options=list(stats.CORRECTIONS),
        format_func=stats.CORRECTIONS.get,
        key="compare_correction",
    )
    task_scores = _tables.titled(compare.score_frame(per_run, stats_metric, [stats_task]))
    all_scores = _tables.titled(compare.score_frame(per_run, stats_metric))
    try:
        tests = method_tests(task_scores, all_scores, correction, stats_metric in LOWER_IS_BETTER)
    except ValueError as exc:  # e.g. two values for one method and seed
        st.error(f"The tests cannot be run on this selection: {exc}")
        st.stop()
    shapiro, kruskal, wilcoxon = tests["shapiro"], tests["kruskal"], tests["wilcoxon"]
    anova, tukey = tests["anova"], tests["tukey"]

    st.subheader(f"{METRIC_LABELS[stats_metric]} on {stats_task}", divider="gray")
    show_test("Normality per method (Shapiro–Wilk)", shapiro)
    show_test("Do the methods differ at all? (Kruskal–Wallis)", kruskal)
    show_test(
        "Which pairs differ? (Wilcoxon signed-rank, paired by seed)",
        wilcoxon,
        shortfall=_tables.wilcoxon_seed_shortfall(wilcoxon.table),
    )

    st.subheader(f"{METRIC_LABELS[stats_metric]} over {' and '.join(tasks)}", divider="gray")
    show_test("Two-way ANOVA, method × task (Table 5)", anova)
    show_test("Tukey HSD homogeneous subsets, tasks pooled (Table 6)", tukey, tukey.subsets)

    tables = {
        "shapiro": shapiro.table,
        "kruskal": kruskal.table,
        "wilcoxon": wilcoxon.table,
        "anova": anova.table,
        "tukey_pairs": tukey.table,
        "tukey_subsets": tukey.subsets,
    }
    latex = "\n".join(
        _tables.frame_latex(
            table, caption=f"{name} ({METRIC_LABELS[stats_metric]})", label=f"tab:{name}"
        )
        for name, table in tables.items()
        if not table.empty
    )
    c1, c2 = st.columns(2)
    c1.download_button(
        "Statistics as CSV",
        _tables.tables_csv(tables),
        file_name=f"softgrade_stats_{stats_metric}.csv",
        mime="text/csv",
        key="compare_download_stats_csv",
        icon=":material/download:",
    )
    c2.download_button(
        "Statistics as LaTeX",
        latex or "% no test could be run\n",
        file_name=f"softgrade_stats_{stats_metric}.tex",
        mime="text/x-tex",
        key="compare_download_stats_latex",
        icon=":material/download:",
    )
