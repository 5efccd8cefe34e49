"""Tables on the pages: ``st.dataframe`` with every text column wide enough for its text.

``st.dataframe`` sizes a column from the rows it samples, so a long method name further down
a table ("Binomial layer − Nominal") was cut at the column's edge (issue 39). `show_table`
gives each text column the width its longest cell needs
(`pages.present.formatting.text_column_widths`), keeping any column settings passed in.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from pages.present.formatting import text_column_widths


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


def show_table(frame: pd.DataFrame, **settings: Any) -> None:
    """``st.dataframe(frame, **settings)`` with its text columns fitted (`fitted_columns`)."""
    settings["column_config"] = fitted_columns(frame, settings.get("column_config"))
    st.dataframe(frame, **settings)
