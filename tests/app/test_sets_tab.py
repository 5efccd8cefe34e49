"""The Compare page's Grade sets tab: computed only when opened, per method and score, its
coverage and per-grade options, and the per-seed CSV under the study card."""

from __future__ import annotations

import io

import pandas as pd

from engine.analysis import conformal
from tests.helpers.pages import download_reader, make_store, run_page, texts

TAB = "Grade sets"


def test_grade_sets_tab_shows_coverage_and_size_per_method(tmp_path, monkeypatch):
    make_store(tmp_path, methods=("nominal", "beta"))
    at = run_page(tmp_path, monkeypatch)
    assert "sets_download_csv" not in {b.proto.id.split("-")[-1] for b in at.get("download_button")}
    at.session_state["compare_tab"] = TAB
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = at.dataframe[-1].value
    assert {"Coverage", "Mean set size", "Single grade", "Grade 0", "Grade 4"} <= set(shown.columns)
    assert set(shown["Method"]) == {"Nominal", "Beta"}
    assert len(shown) == 2 * 2 * len(conformal.SCORES)  # tasks × methods × scores
    assert "reach 90%" in texts(at, "markdown")
    assert "same site and protocol" in texts(at, "caption")

    at.select_slider(key="sets_coverage").set_value(0.8).run()
    at.toggle(key="sets_per_grade").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "reach 80%" in texts(at, "markdown")
    assert any(b.proto.id.endswith("sets_download_csv") for b in at.get("download_button"))


def test_sets_csv_has_every_seed_under_the_study_card(tmp_path, monkeypatch):
    study = make_store(tmp_path, methods=("nominal", "beta"), seeds=(0, 1))
    read = download_reader(monkeypatch)
    at = run_page(tmp_path, monkeypatch, tab=TAB)
    assert not at.exception
    kind, text = read(at)["sets_download_csv"]
    assert kind == "csv" and f"study id: {study}" in text
    table = pd.read_csv(io.StringIO(text), comment="#")
    assert len(table) == 2 * 2 * 2 * len(conformal.SCORES)  # tasks × methods × seeds × scores
    assert table["coverage"].between(0, 1).all()
