"""Job queue and worker registry, with verbs after mlflow's ``AbstractJobStore``.

Lifecycle: queued → running → (succeeded | failed | cancelled). A claim is one conditional
UPDATE (``WHERE status = 'queued'``) checked by its returned rows, so two workers never take
the same job. A running job whose worker stopped beating is put back to queued and resumes at
its first unfinished run (finished runs live in ``runs`` and are never redone).
"""

from __future__ import annotations

import json
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from store.audit import LOCAL_ACTOR, record_in
from store.db import StoreError, connect


class JobStatus(StrEnum):
    """States of a job; the CHECK constraint in schema.sql lists the same values."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    def is_finalized(self) -> bool:
        """True once the job will never run again."""
        return self in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


@dataclass(frozen=True)
class Job:
    """One row of ``jobs`` joined with its study's spec."""

    job_id: str
    study_id: str
    status: JobStatus
    spec: dict[str, Any]
    cancel_requested: bool
    worker_id: str | None
    runs_total: int | None
    runs_done: int
    created_at: datetime
    launched_by: str | None = None  # its study's launcher; None for studies before v2


def _new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def enqueue_job(
    spec: dict[str, Any],
    *,
    request_id: str | None = None,
    launched_by: str | None = None,
    launched_from: str | None = None,
    path: Path | str | None = None,
) -> str:
    """Write a study and its job in one transaction, with its "launch" audit line; return
    the job id.

    Args:
        spec: The validated study (``StudySpec.to_dict``).
        request_id: Makes a submit idempotent: a repeated request (double click, page
            refresh, a second tab replaying the same form) returns the job already created.
        launched_by: The signed-in user; "local" (single-user mode, command line) if None.
        launched_from: Where the request came from (the browser's address); this machine's
            name if None.
    """
    name = str(spec.get("name", "study"))
    launched_by = launched_by or LOCAL_ACTOR
    launched_from = launched_from or socket.gethostname()
    with connect(path) as con:
        if request_id is not None:
            row = con.execute(
                "SELECT job_id FROM jobs WHERE request_id = ?", [request_id]
            ).fetchone()
            if row:
                return row[0]
        study_id, job_id = _new_id("study"), _new_id("job")
        con.execute(
            "INSERT INTO studies (study_id, name, spec, launched_by, launched_from) "
            "VALUES (?, ?, ?, ?, ?)",
            [study_id, name, json.dumps(spec), launched_by, launched_from],
        )
        try:
            con.execute(
                "INSERT INTO jobs (job_id, study_id, request_id, status) "
                "VALUES (?, ?, ?, 'queued')",
                [job_id, study_id, request_id],
            )
        except duckdb.ConstraintException as exc:
            raise StoreError(f"request {request_id!r} was already submitted") from exc
        _log(con, job_id, "INFO", f"queued study {name!r}")
        record_in(con, "launch", actor=launched_by, target=study_id, detail=f"{name!r}, {job_id}")
    return job_id


def claim_next_job(worker_id: str, *, path: Path | str | None = None) -> Job | None:
    """Atomically move the oldest queued job to running for ``worker_id``; None if none."""
    with connect(path) as con:
        row = con.execute(
            """
            UPDATE jobs SET status = 'running', worker_id = ?, attempts = attempts + 1,
                   started_at = coalesce(started_at, current_timestamp),
                   heartbeat_at = current_timestamp
            WHERE job_id = (SELECT job_id FROM jobs WHERE status = 'queued'
                            ORDER BY created_at, job_id LIMIT 1)
              AND status = 'queued'
            RETURNING job_id
            """,
            [worker_id],
        ).fetchone()
        if row is None:
            return None
        _log(con, row[0], "INFO", f"claimed by worker {worker_id}")
        return _read_job(con, row[0])


def get_job(job_id: str, *, path: Path | str | None = None) -> Job:
    """One job by id; StoreError naming the id if there is none."""
    with connect(path, read_only=True) as con:
        return _read_job(con, job_id)


def _read_job(con: duckdb.DuckDBPyConnection, job_id: str) -> Job:
    row = con.execute(
        """
        SELECT j.job_id, j.study_id, j.status, s.spec, j.cancel_requested, j.worker_id,
               j.runs_total, j.runs_done, j.created_at, s.launched_by
        FROM jobs j JOIN studies s USING (study_id) WHERE j.job_id = ?
        """,
        [job_id],
    ).fetchone()
    if row is None:
        raise StoreError(f"no job {job_id!r}; `python -m jobs status` lists the jobs")
    return Job(
        job_id=row[0],
        study_id=row[1],
        status=JobStatus(row[2]),
        spec=json.loads(row[3]),
        cancel_requested=bool(row[4]),
        worker_id=row[5],
        runs_total=row[6],
        runs_done=row[7],
        created_at=row[8],
        launched_by=row[9],
    )


