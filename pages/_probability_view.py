"""The Compare page's "Probabilities" tab: RPS, calibration, unimodality and ranks.

Reads each selected run's per-film probabilities (``store.runs.selected_probabilities``),
scores them with ``engine.probability_metrics`` and ranks the methods with
``engine.ranking.critical_difference`` (seeds as blocks); shared widgets are ``pages._ui``'s.
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from engine import compare
from engine import probability_metrics as pm
from engine.ranking import BLOCKING_SENTENCE, critical_difference
from pages import _science_charts, _tables, _ui
from store import runs as store_runs


@st.cache_data(ttl=_ui.RESULTS_TTL_S, show_spinner="Reading probabilities…")
def cached_probabilities(
    path: str, study_ids: tuple[str, ...], names: tuple[str, ...]
) -> pd.DataFrame:
    """Per-film probabilities of the selected test runs (methods labelled)."""
    frame = store_runs.selected_probabilities(list(study_ids), path=path)
    return compare.label_methods(frame, dict(zip(study_ids, names, strict=True)))


def summary_frame(summary: pd.DataFrame) -> pd.DataFrame:
    """Mean ± sd over seeds per (task, method), one text column per metric."""
    shown = summary[["task", "method", "n_seeds"]].copy()
    for metric in pm.PROBABILITY_METRICS:
        means, sds = summary[f"{metric}_mean"], summary[f"{metric}_std"]
        shown[pm.PROBABILITY_LABELS[metric]] = [
            _tables.mean_std_text(m, s, 3) for m, s in zip(means, sds, strict=True)
        ]
    shown["method"] = shown["method"].map(_tables.method_title)
    return shown.rename(columns={"task": "Task", "method": "Method", "n_seeds": "Seeds"})


def probabilities_tab(
    path: str, picked: pd.DataFrame, progress: list, tasks: list[str], methods: list[str]
) -> None:
    """Per-method probability metrics, their tests, a reliability diagram and CD ranks."""
    frame = cached_probabilities(path, tuple(picked["study_id"]), tuple(picked["name"]))
    frame = compare.keep_finished_seeds(frame, progress)
    frame = frame[frame["task"].isin(tasks) & frame["method"].isin(methods)]
    if frame.empty:
        st.info("No stored test probabilities for this selection.")
        return
    per_run = pm.per_run_probability_metrics(frame)
    st.table(summary_frame(pm.probability_summary(per_run)))
    st.caption(" ".join(pm.PROBABILITY_NOTES[m] for m in pm.PROBABILITY_METRICS))
    c1, c2 = st.columns(2)
    labels = pm.PROBABILITY_LABELS
    metric = c1.selectbox(
        "Metric", list(pm.PROBABILITY_METRICS), format_func=labels.get, key="prob_metric"
    )
    task = c2.selectbox("Task", compare.task_order(tasks), key="prob_task")
    scores = _tables.titled(compare.score_frame(per_run, metric, [task]))
    try:
        _ui.show_method_tests(*_ui.method_tests(scores, "holm"))
    except ValueError as exc:
        st.error(f"The tests cannot be run on this selection: {exc}")
    st.subheader(f"Reliability on {task}", divider="gray")
    reliability = pm.reliability_table(frame[frame["task"] == task])
    chart = _science_charts.reliability_diagram(reliability, title=task)
    st.vega_lite_chart(chart.to_dict(), width="content")
    st.subheader(f"Critical-difference diagram: {pm.PROBABILITY_LABELS[metric]} on {task}")
    lower = metric in pm.PROBABILITY_LOWER_IS_BETTER
    cd = critical_difference(scores, lower_is_better=lower)
    st.markdown(cd.reading)
    if math.isfinite(cd.cd):  # tested: enough methods and complete seeds
        spec = _science_charts.critical_difference_diagram(cd.table, cd.groups, cd.cd)
        st.vega_lite_chart(spec.to_dict(), width="content")
    st.caption(f"{BLOCKING_SENTENCE} Tukey's subsets of the grade metrics are on Statistics.")
