"""Worker processes started, watched and waited for in tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from store import jobs as store_jobs
from store.db import StoreError, connect
from tests.helpers.studies import REPO_ROOT


def seed_tiny_phantom(home: Path, tiny_phantom: Path) -> Path:
    """Copy the session's rendered tiny phantom (the ``tiny_phantom`` fixture) to where a
    worker on ``home`` looks for it, and return ``home``.

    A tiny study's worker then finds its dataset ready instead of rendering the same 60
    films again in every test (seconds each); what a test checks starts after the dataset
    is prepared. A copy, not a link: the cache is only read, but a test may delete its home.
    """
    shutil.copytree(tiny_phantom, home / "cache" / tiny_phantom.name)
    return home


def start_worker(home: Path, *extra: str) -> subprocess.Popen:
    """``python -m jobs worker`` on the CPU in its own process on ``home`` (fast beats,
    stale after 3 s); its stderr goes to ``home/worker.log``."""
    env = {**os.environ, "SOFTGRADE_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jobs",
            "worker",
            "--device",
            "cpu",
            "--beat-s",
            "0.5",
            "--stale-after-s",
            "3",
            *extra,
        ],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(home / "worker.log").open("a"),
    )


def wait_for(condition, timeout_s: float, what: str):
    """Poll ``condition`` until it is truthy; fail after ``timeout_s`` naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            value = condition()
        except StoreError:
            value = None  # the worker holds the file for a moment; look again
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


# How long a job may show no progress at all (no new run, epoch or status) before a wait gives
# up: a worker process's start (importing torch) and one tiny epoch on a loaded 2-core machine
# fit well inside it. The whole wait has no limit while the job keeps moving.
STALL_S = 180.0
PROGRESS = ("status", "runs_done", "current_run", "current_epoch")


def job_state(store: Path, job_id: str) -> dict[str, Any]:
    """The job's live progress as the Jobs page reads it (status, runs done, run, epoch)."""
    jobs = store_jobs.list_jobs(path=store).set_index("job_id")
    row = jobs.loc[job_id]
    return {"job_id": job_id, **{key: row[key] for key in PROGRESS}}


def wait_while_the_job_progresses(
    store: Path,
    job_id: str,
    condition: Callable[[dict[str, Any]], bool],
    what: str,
    *,
    worker: subprocess.Popen,
    log: Path,
    stall_s: float = STALL_S,
) -> dict[str, Any]:
    """Wait until ``condition(job_state)`` holds, for as long as the job keeps progressing.

    The wait scales with the work: it gives up only when the job's state has not changed for
    ``stall_s`` seconds, or when the worker process has exited, and then fails saying what it
    last saw (the job's state, the worker's exit status, the end of its log).
    """
    seen: dict[str, Any] | None = None
    changed_at = time.monotonic()
    while True:
        try:
            state = job_state(store, job_id)
        except StoreError:
            state = seen  # the worker holds the file for a moment; look again
        if state is not None and condition(state):
            return state
        if state != seen:
            seen, changed_at = state, time.monotonic()
        stalled = time.monotonic() - changed_at > stall_s
        if stalled or worker.poll() is not None:
            why = f"no progress for {stall_s:.0f} s" if stalled else "the worker exited"
            tail = log.read_text()[-2000:] if log.exists() else "(no log)"
            raise AssertionError(
                f"gave up waiting for {what}: {why}; last seen {seen}; worker exit status "
                f"{worker.poll()}; the worker log ends:\n{tail}"
            )
        time.sleep(0.3)


def incomplete_runs(store: Path) -> int:
    """Runs without both their val and test predictions (must never exist)."""
    with connect(store, read_only=True) as con:
        return con.execute(
            """
            SELECT count(*) FROM runs r
            WHERE (SELECT count(DISTINCT split) FROM predictions p WHERE p.run_id = r.run_id) < 2
            """
        ).fetchone()[0]


def run_collecting_done(worker: Any) -> list[dict[str, Any]]:
    """Run ``worker`` (a `jobs.worker.runner.Worker`) through its next job and close it; the
    slots' ``done`` messages, in the order the worker handled them."""
    done: list[dict[str, Any]] = []
    handle = worker._handle

    def spy(state: Any, msg: dict[str, Any]) -> Any:
        if msg["kind"] == "done":
            done.append(msg)
        return handle(state, msg)

    worker._handle = spy
    try:
        worker.run_once()
    finally:
        worker.close()
    return done
