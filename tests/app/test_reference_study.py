"""An imported study (a bundle such as the reference study) opens on the result pages."""

from __future__ import annotations

import pytest

from store import runs as store_runs
from store.bundle import export_study, import_study
from store.db import init_schema
from tests.helpers.pages import run_page, texts

NAME = "Reference: paper protocol on the phantom (3 seeds)"


@pytest.fixture(scope="module")
def imported(finished_study, tmp_path_factory):
    """A fresh store holding only the tiny trained study, imported from its bundle."""
    home = tmp_path_factory.mktemp("imported")
    bundle = export_study(
        finished_study.study_id, home / "study.zip", name=NAME, path=finished_study.store
    )
    store = home / "softgrade.duckdb"
    init_schema(store)
    done = import_study(bundle, path=store)
    return home, store, done.study_id


@pytest.mark.slow
def test_compare_page_shows_the_imported_study(imported, monkeypatch):
    home, store, study_id = imported
    at = run_page(home, monkeypatch)
    assert at.multiselect(key="compare_studies").value == [study_id]
    assert any(NAME in label for label in at.multiselect(key="compare_studies").options)
    table = at.table[0].value
    kl = table[table["Task"] == "KL"]
    assert list(kl["Method"]) == ["Nominal", "Beta", "Triangular", "Average"]
    assert set(kl["Seeds"]) == {"3"}
    assert not texts(at, "warning")  # a finished study: no "partial" warning


@pytest.mark.slow
def test_relationship_page_shows_the_imported_study(imported, monkeypatch):
    home, store, study_id = imported
    at = run_page(home, monkeypatch, "../../pages/relationship.py")
    summary = at.dataframe[0].value
    assert list(summary["method"]) == ["Nominal", "Beta", "Triangular"]
    assert set(summary["n_seeds"]) == {3}
    assert len(store_runs.joint_predictions([study_id], path=store)) > 0


def test_the_bundled_reference_study_opens_on_both_pages(tmp_path, monkeypatch):
    """The shipped store/examples/reference-study.zip imports into an empty store and opens on
    Compare and KL × CPPD, labelled as the reference, with all of its seeds."""
    from store.bundle import REFERENCE_STUDY, read_card

    seeds = len(read_card(REFERENCE_STUDY)["seeds"])
    assert seeds == 20  # the paper protocol's every seed
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    done = import_study(REFERENCE_STUDY, path=store)
    assert done.name == f"Reference: paper protocol on the phantom ({seeds} seeds)"
    at = run_page(tmp_path, monkeypatch)
    assert at.multiselect(key="compare_studies").value == [done.study_id]
    table = at.table[0].value
    assert set(table["Seeds"]) == {str(seeds)}
    assert set(table[table["Task"] == "KL"]["Method"]) >= {"Nominal", "Beta", "Exponential"}
    # Its study card says where each part ran (seeds 0-12 on H100s, 13-19 on H200s).
    card = texts(at, "markdown")
    assert "**bundle gpus**: seeds 0-12 NVIDIA H100 80GB HBM3 x4" in card
    assert "seeds 13-19 NVIDIA H200 x4" in card
    at = run_page(tmp_path, monkeypatch, "../../pages/relationship.py")
    assert set(at.dataframe[0].value["n_seeds"]) == {seeds}
