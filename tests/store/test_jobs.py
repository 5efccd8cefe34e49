"""Job queue semantics: idempotent submit, atomic claim, cancel, stale requeue."""

from __future__ import annotations

import multiprocessing as mp
import time

import pytest

from store import jobs
from store.db import StoreError


def test_repeated_request_creates_one_job(store):
    first = jobs.enqueue_job({"name": "a"}, request_id="req-1", path=store)
    second = jobs.enqueue_job({"name": "a"}, request_id="req-1", path=store)
    assert first == second
    assert len(jobs.list_jobs(path=store)) == 1


def _claim(args: tuple[str, str]) -> str | None:
    worker, path = args
    job = jobs.claim_next_job(worker, path=path)
    return None if job is None else job.job_id


@pytest.mark.slow  # starts a process (tests/helpers/tier_guard.py)
def test_claim_next_job_is_atomic_across_processes(store):
    job_id = jobs.enqueue_job({"name": "a"}, path=store)
    ctx = mp.get_context("spawn")
    with ctx.Pool(3) as pool:
        claims = pool.map(_claim, [(f"w{i}", str(store)) for i in range(3)])
    assert sorted(c for c in claims if c) == [job_id]
    job = jobs.get_job(job_id, path=store)
    assert job.status == "running" and job.worker_id in {"w0", "w1", "w2"}


def test_claims_take_oldest_job_first(store):
    a = jobs.enqueue_job({"name": "a"}, path=store)
    b = jobs.enqueue_job({"name": "b"}, path=store)
    assert jobs.claim_next_job("w", path=store).job_id == a
    assert jobs.claim_next_job("w", path=store).job_id == b
    assert jobs.claim_next_job("w", path=store) is None


def test_cancel_of_queued_job_is_immediate_and_running_job_is_flagged(store):
    queued = jobs.enqueue_job({"name": "q"}, path=store)
    running = jobs.enqueue_job({"name": "r"}, path=store)
    assert jobs.request_cancel(queued, path=store) == "cancelled"
    jobs.claim_next_job("w", path=store)
    assert jobs.request_cancel(running, path=store) == "running"
    assert jobs.update_progress(running, worker_id="w", runs_done=1, path=store) is True


def test_stale_running_job_is_requeued_and_fresh_one_is_not(store):
    job_id = jobs.enqueue_job({"name": "a"}, path=store)
    jobs.claim_next_job("w", path=store)
    assert jobs.requeue_stale_jobs(60, path=store) == []
    time.sleep(0.3)
    assert jobs.requeue_stale_jobs(0.1, path=store) == [job_id]
    job = jobs.get_job(job_id, path=store)
    assert job.status == "queued" and job.worker_id is None


def test_progress_from_a_worker_that_lost_the_job_is_ignored(store):
    job_id = jobs.enqueue_job({"name": "a"}, path=store)
    jobs.claim_next_job("old", path=store)
    time.sleep(0.2)
    jobs.requeue_stale_jobs(0.1, path=store)
    jobs.claim_next_job("new", path=store)
    jobs.update_progress(job_id, worker_id="old", runs_done=7, path=store)
    assert jobs.get_job(job_id, path=store).runs_done == 0


def test_failed_job_keeps_its_traceback(store):
    job_id = jobs.enqueue_job({"name": "a"}, path=store)
    jobs.claim_next_job("w", path=store)
    jobs.fail_job(job_id, "Traceback ...\nValueError: bad", path=store)
    row = jobs.list_jobs(path=store).iloc[0]
    assert row.status == "failed" and "ValueError: bad" in row.error
    assert "ValueError: bad" in " ".join(jobs.job_log(job_id, path=store)["message"])


def test_worker_is_alive_until_it_stops(store):
    worker = jobs.register_worker(
        hostname="h", pid=1, executor="local", devices=["cpu"], slots=1, path=store
    )
    assert bool(jobs.list_workers(path=store).iloc[0].alive)
    jobs.beat_worker(worker, stopped=True, path=store)
    assert not bool(jobs.list_workers(path=store).iloc[0].alive)


def test_a_cancelled_job_resumes_as_queued_and_a_worker_claims_it_again(store):
    job_id = jobs.enqueue_job({"name": "r"}, path=store)
    jobs.claim_next_job("w", path=store)
    jobs.update_progress(job_id, worker_id="w", runs_total=4, runs_done=2, path=store)
    jobs.request_cancel(job_id, path=store)
    jobs.finish_job(job_id, jobs.JobStatus.CANCELLED, path=store)
    assert jobs.resume_job(job_id, by="mo", path=store) == "queued"
    job = jobs.get_job(job_id, path=store)
    assert (job.status, job.cancel_requested, job.worker_id) == ("queued", False, None)
    assert job.runs_done == 2  # finished runs stay counted; the worker skips them
    claimed = jobs.claim_next_job("w2", path=store)
    assert claimed is not None and claimed.job_id == job_id
    assert jobs.update_progress(job_id, worker_id="w2", path=store) is False  # no stale cancel


def test_only_a_cancelled_or_failed_job_resumes(store):
    job_id = jobs.enqueue_job({"name": "q"}, path=store)
    for step in ("queued", "running", "succeeded"):
        if step == "running":
            jobs.claim_next_job("w", path=store)
        elif step == "succeeded":
            jobs.finish_job(job_id, jobs.JobStatus.SUCCEEDED, path=store)
        with pytest.raises(StoreError, match=f"is {step}: only a cancelled or failed job"):
            jobs.resume_job(job_id, path=store)
        assert jobs.get_job(job_id, path=store).status == step
    failed = jobs.enqueue_job({"name": "f"}, path=store)
    jobs.claim_next_job("w", path=store)
    jobs.fail_job(failed, "2 of 4 runs failed", path=store)
    assert jobs.resume_job(failed, path=store) == "queued"
    assert jobs.get_job(failed, path=store).status == "queued"
