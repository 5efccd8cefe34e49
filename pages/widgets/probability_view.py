"""The Compare page's "Probabilities" tab: RPS, calibration, unimodality and ranks.

Reads each selected run's per-film probabilities (``store.runs.selected_probabilities``),
scores them with ``engine.analysis.probability_metrics`` and ranks the methods with
``engine.analysis.ranking.critical_difference`` (seeds as blocks); the table's text and exports are
``pages.present.stat_tables``'s (headed by the study cards, ``pages.present.exports``), the diagrams
``pages.present.science_charts``'s, shared widgets ``pages.widgets``'.

The page calls :func:`probabilities_tab` only while the tab is open, and everything it
derives is cached on its (small) inputs, so reopening the tab or touching another widget
costs a cache lookup, not a rescoring.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import streamlit as st

from engine.analysis import compare
from engine.analysis import probability_metrics as pm
from engine.analysis.ranking import BLOCKING_SENTENCE, CriticalDifference, critical_difference
from pages.present import exports, science_charts, stat_tables, tables
from pages.widgets import reads, stat_tests
from pages.widgets.downloads import download_row
from store import runs as store_runs


@st.cache_data(ttl=reads.RESULTS_TTL_S, show_spinner="Reading probabilities…")
def cached_probabilities(
    path: str, study_ids: tuple[str, ...], names: tuple[str, ...]
) -> pd.DataFrame:
    """Per-film probabilities of the selected test runs (methods labelled)."""
    frame = store_runs.selected_probabilities(list(study_ids), path=path)
    return compare.label_methods(frame, dict(zip(study_ids, names, strict=True)))


@st.cache_data(max_entries=16, show_spinner="Scoring probabilities…")
def scored(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-run probability metrics and their mean ± sd over seeds per (task, method).

    Keyed on the films' probabilities: a store re-read that finds the same runs reuses it.
    """
    per_run = pm.per_run_probability_metrics(frame)
    return per_run, pm.probability_summary(per_run)


@st.cache_data(max_entries=16, show_spinner=False)
def reliability_spec(frame: pd.DataFrame, task: str) -> dict[str, Any]:
    """The Vega-Lite spec of one task's reliability diagram (Altair validates each spec,
    ~50 ms: built once per input)."""
    reliability = pm.reliability_table(frame[frame["task"] == task])
    return science_charts.reliability_diagram(reliability, title=task).to_dict()


@st.cache_data(max_entries=32, show_spinner="Ranking the methods…")
def ranked(
    scores: pd.DataFrame, lower_is_better: bool
) -> tuple[CriticalDifference, dict[str, Any] | None]:
    """Friedman test, post-hoc ranks and the CD diagram's spec (None when nothing is tested).

    Cached: the first ranking imports scikit-posthocs (matplotlib, seaborn; ~0.5-2 s).
    """
    cd = critical_difference(scores, lower_is_better=lower_is_better)
    if not math.isfinite(cd.cd):  # too few methods or complete seeds to test
        return cd, None
    spec = science_charts.critical_difference_diagram(cd.table, cd.groups, cd.cd).to_dict()
    return cd, spec


def probabilities_tab(
    path: str,
    picked: pd.DataFrame,
    progress: list[compare.StudyProgress],
    tasks: list[str],
    methods: list[str],
    cards: tuple[exports.Card, ...],
) -> None:
    """Per-method probability metrics with downloads (headed by the study ``cards``), their
    tests under the picked correction, a reliability diagram and CD ranks."""
    frame = cached_probabilities(path, tuple(picked["study_id"]), tuple(picked["name"]))
    frame = compare.keep_finished_seeds(frame, progress)
    frame = frame[frame["task"].isin(tasks) & frame["method"].isin(methods)]
    if frame.empty:
        st.info("No stored test probabilities for this selection.")
        return
    per_run, summary = scored(frame)
    st.table(stat_tables.probability_summary_frame(summary))
    st.caption(" ".join(pm.PROBABILITY_NOTES[m] for m in pm.PROBABILITY_METRICS))
    export_section(summary, cards)
    metric, task, correction = pick_metric_task_correction(tasks)
    scores = tables.titled(compare.score_frame(per_run, metric, [task]))
    try:
        stat_tests.show_method_tests(*stat_tests.method_tests(scores, correction))
    except ValueError as exc:
        st.error(f"The tests cannot be run on this selection: {exc}")
    st.subheader(f"Reliability on {task}", divider="gray")
    st.vega_lite_chart(reliability_spec(frame, task), width="content")
    st.subheader(f"Critical-difference diagram: {pm.PROBABILITY_LABELS[metric]} on {task}")
    cd, spec = ranked(scores, metric in pm.PROBABILITY_LOWER_IS_BETTER)
    st.markdown(cd.reading)
    if spec is not None:
        st.vega_lite_chart(spec, width="stretch")
    st.caption(f"{BLOCKING_SENTENCE} Tukey's subsets of the grade metrics are on Statistics.")


def pick_metric_task_correction(tasks: list[str]) -> tuple[str, str, str]:
    """The metric and task whose tests and ranks are shown, and the pairwise correction."""
    c1, c2, c3 = st.columns(3)
    labels = pm.PROBABILITY_LABELS
    metric = c1.selectbox(
        "Metric", list(pm.PROBABILITY_METRICS), format_func=labels.get, key="prob_metric"
    )
    task = c2.selectbox("Task", compare.task_order(tasks), key="prob_task")
    return metric, task, stat_tests.pick_correction(c3, key="prob_correction")


def export_section(summary: pd.DataFrame, cards: tuple[exports.Card, ...]) -> None:
    """The table as CSV and LaTeX, each headed by the study cards as comments."""
    name = "softgrade_probabilities"
    download_row(
        [
            (
                "Table as CSV",
                stat_tables.probability_csv(summary),
                f"{name}.csv",
                "prob_download_csv",
            ),
            (
                "Table as LaTeX",
                stat_tables.probability_latex(summary),
                f"{name}.tex",
                "prob_download_latex",
            ),
        ],
        cards,
    )
