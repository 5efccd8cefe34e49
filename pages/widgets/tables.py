"""One table as the result pages show it: no index, its height fitted to its rows, and every
text column wide enough for its text.

``st.dataframe`` sizes a column from the rows it samples, so a long method name further down
a table ("Binomial layer − Nominal") was cut at the column's edge (issue 39). `show_table`
gives each text column the width its longest cell needs
(`pages.present.formatting.text_column_widths`), keeping any column settings passed in.
"""

from __future__ import annotations

from typing import Any, Literal

import pandas as pd
import streamlit as st

from pages.present.formatting import table_height, text_column_widths


def fitted_columns(frame: pd.DataFrame, given: dict[str, Any] | None = None) -> dict[str, Any]:
    """``column_config`` for ``frame``: each text column's width, merged into ``given``'s
    settings (a setting passed in wins; a column given as ``None`` stays hidden)."""
    config: dict[str, Any] = {
        column: {"width": px} for column, px in text_column_widths(frame).items()
    }
    for column, setting in (given or {}).items():
        if isinstance(setting, dict) and isinstance(config.get(column), dict):
            config[column] = {**config[column], **setting}
        else:
            config[column] = setting
    return config


def show_table(
    frame: pd.DataFrame,
    *,
    rows: int | None = None,
    width: Literal["stretch", "content"] = "stretch",
    column_config: dict[str, Any] | None = None,
    **more: Any,
) -> None:
    """Show ``frame`` without its index (unless ``hide_index=False``), as tall as ``rows``
    rows (default: its own; ``height`` overrides), so a short table takes no empty space and a
    long one scrolls inside the page, its text columns fitted (`fitted_columns`); ``more``
    goes to ``st.dataframe``."""
    more.setdefault("hide_index", True)
    more.setdefault("height", table_height(len(frame) if rows is None else rows))
    st.dataframe(frame, width=width, column_config=fitted_columns(frame, column_config), **more)
