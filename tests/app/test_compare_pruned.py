"""The Compare page says beside every comparison when a picked study's search was pruned."""

from __future__ import annotations

import json

from pages.present.protocol_text import pruned_search_note, search_sentence
from store.db import connect
from tests.helpers.pages import make_store, run_page, texts

NOTE = "Pruned search in “synthetic” (asha)"


def _prune(home, study_id: str) -> None:
    """Mark the study's spec as searched with asha (as a pruned study's is stored)."""
    with connect(home / "softgrade.duckdb") as con:
        spec = json.loads(
            con.execute("SELECT spec FROM studies WHERE study_id = ?", [study_id]).fetchone()[0]
        )
        spec["search"] = {"pruner": "asha"}
        con.execute("UPDATE studies SET spec = ? WHERE study_id = ?", [json.dumps(spec), study_id])


def test_every_tab_of_a_pruned_study_says_the_search_was_pruned(tmp_path, monkeypatch):
    study_id = make_store(tmp_path)
    _prune(tmp_path, study_id)
    at = run_page(tmp_path, monkeypatch, tab="Statistics")
    assert texts(at, "caption").count(NOTE) == 6  # once per tab, beside its comparison


def test_a_full_search_gets_no_pruning_note(tmp_path, monkeypatch):
    make_store(tmp_path)
    at = run_page(tmp_path, monkeypatch)
    assert "Pruned search" not in texts(at, "caption")


def test_the_note_names_only_the_pruned_studies_and_their_pruner():
    pruned = {"search": {"pruner": "median"}, "max_epochs": 50}
    note = pruned_search_note([("full one", {"max_epochs": 100}), ("cheap", json.dumps(pruned))])
    assert note.startswith("Pruned search in “cheap” (median):")
    assert "full one" not in note
    assert pruned_search_note([("full one", {})]) == ""
    assert "median rule every 5 epochs" in search_sentence(pruned)
