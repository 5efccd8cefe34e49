"""The Compare page's Probabilities tab on a tiny study and on the bundled reference study."""

from __future__ import annotations

from engine.ranking import BLOCKING_SENTENCE
from store.bundle import REFERENCE_STUDY, import_study
from store.db import init_schema
from tests.app.test_compare import make_store, run_page, texts


def test_probabilities_tab_summarises_a_tiny_study(tmp_path, monkeypatch):
    make_store(tmp_path, methods=("nominal", "beta", "triangular"))
    at = run_page(tmp_path, monkeypatch)
    summary = at.table[-1].value
    assert {"RPS", "ECE (top label)", "Unimodal share"} <= set(summary.columns)
    assert set(summary["Method"]) == {"Nominal", "Beta", "Triangular"}
    assert BLOCKING_SENTENCE in texts(at, "caption")
    at.selectbox(key="prob_metric").set_value("within1").run()
    assert not at.exception, [e.value for e in at.exception]


def test_probabilities_tab_renders_the_reference_study(tmp_path, monkeypatch):
    init_schema(tmp_path / "softgrade.duckdb")
    import_study(REFERENCE_STUDY, path=tmp_path / "softgrade.duckdb")
    at = run_page(tmp_path, monkeypatch)
    assert "RPS" in at.table[-1].value.columns
