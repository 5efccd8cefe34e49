"""Text for people: durations and run ids in words. No streamlit, so it is unit-tested."""

from __future__ import annotations

import math
from typing import Any, Literal

from engine.vocab import parse_run_id

#: Methods a chart can name with level labels in half the page; more: slanted labels.
LEVEL_LABEL_METHODS = 6


def is_missing(value: object) -> bool:
    """None or a float NaN (how pandas hands a missing number to the pages)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def format_duration(seconds: float | None) -> str:
    """``"42 s"``, ``"3 min 05 s"``, ``"2 h 07 min"``; an em dash when unknown."""
    if seconds is None or is_missing(seconds):
        return "—"
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    return f"{hours / 24:.1f} days"


def run_label(run_id: str | None) -> str:
    """A run id (see `engine.vocab.run_id`) in words.

    ``"study-ab12-KL-beta-s3-c1"`` → ``"KL · beta · seed 3 · config 1"``; ids of another
    shape come back unchanged, and None becomes an em dash.
    """
    if not run_id or is_missing(run_id):
        return "—"
    key = parse_run_id(run_id)
    if key is None:
        return run_id
    return f"{key.task} · {key.method} · seed {key.seed} · config {key.config_index}"


#: A results table of up to this many rows shows every row (one per method and task of a
#: 14-method study fits); a longer one (every pair of methods) scrolls in a box this tall.
ALL_ROWS_UP_TO = 32
SCROLLING_TABLE_PX = 560


#: Pixels per character of a table cell's text (Source Sans at 14 px, a little generous) and
#: the cell's padding, for :func:`text_column_widths`; and the widest a column is made.
CELL_CHAR_PX = 7.6
CELL_PADDING_PX = 28
WIDEST_COLUMN_PX = 480


def text_column_widths(frame: Any) -> dict[str, int]:
    """Each text column's width in pixels, wide enough for its longest cell and its header.

    ``st.dataframe`` sizes a column from the rows it samples, so a long method name further
    down ("Binomial layer − Nominal" in row 11) was cut at the column's edge (issue 39:
    "Binomial laye…"). Past :data:`WIDEST_COLUMN_PX` a column is left to the table."""
    widths: dict[str, int] = {}
    for column in frame.columns:
        if frame[column].dtype.kind not in "OSUT" and str(frame[column].dtype) != "str":
            continue
        longest = max([len(str(column)), *(len(str(v)) for v in frame[column].tolist())])
        px = math.ceil(longest * CELL_CHAR_PX) + CELL_PADDING_PX
        if px <= WIDEST_COLUMN_PX:
            widths[str(column)] = px
    return widths


def table_height(n_rows: int) -> int | Literal["content"]:
    """The ``height`` of ``st.dataframe`` for a table of ``n_rows``: ``"content"`` (every
    row, no inner scroll bar) up to `ALL_ROWS_UP_TO` rows, else a fixed box that scrolls."""
    return "content" if n_rows <= ALL_ROWS_UP_TO else SCROLLING_TABLE_PX
