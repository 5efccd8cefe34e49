"""The Compare page's sections: the Tasks and Methods pickers, and one function per tab
(Table 4, Fig. 5, Fig. 6, Tables 5-6). Streamlit widgets, so no unit tests of their own: the
page's AppTests (tests/app/test_compare.py) drive them. The Probabilities tab is
``pages/widgets/probability_view.py``. Every download is headed by the picked studies' cards
(``pages.present.exports``).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from engine.analysis import compare, metrics, stats
from engine.analysis.metrics import (
    CALIBRATED_METRICS,
    LOWER_IS_BETTER,
    METRIC_LABELS,
    STATS_METRICS,
)
from engine.analysis.paired import BASELINE
from engine.methods import order_methods
from jobs.services import study_analysis
from jobs.services.csv_safe import escape_csv_cells
from pages.present import exports, formatting, reviewer_tables, stat_tables, tables
from pages.present.user_text import said
from pages.widgets import (
    chart_cache,
    downloads,
    pickers,
    reads,
    referee_view,
    reviewer_stats,
    stat_tests,
    view_state,
)

ABSENT_CLASSES_NOTE = (
    "A grade absent from a test set is left out of that run's per-class metrics (AMAE, "
    "MMAE, MS, BA), as dlordinal does; grade distances stay |i − j| whatever is absent."
)
DEPENDENT_KEYS = ("compare_tasks", "compare_methods", "compare_cm_method_a", "compare_cm_method_b")
SEED_VIEWS = {"sum": "Summed", "mean": "Averaged (one typical seed)"}
TUKEY_WITHOUT_ANOVA = (
    "Tukey's HSD follows the two-way ANOVA; without the ANOVA (see above) it is not shown."
)
MEAN_VIEWS = {"sd": "mean ± sd, as in the paper", "ci": "mean with its 95 % CI"}
CELL_VIEWS = {"count": "Counts", "share": "Row-normalised (% of each true grade)"}
TABS = [
    "Metrics table",
    "Distributions over seeds",
    "Confusion matrices",
    "Statistics",
    "Probabilities",
]


@st.cache_data(ttl=reads.RESULTS_TTL_S, show_spinner="Reading predictions…")
def cached_results(
    path: str, study_ids: tuple[str, ...], names: tuple[str, ...]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Confusion counts and per-run metrics of the selected runs (methods labelled); the
    per-seed values of results imported as metrics join the metrics
    (`jobs.services.study_analysis.counts_and_scores`, which the report and stats use too)."""
    labels = dict(zip(study_ids, names, strict=True))
    return study_analysis.counts_and_scores(study_ids, labels=labels, path=path)


@st.cache_data(max_entries=32, show_spinner=False)
def pooled_tests(
    scores: pd.DataFrame, descending: bool
) -> tuple[stats.TestResult, stats.TukeyResult]:
    """Two-way ANOVA and Tukey's HSD over both tasks (Tukey's studentised range costs
    ~0.25 s: computed once per input)."""
    return stats.two_way_anova(scores), stats.tukey_hsd(scores, descending=descending)


def pick_tasks_and_methods(
    per_run: pd.DataFrame, progress: list[compare.StudyProgress]
) -> tuple[list[str], list[str]]:
    """The Tasks and Methods pickers (everything present by default); stops when empty."""
    tasks_present = compare.task_order(per_run["task"])
    planned = {t for item in progress for t in item.tasks}
    if note := tables.missing_tasks_note(planned, tasks_present):
        st.info(note)
    # Two tasks fit a third of the width; five method chips need the rest (in half of it,
    # "Exponential" was cut off at 1400 px).
    left, right = st.columns([1, 2])
    tasks = view_state.linked(
        left.multiselect,
        "Tasks",
        tasks_present,
        key="compare_tasks",
        what="task",
        multi=True,
        initial={"default": tasks_present},
    )
    methods = pickers.pick_methods(right, order_methods(per_run["method"]), key="compare_methods")
    if not tasks or not methods:
        st.info("Pick at least one task and one method.")
        st.stop()
    return tasks, methods


