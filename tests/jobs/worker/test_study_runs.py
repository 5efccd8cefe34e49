"""A whole study through the worker: every run stored once, selection, resume."""

from __future__ import annotations

import contextlib

import pytest

from engine.config import StudySpec
from jobs.worker.executors import InlineExecutor
from jobs.worker.runner import Worker
from store import jobs as store_jobs
from store import runs as store_runs
from store.db import connect, init_schema
from tests.helpers.films import write_film_folder
from tests.helpers.studies import tiny_study


def test_finished_study_stores_every_run_with_val_and_test_predictions(finished_study):
    runs = store_runs.list_runs([finished_study.study_id], path=finished_study.store)
    assert len(runs) == 3 * 2 * 3  # seeds x tasks x methods, budget 1
    assert runs["selected"].all()
    with connect(finished_study.store, read_only=True) as con:
        splits = (
            con.execute("SELECT DISTINCT run_id, split FROM predictions")
            .df()
            .groupby("run_id")["split"]
            .apply(set)
        )
    assert (splits == {"val", "test"}).all()


@pytest.mark.slow
@pytest.mark.usefixtures("phantom_tmp")  # its worker finds the tiny phantom rendered
def test_selection_keeps_lowest_validation_amae_and_its_checkpoint(tmp_path):
    store = tmp_path / "softgrade.duckdb"
    spec = StudySpec.from_dict(tiny_study(methods=["nominal"], tasks=["CPPD"], budget=3))
    worker = Worker(InlineExecutor("cpu"), store_path=store, home=tmp_path)
    store_jobs.enqueue_job(spec.to_dict(), path=store)
    worker.serve(stop_when_idle=True)
    study_id = store_runs.list_studies(path=store).study_id.iloc[0]
    runs = store_runs.list_runs([study_id], path=store)
    assert len(runs) == 3 and runs["selected"].sum() == 1
    best = runs.sort_values(["val_amae", "config_index"]).iloc[0]
    assert bool(best.selected)
    assert runs.loc[~runs.selected, "checkpoint_path"].isna().all()
    assert (tmp_path / "checkpoints" / study_id / f"{best.run_id}.pt").exists()
    kept = list((tmp_path / "checkpoints" / study_id).glob("*.pt"))
    assert len(kept) == 1


class _StopsAfterFirstRun(Worker):
    """A worker interrupted (Ctrl+C) right after storing one run."""

    def _record(self, state, msg):
        super()._record(state, msg)
        raise KeyboardInterrupt


@pytest.mark.slow  # trains the study's runs
@pytest.mark.usefixtures("phantom_tmp")  # its worker finds the tiny phantom rendered
def test_an_interrupted_job_is_handed_back_and_resumes_without_redoing_runs(tmp_path):
    store = tmp_path / "softgrade.duckdb"
    spec = StudySpec.from_dict(tiny_study(methods=["nominal", "beta"], tasks=["CPPD"]))
    stopping = _StopsAfterFirstRun(InlineExecutor("cpu"), store_path=store, home=tmp_path)
    job_id = store_jobs.enqueue_job(spec.to_dict(), path=store)
    with contextlib.suppress(KeyboardInterrupt):
        stopping.run_once()
    stopping.close()
    study_id = store_jobs.get_job(job_id, path=store).study_id
    first = store_runs.list_runs([study_id], path=store)
    assert len(first) == 1 and store_jobs.get_job(job_id, path=store).status == "queued"

    trained = []
    worker = Worker(InlineExecutor("cpu"), store_path=store, home=tmp_path)
    worker._handle = _spy(worker._handle, trained)
    worker.run_once()
    worker.close()
    runs = store_runs.list_runs([study_id], path=store)
    assert len(runs) == 2 and first.run_id.iloc[0] in set(runs.run_id)
    assert first.run_id.iloc[0] not in trained
    assert store_jobs.get_job(job_id, path=store).status == "succeeded"


