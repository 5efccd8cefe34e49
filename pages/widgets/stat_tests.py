"""The result pages' statistical test sections: the correction picker, the cached tests and
each test's heading, reading and table."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from engine.analysis import stats
from pages.present.formatting import table_height
from pages.present.stat_tables import (
    CORRECTION_ORDER,
    correction_label,
    format_test_table,
    wilcoxon_seed_shortfall,
)
from pages.present.user_text import plain
from pages.widgets import view_state
from pages.widgets.tables import show_table


def show_test(
    title: str,
    result: stats.TestResult,
    table: pd.DataFrame | None = None,
    shortfall: str | None = None,
) -> None:
    """A test's heading, its one-line reading and its table, or why there is none.

    ``shortfall`` (too few seeds for the test to decide anything) replaces the numbers.
    """
    st.markdown(f"**{title}**")
    shown = result.table if table is None else table
    if shown.empty or shortfall:
        # The readings name methods, which an import may have named: shown as text.
        st.info(shortfall or plain(result.note or result.reading), icon=":material/info:")
        return
    st.markdown(plain(result.reading))
    show_table(
        format_test_table(shown), hide_index=True, width="content", height=table_height(len(shown))
    )
    if result.note:
        st.caption(plain(result.note))


@st.cache_data(max_entries=64, show_spinner=False)
def method_tests(
    scores: pd.DataFrame, correction: str
) -> tuple[stats.TestResult, stats.TestResult, stats.TestResult]:
    """Shapiro–Wilk per method, Kruskal–Wallis and pairwise Wilcoxon of one score per seed.

    Cached: statsmodels' Holm step runs a full garbage collection (~0.25 s), so each input is
    tested once, not on every rerun.
    """
    return (
        stats.shapiro_by_method(scores),
        stats.kruskal_across_methods(scores),
        stats.wilcoxon_pairwise(scores, correction=correction),
    )


def pick_correction(container: DeltaGenerator, *, key: str) -> str:
    """The pairwise tests' multiple-comparison correction (the result pages' one picker):
    Holm by default, the paper's unadjusted p-values one click away, statsmodels' others."""
    return view_state.linked(
        container.selectbox,
        "Correction for the pairwise tests",
        list(CORRECTION_ORDER),
        key=key,
        what="correction",
        format_func=correction_label,
        help="Holm holds the chance of any false difference among all pairs at 5 %; the "
        "paper reports its pairwise Wilcoxon p-values unadjusted, so with many pairs some fall "
        "below 0.05 by chance alone.",
    )


def show_method_tests(
    shapiro: stats.TestResult, kruskal: stats.TestResult, wilcoxon: stats.TestResult
) -> None:
    """The three tests of :func:`method_tests`, each with its reading (both result pages)."""
    show_test("Normality per method (Shapiro–Wilk)", shapiro)
    show_test("Do the methods differ at all? (Kruskal–Wallis)", kruskal)
    show_test(
        "Which pairs differ? (Wilcoxon signed-rank, paired by seed)",
        wilcoxon,
        shortfall=wilcoxon_seed_shortfall(wilcoxon.table),
    )