def keep_picked(frame: pd.DataFrame, tasks: list[str], methods: list[str]) -> pd.DataFrame:
    """The rows of the picked tasks and methods."""
    return frame[frame["task"].isin(tasks) & frame["method"].isin(methods)]


def pruned_note(note: str) -> None:
    """`pages.present.protocol_text.pruned_search_note` beside a comparison (nothing when
    no picked study's search was pruned)."""
    if note:
        st.caption(f":material/content_cut: {note}")


def describe_selection(per_run: pd.DataFrame, methods: list[str]) -> None:
    """How many runs and seeds the figures use, and a word when one method is picked."""
    seeds = tables.seed_range(per_run.groupby(["task", "method"])["seed"].nunique())
    st.caption(
        f"{len(per_run)} selected runs · {seeds} seed(s) per task and method. {ABSENT_CLASSES_NOTE}"
    )
    if len(methods) == 1:
        st.info(
            "Only one method is selected: the table and plots show it alone, and the tests "
            "that compare methods need at least two."
        )


def table_tab(per_run: pd.DataFrame, cards: tuple[exports.Card, ...], path: str = "") -> None:
    """Table 4: mean ± std per method (or mean with its 95 % CI), optionally with the paper's
    rows; downloads headed by the study ``cards``."""
    view = pickers.pick_option("Each cell", MEAN_VIEWS, key="compare_mean_view")
    if view == "ci":
        intervals = reviewer_stats.table4_intervals(path, per_run, list(tables.TABLE4_METRICS))
        if not intervals.empty:
            csv = escape_csv_cells(intervals).to_csv(index=False)
            files = [("Means with CIs (CSV)", csv, "softgrade_table4_ci.csv", "compare_ci_csv")]
            downloads.download_row(files, cards)
        return
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
    shown = compare.with_published(compare.summary_table(per_run), published)
    marks = compare.rank_marks(shown)
    st.table(tables.style_summary(shown, marks))
    one_seed = bool((pd.to_numeric(shown["n_seeds"], errors="coerce") < 2).any())
    st.caption(tables.table4_note(with_paper=published is not None, one_seed=one_seed))
    csv, latex = tables.summary_csv(shown), tables.summary_latex(shown, marks)
    runs_csv = escape_csv_cells(per_run).to_csv(index=False)
    downloads.download_row(
        [
            ("Table as CSV", csv, "softgrade_table4.csv", "compare_download_csv"),
            ("Table as LaTeX", latex, "softgrade_table4.tex", "compare_download_latex"),
            ("Every run's metrics (CSV)", runs_csv, "softgrade_runs.csv", "compare_download_runs"),
        ],
        cards,
    )


def pick_metric(key: str, container: DeltaGenerator | None = None) -> str:
    """A metric picker that opens on the primary metric, in ``container`` (default: the
    page): the grade metrics, then the calibrated ones (the set size)."""
    return view_state.linked(
        (container or st).selectbox,
        "Metric",
        list(STATS_METRICS),
        key=key,
        what="metric",
        initial={"index": list(STATS_METRICS).index(metrics.PRIMARY_METRIC)},
        format_func=tables.metric_name,
    )


@st.cache_data(ttl=reads.RESULTS_TTL_S, show_spinner="Calibrating each run's grade sets…")
def cached_calibrated(path: str, study_ids: tuple[str, ...], n_runs: int) -> pd.DataFrame:
    """Each selected run's calibrated metrics (`study_analysis.calibrated_per_run`); read
    again when the number of runs shown changes (``n_runs``: a seed finished)."""
    return study_analysis.calibrated_per_run(list(study_ids), path=path)