def _spy(handle, seen):
    def wrapped(state, msg):
        if msg["kind"] == "done":
            seen.append(msg["run_id"])
        return handle(state, msg)

    return wrapped


@pytest.mark.slow
@pytest.mark.usefixtures("phantom_tmp")  # its worker finds the tiny phantom rendered
def test_a_raising_run_fails_the_job_with_its_traceback(tmp_path, monkeypatch):
    import engine.train

    def broken(*args, **kwargs):
        raise RuntimeError("the GPU caught fire")

    monkeypatch.setattr(engine.train.Trainer, "fit", broken)
    store = tmp_path / "softgrade.duckdb"
    worker = Worker(InlineExecutor("cpu"), store_path=store, home=tmp_path)
    job_id = store_jobs.enqueue_job(StudySpec.from_dict(tiny_study()).to_dict(), path=store)
    worker.serve(stop_when_idle=True)
    job = store_jobs.list_jobs(path=store).set_index("job_id").loc[job_id]
    assert job.status == "failed"
    assert "RuntimeError: the GPU caught fire" in job.error and "Traceback" in job.error


class _NotesInFlightAtRecord(Worker):
    """Notes how many runs are in flight whenever a finished run is written to the store."""

    in_flight_at_record: list[int]

    def _record(self, state, msg):
        self.in_flight_at_record.append(len(state.in_flight))
        super()._record(state, msg)


@pytest.mark.slow
@pytest.mark.usefixtures("phantom_tmp")  # its worker finds the tiny phantom rendered
def test_a_slot_gets_its_next_run_before_the_finished_one_is_stored(tmp_path):
    store = tmp_path / "softgrade.duckdb"
    spec = StudySpec.from_dict(tiny_study(methods=["nominal"], tasks=["CPPD"], budget=3))
    worker = _NotesInFlightAtRecord(InlineExecutor("cpu"), store_path=store, home=tmp_path)
    worker.in_flight_at_record = []
    store_jobs.enqueue_job(spec.to_dict(), path=store)
    worker.serve(stop_when_idle=True)
    # one slot, three runs: the next run is handed over before each store write but the last
    assert worker.in_flight_at_record == [1, 1, 0]


@pytest.mark.slow
def test_a_study_on_an_imported_folder_of_dicom_films_trains_and_is_stored(tmp_path):
    folder, csv, _ = write_film_folder(tmp_path, n=40, n_joint=40, seed=6, fmt="dcm")
    dataset = {"kind": "folder", "path": str(folder), "labels_csv": str(csv)}
    store = tmp_path / "softgrade.duckdb"
    study = StudySpec.from_dict(tiny_study(dataset=dataset, tasks=["KL"], methods=["beta"]))
    worker = Worker(InlineExecutor("cpu"), store_path=store, home=tmp_path)
    job_id = store_jobs.enqueue_job(study.to_dict(), path=store)

    worker.serve(stop_when_idle=True)

    job = store_jobs.get_job(job_id, path=store)
    assert job.status == "succeeded", job
    runs = store_runs.list_runs([job.study_id], path=store)
    assert len(runs) == 1 and runs["selected"].all()


def test_a_job_naming_a_method_this_worker_does_not_know_fails_with_one_clear_message(
    tmp_path,
):
    """A study launched where a lab's method package is installed, claimed by a worker
    started without it: the job fails saying how to add the method, without a traceback."""
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    spec = StudySpec.from_dict(tiny_study(methods=["nominal"])).to_dict()
    spec["methods"] = ["nominal", "lab_method_elsewhere"]
    job_id = store_jobs.enqueue_job(spec, path=store)
    Worker(InlineExecutor("cpu"), store_path=store, home=tmp_path).serve(stop_when_idle=True)
    job = store_jobs.list_jobs(path=store).set_index("job_id").loc[job_id]
    assert job["status"] == "failed"
    error = job["error"]  # what the Jobs page shows
    assert "lab_method_elsewhere" in error and "SOFTGRADE_METHOD_PACKAGES" in error
    assert "Traceback" not in error and "nominal" in error.split("knows")[1]
