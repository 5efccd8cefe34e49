"""The Compare page's "Grade sets" tab: conformal grade sets' coverage and size per method
(`jobs.services.grade_sets`, `engine.analysis.conformal`; tables and chart from
`pages.present.sets_tables`). Each study is analysed on its own; reads are cached per study,
coverage and the per-grade choice.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import streamlit as st

from engine.analysis import conformal
from engine.vocab import LABEL_SEPARATOR
from jobs.services import grade_sets
from jobs.services.page_store import StoreError
from pages.present import exports, grade_range, sets_tables, stat_tables
from pages.present.formatting import table_height
from pages.present.user_text import plain
from pages.widgets import reads
from pages.widgets.downloads import download_row
from pages.widgets.tables import show_table

log = logging.getLogger(__name__)

TAB = "Grade sets"
COVERAGES = (0.8, 0.85, 0.9, 0.95)


@st.cache_data(ttl=reads.RESULTS_TTL_S, show_spinner="Calibrating grade sets…")
def cached_sets(path: str, study_id: str, coverage: float, per_grade: bool) -> pd.DataFrame:
    """`grade_sets.study_sets` of one study: a row per task, method, seed and score."""
    return grade_sets.study_sets(study_id, coverage=coverage, per_grade=per_grade, path=path)


@st.cache_data(ttl=reads.RESULTS_TTL_S, show_spinner=False)
def cached_seed_thresholds(
    path: str, study_id: str, method: str
) -> dict[str, dict[int, np.ndarray]]:
    """Grade a film's thresholds: task -> seed -> thresholds of the method's selected runs
    (`grade_sets.seed_thresholds`, at the clinician range's coverage and score); empty when
    they cannot be read, so the page grades on and says there is no range rather than fail."""
    try:
        return grade_sets.seed_thresholds(
            study_id,
            method,
            coverage=grade_range.RANGE_COVERAGE,
            score=grade_range.RANGE_SCORE,
            path=path,
        )
    except (StoreError, ValueError):
        log.exception("grade-set thresholds of study %s could not be read", study_id)
        return {}


def sets_tab(
    path: str,
    picked: pd.DataFrame,
    tasks: list[str],
    methods: list[str],
    cards: tuple[exports.Card, ...],
) -> None:
    """Coverage and mean set size per method and score of each picked study, restricted to
    the picked tasks and methods, with every seed's rows as CSV headed by the ``cards``."""
    st.caption(sets_tables.SETS_NOTE)
    left, right = st.columns(2)
    coverage = float(
        left.select_slider(
            "Target coverage",
            options=list(COVERAGES),
            value=conformal.DEFAULT_COVERAGE,
            format_func=lambda c: f"{c:.0%}",
            key="sets_coverage",
        )
    )
    per_grade = right.toggle(
        "Per grade",
        key="sets_per_grade",
        help="One threshold per true grade, so each grade (rare ones too) reaches the target; "
        "sets grow for the rare grades.",
    )
    bases = {m.partition(LABEL_SEPARATOR)[0] for m in methods}
    exported: dict[str, pd.DataFrame] = {}
    for row in picked.itertuples(index=False):
        if len(picked) > 1:
            st.header(plain(row.name), divider="gray")
        per_run = cached_sets(path, row.study_id, coverage, per_grade)
        if not per_run.empty:
            per_run = per_run[per_run["task"].isin(tasks) & per_run["method"].isin(bases)]
        if per_run.empty:
            st.info(f"No grade sets: {grade_sets.NO_VALIDATION_NOTE}.")
            continue
        summary = conformal.method_summary(per_run)
        st.markdown(plain(sets_tables.coverage_sentence(summary, coverage)))  # names are data
        shown = sets_tables.sets_frame(summary)
        show_table(shown, hide_index=True, height=table_height(len(shown)))
        st.altair_chart(sets_tables.coverage_size_chart(summary, coverage))
        exported[f"sets {row.study_id}"] = per_run.drop(columns="run_id")
    if exported:
        csv = stat_tables.tables_csv(exported)
        download_row(
            [("Sets per seed (CSV)", csv, "softgrade_sets.csv", "sets_download_csv")], cards
        )