def with_metric(per_run: pd.DataFrame, metric: str, path: str) -> pd.DataFrame | None:
    """``per_run`` with ``metric``'s values: itself for a grade metric, a calibrated one
    joined by run; None, having said why on the page, when no run has a value."""
    if metric not in CALIBRATED_METRICS:
        return per_run
    studies = tuple(dict.fromkeys(per_run["study_id"].astype(str)))
    values = cached_calibrated(path, studies, len(per_run))
    joined = study_analysis.join_calibrated(per_run, values, (metric,))
    if joined[metric].notna().any():
        return joined
    st.info(f"{METRIC_LABELS[metric]} is not available here: {study_analysis.NO_CALIBRATION_NOTE}.")
    return None


def distributions_tab(per_run: pd.DataFrame, tasks: list[str], path: str) -> None:
    """Fig. 5: one violin-and-box chart per task of the picked metric over seeds; side by
    side for a few methods, one per row for many (each violin keeps its width)."""
    metric = pick_metric("compare_metric")
    found = with_metric(per_run, metric, path)
    if found is None:
        return
    per_run = found
    many = per_run["method"].nunique() > formatting.LEVEL_LABEL_METHODS
    places = [st.container() for _ in tasks] if many else st.columns(len(tasks))
    for column, task in zip(places, compare.task_order(tasks), strict=True):
        scores = compare.score_frame(per_run, metric, [task])
        options = {"value_title": tables.metric_name(metric), "title": task}
        column.vega_lite_chart(
            chart_cache.chart_spec("violin_box", scores, options), width="stretch"
        )
    st.caption("A violin is drawn for methods with at least two different values.")


def confusion_tab(counts: pd.DataFrame, per_run: pd.DataFrame, tasks: list[str]) -> None:
    """Fig. 6: two methods' confusion matrices side by side on one colour scale."""
    c1, c2, c3 = st.columns(3)
    task = view_state.linked(
        c1.selectbox, "Task", compare.task_order(tasks), key="compare_cm_task", what="task"
    )
    task_methods = order_methods(per_run.loc[per_run["task"] == task, "method"])
    default_a = BASELINE if BASELINE in task_methods else task_methods[0]
    method_a = view_state.linked(
        c2.selectbox,
        "First method",
        task_methods,
        key="compare_cm_method_a",
        what="method",
        initial={"index": task_methods.index(default_a)},
        format_func=tables.method_title,
    )
    others = [m for m in task_methods if m != method_a]
    best = compare.best_method(per_run, task, metrics.PRIMARY_METRIC, exclude=[method_a])
    method_b = view_state.linked(
        c3.selectbox,
        "Second method",
        others,
        key="compare_cm_method_b",
        what="method",
        initial={"index": others.index(best) if best in others else 0},
        format_func=tables.method_title,
        help=f"Defaults to the best other method by mean {METRIC_LABELS[metrics.PRIMARY_METRIC]}.",
        disabled=not others,
    )
    c4, c5 = st.columns(2)
    how = pickers.pick_option("Over seeds", SEED_VIEWS, key="compare_cm_how", container=c4)
    scale = pickers.pick_option("Cells show", CELL_VIEWS, key="compare_cm_scale", container=c5)
    shown_methods = [method_a] + ([method_b] if others and method_b else [])
    if not others:
        st.info(f"Only one method has {task} predictions, so there is nothing to set it against.")
    matrices = {m: compare.method_confusion(counts, task, m, how=how) for m in shown_methods}
    frames = {m: compare.confusion_frame(cm) for m, (cm, _) in matrices.items()}
    shared_top = max(float(f[scale].max()) for f in frames.values())
    for column, method in zip(st.columns(2), shown_methods, strict=False):
        rows = per_run[(per_run["task"] == task) & (per_run["method"] == method)]
        options = {
            "normalised": scale == "share",
            "decimals": 1 if how == "mean" else 0,
            "domain_max": 1.0 if scale == "share" else shared_top,
            "title": f"{task} · {tables.method_title(method)} "
            f"({matrices[method][1]} seeds, mean {METRIC_LABELS[metrics.PRIMARY_METRIC]} "
            f"{rows[metrics.PRIMARY_METRIC].mean():.3f})",
        }
        column.vega_lite_chart(
            chart_cache.chart_spec("confusion_heatmap", frames[method], options), width="content"
        )
    st.caption(
        "Rows are the recorded (true) grade, columns the predicted grade; both matrices "
        "share one colour scale. Summed: every test image of every seed counted once; "
        "averaged: that sum divided by the number of seeds."
    )


