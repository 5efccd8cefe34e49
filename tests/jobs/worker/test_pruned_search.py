"""A pruned search through the worker: runs that lost are stopped, marked, never selected."""

from __future__ import annotations

import pytest

from engine.config import StudySpec
from jobs.worker.executors import InlineExecutor
from jobs.worker.runner import Worker
from store import jobs as store_jobs
from store import runs as store_runs
from store import studies as store_studies
from store.db import connect, init_schema
from tests.helpers.studies import tiny_study


@pytest.mark.slow  # trains six tiny runs on the CPU
@pytest.mark.usefixtures("phantom_tmp")  # its worker finds the tiny phantom rendered
def test_a_pruned_study_marks_its_stopped_runs_and_never_selects_them(tmp_path):
    store = tmp_path / "softgrade.duckdb"
    spec = StudySpec.from_dict(
        tiny_study(
            methods=["beta"],
            tasks=["CPPD"],
            budget=6,
            max_epochs=6,
            patience=6,
            search={"pruner": "asha", "min_epochs": 1},
        )
    )
    worker = Worker(InlineExecutor("cpu"), store_path=store, home=tmp_path)
    store_jobs.enqueue_job(spec.to_dict(), path=store)
    worker.serve(stop_when_idle=True)
    study_id = store_runs.list_studies(path=store).study_id.iloc[0]
    runs = store_runs.list_runs([study_id], path=store)

    assert len(runs) == 6
    pruned = runs[runs.pruned]
    # Run one (config 0) reaches every rung first, so it is never pruned; with six
    # configurations and a third kept per rung, some are.
    assert 1 <= len(pruned) < 6
    assert (pruned.epochs_run < spec.max_epochs).all()
    assert not pruned.selected.any()
    assert runs.selected.sum() == 1
    # The stopped runs keep what they reached: predictions and every epoch's metrics.
    with connect(store, read_only=True) as con:
        for run_id, epochs_run in pruned[["run_id", "epochs_run"]].itertuples(index=False):
            n_epochs, n_preds = con.execute(
                "SELECT (SELECT count(*) FROM epoch_metrics WHERE run_id = $r), "
                "(SELECT count(*) FROM predictions WHERE run_id = $r AND split = 'val')",
                {"r": run_id},
            ).fetchone()
            assert n_epochs == epochs_run and n_preds > 0
    # Every search shared one Optuna journal under the data folder.
    assert list((tmp_path / "pruning" / study_id).glob("*.log"))

    card = store_studies.study_card(study_id, path=store)
    assert card["search"].startswith("pruned with asha")
    assert f"{len(pruned)} of 6 runs stopped" in card["search"]
    env = store_studies.study_environments(study_id, path=store)
    assert env["search_pruned"].tolist() == [True]


def test_selection_skips_a_pruned_run_even_with_the_best_validation_value(tmp_path):
    from tests.helpers.stores import record_study_run

    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    job_id = store_jobs.enqueue_job(tiny_study(), path=store)
    study_id = store_jobs.get_job(job_id, path=store).study_id
    for config in (0, 1):
        record_study_run(store, study_id, job_id, config, checkpoint=None)
    # Config 0 has the lower validation AMAE (0.5 against 1.5); mark it pruned.
    with connect(store) as con:
        con.execute("UPDATE runs SET pruned = true WHERE config_index = 0")
    store_runs.select_best_runs(study_id, path=store)
    runs = store_runs.list_runs([study_id], path=store).set_index("config_index")
    assert runs.loc[1, "selected"] and not runs.loc[0, "selected"]
    assert bool(runs.loc[0, "pruned"])


def test_deleting_a_study_removes_its_pruning_journals(tmp_path):
    from store import studies as store_studies_mod

    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    job_id = store_jobs.enqueue_job(tiny_study(name="cheap"), path=store)
    study_id = store_jobs.get_job(job_id, path=store).study_id
    store_jobs.finish_job(job_id, store_jobs.JobStatus.SUCCEEDED, path=store)
    journal = tmp_path / "pruning" / study_id / "KL-beta-seed0.log"
    journal.parent.mkdir(parents=True)
    journal.write_text("{}\n")
    deleted = store_studies_mod.delete_study(
        study_id, confirm_name="cheap", home=tmp_path, path=store
    )
    assert str(journal) in deleted.files_removed
    assert not (tmp_path / "pruning" / study_id).exists()
