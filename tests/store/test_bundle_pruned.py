"""A pruned search's study through a bundle: its stopped runs stay stopped after import."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from store import runs as store_runs
from store import studies as store_studies
from store.bundle import export_study, import_study
from store.db import connect, init_schema
from tests.helpers.studies import FinishedStudy

REFERENCE = Path(__file__).parents[2] / "store" / "examples" / "reference-study.zip"


@pytest.fixture
def pruned_store(finished_study: FinishedStudy, tmp_path: Path) -> Path:
    """A copy of the tiny trained study as a pruned search would have left it: its spec names
    the pruner and seed 0's beta runs were stopped (pruned, so not selected)."""
    store = tmp_path / "pruned.duckdb"
    shutil.copy(finished_study.store, store)
    with connect(store) as con:
        spec = json.loads(
            con.execute(
                "SELECT spec FROM studies WHERE study_id = ?", [finished_study.study_id]
            ).fetchone()[0]
        )
        spec["search"] = {"pruner": "asha", "min_epochs": 1}
        con.execute(
            "UPDATE studies SET spec = ? WHERE study_id = ?",
            [json.dumps(spec), finished_study.study_id],
        )
        con.execute(
            "UPDATE runs SET pruned = true, selected = false WHERE seed = 0 AND method = 'beta'"
        )
    return store


def test_an_imported_study_keeps_which_runs_a_pruned_search_stopped(
    finished_study, pruned_store, tmp_path
):
    bundle = export_study(finished_study.study_id, tmp_path / "pruned.zip", path=pruned_store)
    other = tmp_path / "other.duckdb"
    init_schema(other)
    done = import_study(bundle, path=other)

    def flags(path: Path):
        runs = store_runs.list_runs([done.study_id], path=path)
        return runs.set_index("run_id")[["pruned", "selected"]].sort_index()

    theirs, ours = flags(pruned_store), flags(other)
    assert int(theirs["pruned"].sum()) == 2
    assert ours.astype(bool).equals(theirs.astype(bool))
    card = store_studies.study_card(done.study_id, path=other)
    assert f"2 of {len(ours)} runs stopped" in card["search"]


def test_a_bundle_written_before_pruning_imports_with_no_run_stopped(tmp_path):
    store = tmp_path / "reference.duckdb"
    init_schema(store)
    done = import_study(REFERENCE, path=store)
    runs = store_runs.list_runs([done.study_id], path=store)
    assert len(runs) > 0 and not runs["pruned"].any()
