"""Charts drawn from cached Vega-Lite specs, so reruns of an unchanged chart stay fast."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st


@st.cache_data(max_entries=64, show_spinner=False)
def chart_spec(name: str, data: pd.DataFrame, options: dict[str, Any]) -> dict[str, Any]:
    """The Vega-Lite spec of ``pages.present.charts.<name>(data, **options)``, cached.

    Altair validates every spec against its JSON schema (~50 ms a chart); caching the spec
    keeps reruns of an unchanged chart (any other widget touched) fast.
    """
    # Imported here: Altair takes a while to load and only the result pages draw charts.
    from pages.present import charts

    return getattr(charts, name)(data, **options).to_dict()
