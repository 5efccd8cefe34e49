"""Charts drawn from cached Vega-Lite specs, so reruns of an unchanged chart stay fast; and
the methods' ranking with its critical-difference diagram, which the Statistics and
Probabilities tabs both draw (cached here, below both tabs)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

if TYPE_CHECKING:
    from engine.analysis.ranking import CriticalDifference


@st.cache_data(max_entries=64, show_spinner=False)
def chart_spec(name: str, data: pd.DataFrame, options: dict[str, Any]) -> dict[str, Any]:
    """The Vega-Lite spec of ``pages.present.charts.<name>(data, **options)``, cached.

    Altair validates every spec against its JSON schema (~50 ms a chart); caching the spec
    keeps reruns of an unchanged chart (any other widget touched) fast.
    """
    # Imported here: Altair takes a while to load and only the result pages draw charts.
    from pages.present import charts

    return getattr(charts, name)(data, **options).to_dict()


@st.cache_data(max_entries=32, show_spinner="Ranking the methods…")
def ranked(
    scores: pd.DataFrame, lower_is_better: bool
) -> tuple[CriticalDifference, dict[str, Any] | None]:
    """Friedman test, post-hoc ranks and the CD diagram's spec (None when nothing is tested).

    Cached: the first ranking imports scikit-posthocs (matplotlib, seaborn; ~0.5-2 s).
    """
    # Imported here, as charts above: only the pages that rank methods need them.
    from engine.analysis.ranking import critical_difference
    from pages.present import cd_diagram

    cd = critical_difference(scores, lower_is_better=lower_is_better)
    if not math.isfinite(cd.cd):  # too few methods or complete seeds to test
        return cd, None
    spec = cd_diagram.critical_difference_diagram(cd.table, cd.groups, cd.cd).to_dict()
    return cd, spec
