"""A failed run does not sink its study (issue 37): it is stored as failed with its error, the
study goes on, the job ends saying how many failed and why, `softgrade status JOB` prints each
traceback, and a slot process that lost its CUDA context (or died) is replaced."""

from __future__ import annotations

import time

import pytest

from engine.config import StudySpec
from jobs.cli.main import main as cli_main
from jobs.worker.executors import InlineExecutor, LocalExecutor, SlotPlan
from jobs.worker.runner import Worker, failed_runs_summary, last_line
from jobs.worker.slots import error_line, lost_cuda_context
from store import jobs as store_jobs
from store import runs as store_runs
from tests.helpers.studies import tiny_study

pytestmark = pytest.mark.slow


def _failing_beta(monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.train

    real = engine.train.Trainer.fit

    def fit(self, config, data, **kwargs):
        if config.method == "beta":
            raise RuntimeError("beta's loss met a NaN wall")
        return real(self, config, data, **kwargs)

    monkeypatch.setattr(engine.train.Trainer, "fit", fit)


@pytest.mark.usefixtures("phantom_tmp")  # its worker finds the tiny phantom rendered
def test_a_failing_method_leaves_the_other_runs_stored_and_says_why(tmp_path, monkeypatch, capsys):
    _failing_beta(monkeypatch)
    store = tmp_path / "softgrade.duckdb"
    spec = StudySpec.from_dict(tiny_study(methods=["nominal", "beta"], tasks=["CPPD"]))
    worker = Worker(InlineExecutor("cpu"), store_path=store, home=tmp_path)
    job_id = store_jobs.enqueue_job(spec.to_dict(), path=store)
    worker.serve(stop_when_idle=True)

    job = store_jobs.list_jobs(path=store).set_index("job_id").loc[job_id]
    runs = store_runs.list_runs([job.study_id], path=store)
    failed = store_runs.failed_runs([job.study_id], path=store)
    assert set(runs["method"]) == {"nominal"} and len(runs) == len(spec.seeds)
    assert set(failed["method"]) == {"beta"} and len(failed) == len(spec.seeds)
    assert (failed["error_line"] == "RuntimeError: beta's loss met a NaN wall").all()
    assert job.status == "failed"
    total = 2 * len(spec.seeds)
    assert job.error.startswith(f"{len(spec.seeds)} of {total} runs failed; every other run")
    assert f"softgrade status {job_id}" in job.error

    monkeypatch.setenv("SOFTGRADE_HOME", str(tmp_path))
    monkeypatch.setattr("store.db.default_store_path", lambda: store)
    monkeypatch.setattr("jobs.cli.main.default_store_path", lambda: store)
    assert cli_main(["status", job_id]) == 0
    printed = capsys.readouterr().out
    assert printed.count("Traceback (most recent call last)") == len(spec.seeds)
    assert "beta's loss met a NaN wall" in printed
    assert cli_main(["status", "no-such-job"]) == 2
    assert "no job 'no-such-job'" in capsys.readouterr().err


@pytest.mark.usefixtures("phantom_tmp")  # its worker finds the tiny phantom rendered
def test_a_resumed_study_trains_its_failed_runs_again_and_forgets_the_failure(
    tmp_path, monkeypatch
):
    _failing_beta(monkeypatch)
    store = tmp_path / "softgrade.duckdb"
    spec = StudySpec.from_dict(tiny_study(methods=["nominal", "beta"], tasks=["CPPD"], seeds=1))
    worker = Worker(InlineExecutor("cpu"), store_path=store, home=tmp_path)
    job_id = store_jobs.enqueue_job(spec.to_dict(), path=store)
    worker.serve(stop_when_idle=True)
    study_id = store_jobs.get_job(job_id, path=store).study_id
    assert len(store_runs.failed_runs([study_id], path=store)) == 1

    monkeypatch.undo()
    assert store_jobs.resume_job(job_id, path=store) == "queued"
    Worker(InlineExecutor("cpu"), store_path=store, home=tmp_path).serve(stop_when_idle=True)
    assert store_jobs.get_job(job_id, path=store).status == "succeeded"
    assert store_runs.failed_runs([study_id], path=store).empty
    assert set(store_runs.list_runs([study_id], path=store)["method"]) == {"nominal", "beta"}


def test_a_cuda_fault_is_told_apart_from_an_ordinary_error():
    def raised(exc: BaseException) -> BaseException:
        try:
            raise exc
        except BaseException as caught:
            return caught

    assert lost_cuda_context(RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert lost_cuda_context(RuntimeError("cuDNN error: CUDNN_STATUS_INTERNAL_ERROR"))
    try:
        try:
            raise RuntimeError("CUDA error: unspecified launch failure")
        except RuntimeError as inner:
            raise ValueError("while saving") from inner
    except ValueError as outer:
        assert lost_cuda_context(outer)
    assert not lost_cuda_context(raised(ValueError("lr must be positive")))
    assert error_line(ValueError("first\nsecond")) == "ValueError: first"
    assert len(error_line(ValueError("x" * 1000))) == 300
    assert last_line("Traceback (most recent call last):\n  ...\nKeyError: 'x'\n\n") == (
        "KeyError: 'x'"
    )


def test_the_summary_names_the_count_the_first_errors_and_the_first_traceback():
    failed = [(f"r{i}", f"Error: {i}", f"Traceback ...\nError: {i}") for i in range(7)]
    text = failed_runs_summary(failed, 20, "job-1")
    assert text.startswith("7 of 20 runs failed")
    assert "run r4: Error: 4" in text and "run r5" not in text.split("... and")[0]
    assert "... and 2 more" in text and "softgrade status job-1" in text
    assert text.endswith("Traceback ...\nError: 0")


def _wait_ready(executor: LocalExecutor, seen: list[dict], count: int) -> None:
    deadline = time.monotonic() + 120
    while len(executor.slots_ready_at()) < count and time.monotonic() < deadline:
        executor.poll(0.5, seen.append)
    assert len(executor.slots_ready_at()) >= count, f"slots never ready; saw {seen}"


def test_a_slot_process_that_lost_its_cuda_context_is_replaced_and_its_siblings_requeued():
    executor = LocalExecutor([SlotPlan("cpu", None, lanes=2)], threads_per_slot=1)
    seen: list[dict] = []
    try:
        _wait_ready(executor, seen, 2)
        before = executor._procs[0].pid
        # Both lanes busy; lane 0's run reports a CUDA fault.
        executor._busy[0], executor._busy[1] = "faulty", "innocent"
        executor._outbox.put(
            {
                "kind": "error",
                "slot": 0,
                "run_id": "faulty",
                "traceback": "RuntimeError: CUDA error",
                "context_lost": True,
            }
        )
        deadline = time.monotonic() + 30
        while not any(m["kind"] == "requeue" for m in seen) and time.monotonic() < deadline:
            executor.poll(0.5, seen.append)
        assert executor._procs[0].pid != before and executor._procs[0].is_alive()
        kinds = [(m["kind"], m["run_id"]) for m in seen if m["kind"] in ("error", "requeue")]
        assert kinds == [("error", "faulty"), ("requeue", "innocent")]
        assert executor.free_slots() == 2
    finally:
        executor.close()


def test_a_slot_process_that_died_mid_run_fails_that_run_and_is_started_again():
    executor = LocalExecutor([SlotPlan("cpu", None, lanes=1)], threads_per_slot=1)
    seen: list[dict] = []
    try:
        _wait_ready(executor, seen, 1)
        executor._busy[0] = "doomed"
        executor._procs[0].kill()
        executor._procs[0].join(timeout=10)
        deadline = time.monotonic() + 30
        while not seen and time.monotonic() < deadline:
            executor.poll(0.5, seen.append)
        errors = [m for m in seen if m["kind"] == "error"]
        assert [m["run_id"] for m in errors] == ["doomed"]
        assert "slot process died" in errors[0]["error_line"]
        assert executor._procs[0].is_alive() and executor.free_slots() == 1
    finally:
        executor.close()
