"""The Compare page's "Probabilities" tab: RPS, calibration, unimodality and ranks, with
ECE's bootstrap interval and perfectly-calibrated floor, temperature scaling fitted on each
run's validation probabilities (``engine.analysis.calibration``) and the paired tests with the
corrected resampled t-test beside the Wilcoxon (``engine.analysis.paired``).

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

from typing import Any

import pandas as pd
import streamlit as st

from engine.analysis import calibration, compare, paired
from engine.analysis import probability_metrics as pm
from engine.analysis.ranking import BLOCKING_SENTENCE
from jobs.services.page_store import selected_probabilities
from pages.present import exports, inference_tables, science_charts, stat_tables, tables
from pages.present.formatting import table_height
from pages.present.user_text import plain, said
from pages.widgets import chart_cache, reads, stat_tests, view_state
from pages.widgets.downloads import download_row
from pages.widgets.tables import show_table


@st.cache_data(ttl=reads.RESULTS_TTL_S, show_spinner="Reading probabilities…")
def cached_probabilities(
    path: str, study_ids: tuple[str, ...], names: tuple[str, ...]
) -> pd.DataFrame:
    """Per-film probabilities of the selected test runs (methods labelled)."""
    frame = selected_probabilities(list(study_ids), path=path)
    return compare.label_methods(frame, dict(zip(study_ids, names, strict=True)))


@st.cache_data(ttl=reads.RESULTS_TTL_S, show_spinner="Reading validation probabilities…")
def cached_val_probabilities(
    path: str, study_ids: tuple[str, ...], names: tuple[str, ...]
) -> pd.DataFrame:
    """Per-film probabilities of the selected runs' validation films (methods labelled): what
    each run's temperature is fitted on."""
    frame = selected_probabilities(list(study_ids), split="val", path=path)
    return compare.label_methods(frame, dict(zip(study_ids, names, strict=True)))


@st.cache_data(max_entries=16, show_spinner="Bootstrapping ECE and its floor…")
def ece_with_floor(frame: pd.DataFrame) -> pd.DataFrame:
    """`calibration.ece_uncertainty`: ECE per method with its interval and calibrated floor."""
    return calibration.ece_uncertainty(frame)


@st.cache_data(max_entries=16, show_spinner="Fitting temperatures…")
def temperatures(val: pd.DataFrame, test: pd.DataFrame) -> pd.DataFrame:
    """`calibration.temperature_scaling` of each run: ECE and RPS before and after."""
    return calibration.temperature_scaling(val, test)


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
    # Its rows were sorted by task and method: the index left over is no row number.
    st.table(stat_tables.probability_summary_frame(summary), hide_index=True)
    st.caption(" ".join(pm.PROBABILITY_NOTES[m] for m in pm.PROBABILITY_METRICS))
    export_section(summary, cards)
    calibration_section(path, picked, frame, cards)
    metric, task, correction = pick_metric_task_correction(tasks)
    scores = tables.titled(compare.score_frame(per_run, metric, [task]))
    try:
        stat_tests.show_method_tests(*stat_tests.method_tests(scores, correction))
    except ValueError as exc:
        st.error(f"The tests cannot be run on this selection: {said(exc)}")
    corrected_section(path, picked, per_run, metric, task)
    st.subheader(f"Reliability on {task}", divider="gray")
    st.vega_lite_chart(reliability_spec(frame, task), width="content")
    st.caption(inference_tables.POOLING_NOTE)
    st.subheader(f"Critical-difference diagram: {pm.PROBABILITY_LABELS[metric]} on {task}")
    cd, spec = chart_cache.ranked(scores, metric in pm.PROBABILITY_LOWER_IS_BETTER)
    st.markdown(cd.reading)
    if spec is not None:
        st.vega_lite_chart(spec, width="stretch")
    st.caption(f"{BLOCKING_SENTENCE} Tukey's subsets of the grade metrics are on Statistics.")


def pick_metric_task_correction(tasks: list[str]) -> tuple[str, str, str]:
    """The metric and task whose tests and ranks are shown, and the pairwise correction."""
    c1, c2, c3 = st.columns(3)
    labels = pm.PROBABILITY_LABELS
    metric = view_state.linked(
        c1.selectbox,
        "Metric",
        list(pm.PROBABILITY_METRICS),
        key="prob_metric",
        what="metric",
        format_func=labels.get,
    )
    task = view_state.linked(
        c2.selectbox, "Task", compare.task_order(tasks), key="prob_task", what="task"
    )
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


def calibration_section(
    path: str, picked: pd.DataFrame, frame: pd.DataFrame, cards: tuple[exports.Card, ...]
) -> None:
    """ECE with its interval beside the floor a perfectly calibrated model scores on the same
    films, and each run's temperature scaling (fitted on its validation films); both as one
    CSV headed by the study ``cards``."""
    st.subheader("Calibration with its uncertainty", divider="gray")
    unc = ece_with_floor(frame)
    show_table(
        inference_tables.calibration_frame(unc),
        hide_index=True,
        width="content",
        height=table_height(len(unc)),
    )
    st.markdown(plain(inference_tables.calibration_reading(unc)))  # names methods: as text
    st.caption(f"{calibration.ECE_CI_KIND}. {calibration.FLOOR_NOTE}")
    st.markdown("**Temperature scaling (no retraining)**")
    val = cached_val_probabilities(path, tuple(picked["study_id"]), tuple(picked["name"]))
    val = val[val["run_id"].isin(frame["run_id"].unique())]
    if val.empty:
        st.info(
            "No stored validation probabilities for these runs: nothing to fit a temperature on."
        )
        return
    per_run = temperatures(val, frame)
    show_table(inference_tables.temperature_frame(per_run), hide_index=True, width="content")
    st.caption(inference_tables.TEMPERATURE_NOTE)
    csv = stat_tables.tables_csv({"ece_with_floor": unc, "temperature_per_run": per_run})
    download_row(
        [
            (
                "ECE floor and temperatures (CSV)",
                csv,
                "softgrade_calibration.csv",
                "prob_download_calibration",
            )
        ],
        cards,
    )


def corrected_section(
    path: str, picked: pd.DataFrame, per_run: pd.DataFrame, metric: str, task: str
) -> None:
    """The picked metric's pairs on the picked task with the corrected resampled t-test (its
    interval and p) beside the Wilcoxon, and the effect sizes."""
    st.markdown(
        f"**Paired differences of {pm.PROBABILITY_LABELS[metric]} on {task}: corrected "
        "test beside the Wilcoxon**"
    )
    ratios = reads.cached_test_train_ratios(path, tuple(picked["study_id"]))
    if task not in ratios:
        st.info(inference_tables.no_splits_reason(task))
        return
    table = paired.paired_table(per_run[per_run["task"] == task], ratios, metrics=(metric,))
    if table.empty:
        st.info("Paired tests need at least two methods.")
        return
    shown = inference_tables.paired_frame(table, metric_label=pm.PROBABILITY_LABELS)
    show_table(shown.drop(columns=["Task"]), hide_index=True, width="stretch")
    st.caption(inference_tables.PAIRED_NOTE)
