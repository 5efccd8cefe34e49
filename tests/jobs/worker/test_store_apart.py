"""SOFTGRADE_DB: the store on the worker's local disk, the data folder shared (a cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import StudySpec
from jobs.worker.executors import InlineExecutor
from jobs.worker.runner import Worker
from store import jobs as store_jobs
from store import studies
from store.db import data_home_of, default_store_path, init_schema
from tests.helpers.studies import tiny_study


@pytest.fixture
def apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(shared data folder as SOFTGRADE_HOME, store file on a 'local disk' as SOFTGRADE_DB)."""
    shared, local = tmp_path / "nfs" / "softgrade", tmp_path / "local"
    shared.mkdir(parents=True)
    monkeypatch.setenv("SOFTGRADE_HOME", str(shared))
    monkeypatch.setenv("SOFTGRADE_DB", str(local / "lab.duckdb"))
    return shared, local / "lab.duckdb"


def test_softgrade_db_names_the_store_and_the_data_stays_in_softgrade_home(apart):
    shared, store = apart
    assert default_store_path() == store
    assert data_home_of(None) == data_home_of(store) == shared


def test_without_softgrade_db_the_store_is_in_softgrade_home(home):
    assert default_store_path() == home / "softgrade.duckdb"
    assert data_home_of(default_store_path()) == home


def test_a_store_opened_by_its_path_keeps_its_data_beside_it(apart, tmp_path):
    assert data_home_of(tmp_path / "other" / "s.duckdb") == tmp_path / "other"


@pytest.mark.slow
def test_worker_keeps_the_store_on_local_disk_and_caches_and_checkpoints_shared(apart):
    shared, store = apart
    init_schema()
    spec = StudySpec.from_dict(tiny_study(tasks=["CPPD"], methods=["nominal"], max_epochs=1))
    job_id = store_jobs.enqueue_job(spec.to_dict(), path=store)
    Worker(InlineExecutor("cpu")).serve(stop_when_idle=True)  # every path from the environment

    job = store_jobs.get_job(job_id)
    assert job.status == "succeeded", job
    assert store.is_file()
    assert not list(shared.rglob("*.duckdb*"))  # no store (or its WAL) on the shared folder
    assert list((shared / "cache").rglob("manifest.json"))
    checkpoints = list((shared / "checkpoints" / job.study_id).glob("*.pt"))
    assert len(checkpoints) == 1

    # Deleting the study removes its checkpoints from the shared folder, not beside the store.
    studies.delete_study(job.study_id, confirm_name=spec.name)
    assert not checkpoints[0].exists()
