"""Text for people: durations and run ids in words. No streamlit, so it is unit-tested."""

from __future__ import annotations

import math
from typing import Literal

from engine.vocab import parse_run_id


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


def table_height(n_rows: int) -> int | Literal["content"]:
    """The ``height`` of ``st.dataframe`` for a table of ``n_rows``: ``"content"`` (every
    row, no inner scroll bar) up to `ALL_ROWS_UP_TO` rows, else a fixed box that scrolls."""
    return "content" if n_rows <= ALL_ROWS_UP_TO else SCROLLING_TABLE_PX
