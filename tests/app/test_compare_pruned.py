"""The Compare page says beside every comparison when a picked study's search was pruned,
and how many of its runs the pruner stopped."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from pages.present.protocol_text import pruned_search_note, search_sentence
from store import runs as store_runs
from store import studies as store_studies
from store.db import connect
from tests.helpers.pages import make_store, run_page, texts

NOTE = "Pruned search in “synthetic” (asha, the pruner stopped 4 of 16 runs)"


def _prune(home, study_id: str) -> None:
    """Mark the study's spec as searched with asha (as a pruned study's is stored)."""
    with connect(home / "softgrade.duckdb") as con:
        spec = json.loads(
            con.execute("SELECT spec FROM studies WHERE study_id = ?", [study_id]).fetchone()[0]
        )
        spec["search"] = {"pruner": "asha"}
        con.execute("UPDATE studies SET spec = ? WHERE study_id = ?", [json.dumps(spec), study_id])


def _stopped_runs(home, study_id: str, n: int) -> None:
    """Store ``n`` more configurations of the study as a pruner leaves them: stopped early
    (``pruned``), never selected."""
    path = home / "softgrade.duckdb"
    stored = store_runs.list_runs([study_id], path=path).head(n)
    truth = np.arange(6) % 4
    predictions = pd.DataFrame(
        {
            "image_id": [f"j{i:02d}" for i in range(6)],
            "split": ["val", "test"] * 3,
            "y_true": truth,
            "y_pred": truth,
            "probs": [np.full(4, 0.25, dtype=np.float32)] * 6,
        }
    )
    for run in stored.itertuples():
        store_runs.record_run(
            store_runs.RunRecord(
                run_id=f"{run.run_id}-stopped",
                study_id=study_id,
                job_id=None,
                task=run.task,
                method=run.method,
                seed=int(run.seed),
                config_index=1,
                config={"lr": 0.01},
                best_epoch=1,
                epochs_run=2,
                val_amae=2.0,
                device="cpu",
                duration_s=1.0,
                weights_init="random",
                checkpoint_path=None,
                predictions=predictions,
                pruned=True,
            ),
            path=path,
        )


def test_every_tab_of_a_pruned_study_says_the_search_was_pruned(tmp_path, monkeypatch):
    study_id = make_store(tmp_path)
    _prune(tmp_path, study_id)
    _stopped_runs(tmp_path, study_id, 4)  # 12 selected runs and 4 the pruner stopped
    # The note's count is the study card's.
    card = store_studies.study_card(study_id, path=tmp_path / "softgrade.duckdb")
    assert "4 of 16 runs stopped so far" in card["search"]
    at = run_page(tmp_path, monkeypatch, tab="Statistics")
    assert texts(at, "caption").count(NOTE) == 6  # once per tab, beside its comparison


def test_a_full_search_gets_no_pruning_note(tmp_path, monkeypatch):
    make_store(tmp_path)
    at = run_page(tmp_path, monkeypatch)
    assert "Pruned search" not in texts(at, "caption")


def test_the_note_names_only_the_pruned_studies_and_their_pruner():
    pruned = {"search": {"pruner": "median"}, "max_epochs": 50}
    note = pruned_search_note(
        [("full one", {"max_epochs": 100}, (0, 9)), ("cheap", json.dumps(pruned), (194, 270))]
    )
    assert note.startswith("Pruned search in “cheap” (median, the pruner stopped 194 of 270 runs):")
    assert "full one" not in note
    assert pruned_search_note([("full one", {}, None)]) == ""
    # Before any run is stored (or where the count was not read) the note names the pruner only.
    assert pruned_search_note([("cheap", pruned, None)]).startswith(
        "Pruned search in “cheap” (median):"
    )
    assert pruned_search_note([("cheap", pruned, (0, 0))]).startswith(
        "Pruned search in “cheap” (median):"
    )
    assert "median rule every 5 epochs" in search_sentence(pruned)
