"""Reading a written report's tables back, for the report tests."""

from __future__ import annotations

import re
from html import unescape

import pandas as pd

#: A raw identifier such as ``n_seeds`` or ``cppd_given_kl``: what a reader must never see.
SNAKE_CASE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


def table_cells(html: str) -> list[str]:
    """The text of every header and cell of every table in the report."""
    cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", html, re.DOTALL)
    return [unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in cells]


def table_frame(table: str) -> pd.DataFrame:
    """One ``<table>`` of the report as a frame of its cells' text, headed by its first row."""
    rows = [table_cells(row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.DOTALL)]
    return pd.DataFrame(rows[1:], columns=rows[0])