def update_progress(
    job_id: str,
    *,
    worker_id: str,
    runs_total: int | None = None,
    runs_done: int | None = None,
    current_run: str | None = None,
    current_epoch: int | None = None,
    latest_val_amae: float | None = None,
    path: Path | str | None = None,
) -> bool:
    """Record live progress and beat the job's heartbeat; return whether cancel was asked.

    Only the worker that holds the job may write; a job taken back (requeued) is left alone.
    """
    with connect(path) as con:
        row = con.execute(
            """
            UPDATE jobs SET heartbeat_at = current_timestamp,
                   runs_total = coalesce(?, runs_total), runs_done = coalesce(?, runs_done),
                   current_run = coalesce(?, current_run),
                   current_epoch = coalesce(?, current_epoch),
                   latest_val_amae = coalesce(?, latest_val_amae)
            WHERE job_id = ? AND worker_id = ? AND status = 'running'
            RETURNING cancel_requested
            """,
            [runs_total, runs_done, current_run, current_epoch, latest_val_amae, job_id, worker_id],
        ).fetchone()
    return bool(row and row[0])


def finish_job(
    job_id: str,
    status: JobStatus,
    *,
    error: str | None = None,
    path: Path | str | None = None,
) -> None:
    """Mark a running job succeeded, failed (with the traceback text) or cancelled."""
    if not status.is_finalized():
        raise ValueError(f"{status=} is not a final state")
    with connect(path) as con:
        con.execute(
            """
            UPDATE jobs SET status = ?, error = ?, finished_at = current_timestamp,
                   current_run = NULL
            WHERE job_id = ?
            """,
            [status.value, error, job_id],
        )
        level = "ERROR" if status is JobStatus.FAILED else "INFO"
        _log(
            con, job_id, level, f"{status.value}" + (f": {error.splitlines()[-1]}" if error else "")
        )


def fail_job(job_id: str, error: str, *, path: Path | str | None = None) -> None:
    """Mark a job failed and keep the traceback text in ``jobs.error``."""
    finish_job(job_id, JobStatus.FAILED, error=error, path=path)


def request_cancel(
    job_id: str, *, by: str = LOCAL_ACTOR, path: Path | str | None = None
) -> JobStatus:
    """Ask a job to stop. A queued job is cancelled at once; a running one stops at its
    next epoch boundary, keeping finished runs. Returns the job's status after the request.

    ``by`` (who asked) goes to the audit log; whether they may is `jobs.services.access`'s to say.
    """
    with connect(path) as con:
        job = _read_job(con, job_id)
        if job.status.is_finalized():
            return job.status
        record_in(con, "cancel", actor=by, target=job_id, detail=f"study {job.study_id}")
        if job.status is JobStatus.QUEUED:
            con.execute(
                "UPDATE jobs SET status = 'cancelled', cancel_requested = true, "
                "finished_at = current_timestamp WHERE job_id = ? AND status = 'queued'",
                [job_id],
            )
            _log(con, job_id, "INFO", "cancelled before it started")
            return JobStatus.CANCELLED
        con.execute("UPDATE jobs SET cancel_requested = true WHERE job_id = ?", [job_id])
        _log(con, job_id, "INFO", "cancel requested; stops at the next epoch boundary")
        return JobStatus.RUNNING


def resume_job(job_id: str, *, by: str = LOCAL_ACTOR, path: Path | str | None = None) -> JobStatus:
    """Put a cancelled or failed job back in the queue; the worker that claims it resumes at
    its first unfinished run (run ids name task, method, seed and configuration, so finished
    runs are kept and not redone; a failed run is trained again). Returns the job's new
    status, queued.

    ``by`` (who asked) goes to the audit log; whether they may is `jobs.services.access`'s to say.

    Raises:
        StoreError: No such job, or it is neither cancelled nor failed (nothing changes then).
    """
    with connect(path) as con:
        job = _read_job(con, job_id)
        if job.status not in (JobStatus.CANCELLED, JobStatus.FAILED):
            raise StoreError(
                f"job {job_id} is {job.status.value}: only a cancelled or failed job can be resumed"
            )
        con.execute(
            """
            UPDATE jobs SET status = 'queued', cancel_requested = false, worker_id = NULL,
                   current_run = NULL, error = NULL, finished_at = NULL
            WHERE job_id = ? AND status IN ('cancelled', 'failed')
            """,
            [job_id],
        )
        record_in(con, "resume", actor=by, target=job_id, detail=f"study {job.study_id}")
        _log(con, job_id, "INFO", f"resumed by {by}: queued again; finished runs are kept")
        return JobStatus.QUEUED