def statistics_tab(
    per_run: pd.DataFrame,
    tasks: list[str],
    cards: tuple[exports.Card, ...],
    path: str,
    progress: list[compare.StudyProgress],
) -> None:
    """The careful reviewer's analysis of one metric (the default), the paper's Tables 5-6 and
    per-task tests one click away ("as in the paper"), and downloads of both headed by the
    study ``cards``."""
    metric = pick_metric("compare_stats_metric", st.columns(3)[0])
    found = with_metric(per_run, metric, path)
    if found is None:
        return
    per_run = found
    if metric in CALIBRATED_METRICS:
        st.caption(metrics.get_metric(metric).meaning)
    paired_rows = reviewer_stats.reviewer_view(path, per_run, progress, tasks, metric)
    with st.expander(
        "Statistics as in the paper (Kruskal–Wallis, OLS ANOVA, Tukey, Wilcoxon within a task)"
    ):
        test_tables = paper_statistics(per_run, tasks, metric)
    csv = stat_tables.tables_csv({"paired": paired_rows, **test_tables})
    latex = reviewer_tables.paired_latex(paired_rows, METRIC_LABELS[metric]) + (
        stat_tables.stats_latex(test_tables, METRIC_LABELS[metric])
    )
    name = f"softgrade_stats_{metric}"
    downloads.download_row(
        [
            ("Statistics as CSV", csv, f"{name}.csv", "compare_download_stats_csv"),
            ("Statistics as LaTeX", latex, f"{name}.tex", "compare_download_stats_latex"),
        ],
        cards,
    )
    referee_view.referee_section(path)


def paper_statistics(per_run: pd.DataFrame, tasks: list[str], metric: str) -> dict:
    """Tables 5-6 and the per-task tests of one metric, as the paper runs them; returns the
    tables for export."""
    c2, c3 = st.columns(2)
    task = view_state.linked(
        c2.selectbox,
        "Task for the per-task tests",
        compare.task_order(tasks),
        key="compare_stats_task",
        what="task",
    )
    correction = stat_tests.pick_correction(c3, key="compare_correction")
    task_scores = tables.titled(compare.score_frame(per_run, metric, [task]))
    all_scores = tables.titled(compare.score_frame(per_run, metric))
    try:
        shapiro, kruskal, wilcoxon = stat_tests.method_tests(task_scores, correction)
        anova, tukey = pooled_tests(all_scores, metric in LOWER_IS_BETTER)
    except ValueError as exc:  # e.g. two values for one method and seed
        st.error(f"The tests cannot be run on this selection: {said(exc)}")
        st.stop()

    st.subheader(f"{METRIC_LABELS[metric]} on {task}", divider="gray")
    stat_tests.show_method_tests(shapiro, kruskal, wilcoxon)
    st.subheader(f"{METRIC_LABELS[metric]} over {' and '.join(tasks)}", divider="gray")
    stat_tests.show_test("Two-way ANOVA, method × task (Table 5)", anova)
    stat_tests.show_test(
        "Tukey HSD homogeneous subsets, tasks pooled (Table 6)",
        tukey,
        tukey.subsets,
        shortfall=None if not anova.table.empty else TUKEY_WITHOUT_ANOVA,
    )
    st.caption(reviewer_tables.TUKEY_NOTE)
    return stat_tables.method_test_tables(shapiro, kruskal, wilcoxon, anova, tukey)
