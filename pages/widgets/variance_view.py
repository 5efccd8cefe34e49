"""Compare → Statistics: the variance components of a factorial seeds design (issue 29).

For a factorial study (``seeds: {splits: S, inits: I}``) each pair's split, init and
residual variance with the three intervals they support (`jobs.services.study_analysis.
components_table`, cached per study, metric and finished seeds); for any other study one
sentence saying the design cannot separate them and how to ask for a factorial study. The
text is `pages.present.variance_tables`'s.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from engine.analysis.metrics import METRIC_LABELS
from jobs.services import study_analysis
from pages.present import variance_tables as vt
from pages.present.formatting import table_height
from pages.widgets.tables import show_table

Marker = tuple[Any, ...]


@st.cache_data(max_entries=32, show_spinner=False)
def cached_components(_path: str, study_id: str, metric: str, marker: Marker) -> pd.DataFrame:
    """The components of one metric's pairs (empty for a study that is not factorial), keyed
    on the study's content marker (`reviewer_stats.content_marker`), not its store."""
    del marker  # part of the cache key only
    return study_analysis.components_table(study_id, metrics=(metric,), path=_path)


@st.cache_data(max_entries=32, show_spinner=False)
def cached_is_factorial(path: str, study_id: str, marker: Marker) -> bool:
    """Whether the study's seeds cross split seeds with init seeds."""
    del marker
    return study_analysis.is_factorial(study_id, path=path)


def show_variance_components(
    path: str, study_id: str, marker: Marker, metric: str, tasks: list[str], methods: set[str]
) -> tuple[int, float | None]:
    """The section; returns the number of tests it shows (a factorial and a
    design-corrected p per pair) and the design's ρ for the seeds planner (the median over
    the pairs shown; None unless the study is factorial)."""
    st.markdown(f"**{vt.SECTION_TITLE}**")
    if not cached_is_factorial(path, study_id, marker):
        st.caption(vt.NOT_FACTORIAL_NOTE)
        return 0, None
    table = cached_components(path, study_id, metric, marker)
    picked = table["method_a"].isin(methods) & table["method_b"].isin(methods)
    table = table[table["task"].isin(tasks) & picked]
    st.caption(vt.design_line(table))
    if table.empty:
        return 0, None
    st.markdown(f"{METRIC_LABELS[metric]}: where each pair's difference varies")
    first, rest = vt.split_view(vt.components_view(table))
    height = table_height(len(table))
    show_table(first, hide_index=True, width="stretch", height=height)
    with st.expander("The components and the other intervals (factorial, per split)"):
        show_table(rest, hide_index=True, width="stretch", height=height)
    st.caption(vt.INTERVALS_NOTE)
    rho = table["rho_design"].median()
    return 2 * len(table), None if pd.isna(rho) else float(rho)
