"""Kill storm: a real worker SIGKILLed five times during one study, once inside the write of
a run; every run ends up stored exactly once, no slot process outlives its worker, and the
job finishes."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest

from engine.config import StudySpec
from engine.study import plan_runs
from store import jobs as store_jobs
from store import runs as store_runs
from store.db import connect, init_schema
from store.runs import PAUSE_IN_RECORD_ENV
from tests.helpers.studies import tiny_study
from tests.helpers.workers import (
    incomplete_runs,
    seed_tiny_phantom,
    start_worker,
    wait_for,
    wait_while_the_job_progresses,
)

pytestmark = pytest.mark.slow
RANDOM_KILLS = 4


def _claimed_by(store: Path, pid: int, job_id: str) -> bool:
    """The worker process ``pid`` holds the job (it registered and claimed it)."""
    workers = store_jobs.list_workers(path=store)
    mine = workers[workers.pid == pid].worker_id
    job = store_jobs.get_job(job_id, path=store)
    return job.status == "running" and job.worker_id in set(mine)


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux /proc), children first."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found += [child, *_descendants(child)]
    return found


def _alive(pid: int) -> bool:
    """Running, or a zombie its new parent has not reaped yet (counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _kill(worker, what: str) -> list[int]:
    """SIGKILL the worker; return its descendants (slot processes) as they were."""
    children = _descendants(worker.pid)
    assert children, f"{what}: the worker had no slot process to orphan"
    worker.send_signal(signal.SIGKILL)
    worker.wait(10)
    return children


def _assert_no_orphans(children: list[int], what: str) -> None:
    # A slot still importing torch when its worker died notices on reaching slot_main.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(_alive(p) for p in children):
        time.sleep(0.2)
    alive = [p for p in children if _alive(p)]
    assert not alive, f"{what}: processes outlived their worker: {alive}"


def test_five_kills_during_one_study_lose_nothing_and_store_every_run_once(home, tiny_phantom):
    seed = int(os.environ.get("KILL_STORM_SEED", time.time_ns() % 10_000))
    rng = random.Random(seed)
    why = f"(kill storm seed {seed}; rerun with KILL_STORM_SEED={seed})"
    store = home / "softgrade.duckdb"
    init_schema(store)
    # Each worker finds the phantom's cache ready (rendering it would cost every kill cycle).
    seed_tiny_phantom(home, tiny_phantom)
    spec = StudySpec.from_dict(
        tiny_study(tasks=["CPPD"], methods=["nominal", "beta"], max_epochs=1, patience=1)
    )
    job_id = store_jobs.enqueue_job(spec.to_dict(), path=store)
    study_id = store_jobs.get_job(job_id, path=store).study_id
    planned = {run.run_id for run in plan_runs(spec, study_id, "cpu")}
    marker = home / "paused-inside-a-write"
    os.environ[PAUSE_IN_RECORD_ENV] = str(marker)  # read by the worker processes only
    try:
        # Kill 1: inside the transaction that writes the first finished run.
        worker = start_worker(home)
        wait_for(marker.exists, 180, f"the first run's write {why}")
        _assert_no_orphans(_kill(worker, "mid-write"), "mid-write")
        assert store_runs.finished_run_ids(study_id, path=store) == set(), why
        # Kills 2-5: a random moment after each new worker has claimed the job.
        for k in range(RANDOM_KILLS):
            worker = start_worker(home)
            wait_for(lambda w=worker: _claimed_by(store, w.pid, job_id), 120, f"claim {why}")
            time.sleep(rng.uniform(0.0, 4.0))
            _assert_no_orphans(_kill(worker, f"kill {k + 2}"), f"kill {k + 2}")
            assert incomplete_runs(store) == 0, why
        worker = start_worker(home)
        try:
            wait_while_the_job_progresses(
                store,
                job_id,
                lambda state: state["status"] in ("succeeded", "failed", "cancelled"),
                f"the job to end {why}",
                worker=worker,
                log=home / "worker.log",
            )
            jobs = store_jobs.list_jobs(path=store).set_index("job_id")
            status, error = jobs.loc[job_id, "status"], jobs.loc[job_id, "error"]
            assert status == "succeeded", f"the job {status}: {error} {why}"
        finally:
            worker.terminate()
            worker.wait(30)
    finally:
        os.environ.pop(PAUSE_IN_RECORD_ENV, None)
    runs = store_runs.list_runs([study_id], path=store)
    assert set(runs.run_id) == planned and runs.run_id.is_unique, why
    assert incomplete_runs(store) == 0
    with connect(store, read_only=True) as con:
        per_run = con.execute(
            "SELECT run_id, count(*) FROM predictions GROUP BY run_id ORDER BY 1"
        ).fetchall()
        attempts = con.execute("SELECT attempts FROM jobs").fetchone()[0]
    # One seed, one split: every run holds the same images once (none written twice).
    assert len(per_run) == len(planned) and len({n for _, n in per_run}) == 1, why
    assert attempts >= 1 + RANDOM_KILLS + 1, why  # every worker after the first claimed it
