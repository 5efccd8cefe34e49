"""The worker as a real process: SIGKILL mid-run, heartbeat requeue and resume, cancel."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from engine.config import StudySpec
from store import jobs as store_jobs
from store import runs as store_runs
from store.db import init_schema
from tests.helpers.studies import tiny_study
from tests.helpers.workers import (
    incomplete_runs,
    start_worker,
    wait_for,
    wait_while_the_job_progresses,
)

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow


def _stored_runs(store: Path, study_id: str):
    return store_runs.list_runs([study_id], path=store)


# Four runs of 10 epochs: long enough that a run is seen mid-way through its epochs (the
# waits poll every 0.3 s; an epoch takes longer) and that a cancel lands before the last run
# ends, short enough not to train 120 epochs.
EPOCHS = 10


@pytest.fixture
def queued_study(phantom_home: Path):
    store = phantom_home / "softgrade.duckdb"
    init_schema(store)
    spec = StudySpec.from_dict(
        tiny_study(
            tasks=["CPPD"],
            methods=["nominal", "beta"],
            seeds=[0, 1],
            max_epochs=EPOCHS,
            patience=EPOCHS,
        )
    )
    job_id = store_jobs.enqueue_job(spec.to_dict(), path=store)
    return store, job_id, store_jobs.get_job(job_id, path=store).study_id


def test_sigkill_mid_run_loses_nothing_and_a_new_worker_resumes(home, queued_study):
    store, job_id, study_id = queued_study
    log = home / "worker.log"
    first = start_worker(home)
    try:
        # Kill once a run is stored and the next one is mid-way through its epochs.
        def mid_second_run(job: dict) -> bool:
            epoch = job["current_epoch"]
            return job["runs_done"] >= 1 and not pd.isna(epoch) and epoch >= 2

        wait_while_the_job_progresses(
            store,
            job_id,
            mid_second_run,
            "a finished run and another one mid-training",
            worker=first,
            log=log,
        )
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    before = _stored_runs(store, study_id)
    assert len(before) >= 1
    assert incomplete_runs(store) == 0
    assert store_jobs.get_job(job_id, path=store).status == "running"

    second = start_worker(home)
    try:
        wait_while_the_job_progresses(
            store,
            job_id,
            lambda job: job["status"] == "succeeded",
            "the resumed job to succeed",
            worker=second,
            log=log,
        )
    finally:
        second.terminate()
        second.wait(30)
    after = _stored_runs(store, study_id)
    assert len(after) == 4 and after.run_id.is_unique
    kept = after.set_index("run_id").loc[before.run_id, "created_at"]
    assert (kept.to_numpy() == before.set_index("run_id")["created_at"].to_numpy()).all()
    assert incomplete_runs(store) == 0
    log = " ".join(store_jobs.job_log(job_id, path=store)["message"])
    assert "requeued" in log and f"{len(before)} already finished" in log


def test_cancel_reaches_a_running_worker_and_keeps_finished_runs(home, queued_study):
    store, job_id, study_id = queued_study
    worker = start_worker(home)
    try:
        wait_for(
            lambda: store_jobs.get_job(job_id, path=store).runs_done >= 1,
            240,
            "the first finished run",
        )
        env = {**os.environ, "SOFTGRADE_HOME": str(home)}
        out = subprocess.run(
            [sys.executable, "-m", "jobs", "cancel", job_id],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert "cancel" in out.stdout
        wait_for(
            lambda: store_jobs.get_job(job_id, path=store).status == "cancelled",
            120,
            "the job to stop",
        )
    finally:
        worker.terminate()
        worker.wait(30)
    runs = _stored_runs(store, study_id)
    assert 1 <= len(runs) < 4
    assert incomplete_runs(store) == 0


def test_up_serves_the_app_starts_a_worker_once_none_is_alive_and_stops_both(home):
    """A worker still alive when `up` starts (e.g. the previous `up` shutting down) gets no
    twin; once it stops, `up` starts its own."""
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "SOFTGRADE_HOME": str(home)}
    store = home / "softgrade.duckdb"
    init_schema(store)
    leaving = store_jobs.register_worker(
        hostname="here", pid=1, executor="local", devices=["cpu"], slots=1, path=store
    )
    up = subprocess.Popen(
        [sys.executable, "-m", "jobs", "up", "--device", "cpu", "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def page_served():
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as reply:
                return reply.status == 200

        def serving():
            try:
                return page_served()
            except OSError:
                return False

        wait_for(serving, 120, "the app to answer on its port")
        alive = store_jobs.list_workers(path=store).query("alive")
        assert alive.worker_id.tolist() == [leaving]
        store_jobs.beat_worker(leaving, stopped=True, path=store)

        def own_worker_beats():
            alive = store_jobs.list_workers(path=store).query("alive")
            return len(alive) == 1 and alive.worker_id.iloc[0] != leaving

        wait_for(own_worker_beats, 120, "up's own worker to beat")
    finally:
        up.terminate()
        up.wait(30)
    wait_for(
        lambda: not store_jobs.list_workers(path=store)["alive"].any(),
        30,
        "the worker to stop with the app",
    )
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
