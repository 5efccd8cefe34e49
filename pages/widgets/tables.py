"""One table as the result pages show it: no index, its height fitted to its rows."""

from __future__ import annotations

from typing import Any, Literal

import pandas as pd
import streamlit as st

from pages.present.formatting import table_height


def show_table(
    frame: pd.DataFrame,
    *,
    rows: int | None = None,
    width: Literal["stretch", "content"] = "stretch",
    column_config: dict[str, Any] | None = None,
) -> None:
    """Show ``frame`` without its index, as tall as ``rows`` rows (default: its own), so a
    short table takes no empty space and a long one scrolls inside the page."""
    st.dataframe(
        frame,
        hide_index=True,
        width=width,
        height=table_height(len(frame) if rows is None else rows),
        column_config=column_config,
    )