def requeue_stale_jobs(stale_after_s: float, *, path: Path | str | None = None) -> list[str]:
    """Put back to queued every running job whose heartbeat is older than ``stale_after_s``."""
    with connect(path) as con:
        rows = con.execute(
            """
            UPDATE jobs SET status = 'queued', worker_id = NULL, current_run = NULL
            WHERE status = 'running'
              AND heartbeat_at < current_timestamp - to_microseconds(CAST(? * 1e6 AS BIGINT))
            RETURNING job_id
            """,
            [stale_after_s],
        ).fetchall()
        for (job_id,) in rows:
            _log(con, job_id, "WARNING", "its worker stopped beating; requeued to resume")
    return [r[0] for r in rows]


def release_job(job_id: str, worker_id: str, *, path: Path | str | None = None) -> bool:
    """Put a job its worker is giving up (a clean shutdown) straight back to queued, so the
    next worker resumes it without waiting for the heartbeat to go stale."""
    with connect(path) as con:
        row = con.execute(
            "UPDATE jobs SET status = 'queued', worker_id = NULL, current_run = NULL "
            "WHERE job_id = ? AND worker_id = ? AND status = 'running' RETURNING job_id",
            [job_id, worker_id],
        ).fetchone()
        if row:
            _log(con, job_id, "WARNING", f"worker {worker_id} stopped; requeued to resume")
    return row is not None


def log_job(
    job_id: str, message: str, level: str = "INFO", *, path: Path | str | None = None
) -> None:
    """Append a line to a job's log."""
    with connect(path) as con:
        _log(con, job_id, level, message)


def _log(con: duckdb.DuckDBPyConnection, job_id: str, level: str, message: str) -> None:
    con.execute(
        "INSERT INTO job_logs (job_id, level, message) VALUES (?, ?, ?)", [job_id, level, message]
    )


def list_jobs(*, path: Path | str | None = None) -> pd.DataFrame:
    """Every job, newest first, with its study name and live progress."""
    with connect(path, read_only=True) as con:
        return con.execute(
            """
            SELECT j.job_id, s.name AS study_name, j.study_id, j.status, j.runs_done,
                   j.runs_total, j.current_run, j.current_epoch, j.latest_val_amae,
                   j.cancel_requested, j.worker_id, j.attempts, j.error, j.created_at,
                   j.started_at, j.heartbeat_at, j.finished_at,
                   epoch(coalesce(j.finished_at, current_timestamp::TIMESTAMP) - j.started_at)
                       AS elapsed_s,
                   s.launched_by, s.archived_at, s.spec AS study_spec
            FROM jobs j JOIN studies s USING (study_id)
            ORDER BY j.created_at DESC, j.job_id
            """
        ).df()


def job_log(job_id: str, *, path: Path | str | None = None) -> pd.DataFrame:
    """A job's log lines, oldest first."""
    with connect(path, read_only=True) as con:
        return con.execute(
            "SELECT logged_at, level, message FROM job_logs WHERE job_id = ? ORDER BY logged_at",
            [job_id],
        ).df()


def register_worker(
    *,
    hostname: str,
    pid: int,
    executor: str,
    devices: list[str],
    slots: int,
    path: Path | str | None = None,
) -> str:
    """Record a starting worker; return its id."""
    worker_id = _new_id("worker")
    with connect(path) as con:
        con.execute(
            "INSERT INTO workers (worker_id, hostname, pid, executor, devices, slots) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [worker_id, hostname, pid, executor, json.dumps(devices), slots],
        )
    return worker_id


def beat_worker(worker_id: str, *, stopped: bool = False, path: Path | str | None = None) -> None:
    """Refresh a worker's heartbeat, or mark it stopped."""
    with connect(path) as con:
        con.execute(
            "UPDATE workers SET heartbeat_at = current_timestamp, "
            "stopped_at = CASE WHEN ? THEN current_timestamp ELSE stopped_at END "
            "WHERE worker_id = ?",
            [stopped, worker_id],
        )


def list_workers(*, alive_within_s: float = 30.0, path: Path | str | None = None) -> pd.DataFrame:
    """Workers with ``alive`` = beat within ``alive_within_s`` and not stopped, newest first."""
    with connect(path, read_only=True) as con:
        return con.execute(
            """
            SELECT worker_id, hostname, pid, executor, devices, slots, started_at, heartbeat_at,
                   stopped_at,
                   stopped_at IS NULL AND heartbeat_at >=
                       current_timestamp - to_microseconds(CAST(? * 1e6 AS BIGINT)) AS alive,
                   epoch(current_timestamp::TIMESTAMP - heartbeat_at) AS seconds_since_beat
            FROM workers ORDER BY heartbeat_at DESC
            """,
            [alive_within_s],
        ).df()


def alive_workers(*, alive_within_s: float = 30.0, path: Path | str | None = None) -> pd.DataFrame:
    """Only the workers of `list_workers` that are alive."""
    workers = list_workers(alive_within_s=alive_within_s, path=path)
    return workers[workers["alive"]].reset_index(drop=True)
