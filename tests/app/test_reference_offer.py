"""An empty Compare page offers the bundled reference study in one click."""

from __future__ import annotations

from jobs.services.page_store import reference_study_id
from pages.present import tables
from store.audit import read_audit
from store.bundle import REFERENCE_STUDY, read_card
from store.db import init_schema
from tests.helpers.pages import make_store, run_page, texts


def test_empty_compare_page_loads_the_reference_study_in_one_click(tmp_path, monkeypatch):
    init_schema(tmp_path / "softgrade.duckdb")
    at = run_page(tmp_path, monkeypatch)
    assert not at.table  # nothing to show yet
    assert "No study has finished runs yet" in texts(at, "info")
    at.button(key="load_reference_study").click().run()
    assert not at.exception, [e.value for e in at.exception]
    study_id = read_card(REFERENCE_STUDY)["study"]["study_id"]
    picker = at.multiselect(key="compare_studies")
    assert picker.value == [study_id]
    assert all(label.startswith(tables.REFERENCE_MARK) for label in picker.options)
    assert set(at.table[0].value["Seeds"]) == {str(len(read_card(REFERENCE_STUDY)["seeds"]))}
    assert not at.button  # the offer is gone once the reference is in the store
    # The load leaves one audit line, by the local person (single-user mode).
    lines = read_audit(action="import", path=tmp_path / "softgrade.duckdb")
    assert lines[["actor", "target"]].values.tolist() == [["local", study_id]]
    assert "bundled reference study" in lines.iloc[0]["detail"]


def test_a_store_with_its_own_study_still_offers_the_reference_beside_it(tmp_path, monkeypatch):
    # A lab that ran its own study first must not lose the way to the reference.
    own = make_store(tmp_path, name="our study")
    at = run_page(tmp_path, monkeypatch)
    assert at.expander[0].label == "Compare with the bundled reference study"
    assert "is not in this store yet" in texts(at, "caption")
    at.button(key="load_reference_study").click().run()
    assert not at.exception, [e.value for e in at.exception]
    options = at.multiselect(key="compare_studies").options
    assert len(options) == 2 and own  # our study and, marked, the reference
    assert sum(label.startswith(tables.REFERENCE_MARK) for label in options) == 1
    assert not [b for b in at.button if b.key == "load_reference_study"]


def test_study_label_marks_only_the_bundled_reference():
    row = {"name": "x", "status": "succeeded", "spec": {"seeds": [0]}}
    row["created_at"] = "2025-01-01"
    reference = {**row, "study_id": reference_study_id()}
    assert tables.study_label(reference, reference_study_id()).startswith(tables.REFERENCE_MARK)
    other = {**row, "study_id": "study-other"}
    assert not tables.study_label(other, reference_study_id()).startswith("Bundled")


def test_loading_the_reference_says_so_and_picks_it(tmp_path, monkeypatch):
    """Issue 39: loading gave no confirmation and the picker kept the study it had."""
    from pages.widgets.pickers import REFERENCE_LOADED

    make_store(tmp_path, name="our study")
    at = run_page(tmp_path, monkeypatch)
    at.button(key="load_reference_study").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert REFERENCE_LOADED in [s.value for s in at.success]
    assert at.multiselect(key="compare_studies").value == [reference_study_id()]
