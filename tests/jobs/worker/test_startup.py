"""The worker's start-up line: when its slot processes, first run and first result came."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from engine.config import StudySpec
from jobs.worker.executors import InlineExecutor, LocalExecutor, SlotPlan
from jobs.worker.runner import Worker
from jobs.worker.startup import process_age_s, startup_line
from store import jobs as store_jobs
from store.db import init_schema
from tests.helpers.studies import tiny_study


def fake_stat(tmp_path: Path, started_s_ago: float, command: str) -> Path:
    """A /proc/self/stat whose process started ``started_s_ago`` seconds ago."""
    import os

    ticks = os.sysconf("SC_CLK_TCK")
    start = round((time.clock_gettime(time.CLOCK_BOOTTIME) - started_s_ago) * ticks)
    # pid (comm) state, then fields 4..21, then 22: the start in ticks after boot.
    fields = ["S", *["0"] * 18, str(start), "0", "0"]
    path = tmp_path / "stat"
    path.write_text(f"4242 ({command}) {' '.join(fields)}\n")
    return path


@pytest.mark.parametrize("command", ["python", "odd ) name (x", "a b"])
def test_the_process_age_is_read_from_the_kernels_start_time(tmp_path, command):
    age = process_age_s(fake_stat(tmp_path, 12.0, command))
    assert age == pytest.approx(12.0, abs=0.1)


def test_an_unreadable_stat_gives_no_age(tmp_path):
    (tmp_path / "stat").write_text("garbage")
    assert process_age_s(tmp_path / "stat") is None
    assert process_age_s(tmp_path / "missing") is None


def test_this_process_is_older_than_the_test_and_not_older_than_the_machine():
    age = process_age_s()
    assert age is not None and 0 < age < time.clock_gettime(time.CLOCK_BOOTTIME)


def test_the_line_gives_every_step_from_the_process_start():
    line = startup_line(100.0, [110.0, 111.5], 112.0, 9.0, 130.0)
    assert line == (
        "first result 30.0 s after this worker's process started; slot processes ready "
        "(their imports and device) at 10.0 s-11.5 s; its run reached a slot at 12.0 s; its "
        "first epoch (data, the model, its compiled steps) ended at 21.0 s"
    )
    assert "slot processes" not in startup_line(100.0, [], 101.0, None, 102.0)


@pytest.mark.slow  # starts a slot process and trains
@pytest.mark.usefixtures("phantom_tmp")  # its worker finds the tiny phantom rendered
def test_a_workers_first_result_logs_its_start_up_once_in_order(tmp_path):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    spec = StudySpec.from_dict(tiny_study(methods=["nominal"], tasks=["KL"], seeds=[0, 1]))
    job_id = store_jobs.enqueue_job(spec.to_dict(), path=store)
    worker = Worker(LocalExecutor([SlotPlan("cpu", None)]), store_path=store, home=tmp_path)
    try:
        worker.run_once()
    finally:
        worker.close()

    messages = store_jobs.job_log(job_id, path=store)["message"].tolist()
    lines = [m for m in messages if m.startswith("first result")]
    assert len(lines) == 1, messages
    numbers = [float(n) for n in re.findall(r"(\d+\.\d) s", lines[0])]
    result, ready, reached, first_epoch = numbers
    assert 0 < ready <= reached <= first_epoch <= result, lines[0]


@pytest.mark.slow  # trains
@pytest.mark.usefixtures("phantom_tmp")  # its worker finds the tiny phantom rendered
def test_a_worker_that_waited_for_work_logs_no_start_up(tmp_path):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    worker = Worker(InlineExecutor(), store_path=store, home=tmp_path)
    try:
        assert not worker.run_once()  # nothing queued: it waits (as `up`'s worker does)
        spec = StudySpec.from_dict(tiny_study(methods=["nominal"], tasks=["KL"]))
        job_id = store_jobs.enqueue_job(spec.to_dict(), path=store)
        assert worker.run_once()
    finally:
        worker.close()
    messages = store_jobs.job_log(job_id, path=store)["message"].tolist()
    assert any(" done: " in m for m in messages), messages
    assert not [m for m in messages if m.startswith("first result")], messages


@pytest.mark.slow  # starts a process (tests/helpers/tier_guard.py)
def test_the_worker_process_imports_no_training_code():
    # The slots train; the worker only plans, hands out RunTasks and writes the store.
    # torchvision and torch's compiler (1-4 s of imports) in the worker would delay its
    # slot processes' spawn by as much (issue 30: a study's start-up).
    import subprocess
    import sys

    training = ("torchvision", "engine.train", "torch._dynamo", "jobs.worker.slots")
    code = (
        "import sys\nimport jobs.cli.main, jobs.worker.factory, jobs.worker.runner\n"
        f"print(sorted(m for m in {training!r} if m in sys.modules))"
    )
    repo = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
