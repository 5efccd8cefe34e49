"""Several slots as lanes (threads) of one slot process."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.config import StudySpec
from jobs.worker.executors import (
    Executor,
    InlineExecutor,
    LocalExecutor,
    SlotPlan,
    plan_slots,
    split_lanes,
)
from jobs.worker.runner import Worker
from jobs.worker.slots import physical_gpu
from store import jobs as store_jobs
from store import runs as store_runs
from store.db import init_schema
from tests.helpers.studies import tiny_study
from tests.helpers.workers import seed_tiny_phantom


def test_a_gpus_slots_are_spread_evenly_over_its_processes_as_lanes():
    assert split_lanes(4, 1) == [4]
    assert split_lanes(5, 2) == [3, 2]
    assert split_lanes(2, 4) == [1, 1]


def test_cpu_slots_are_one_process_each():
    assert [p.lanes for p in plan_slots("cpu", 4, cpu_slots=2)] == [1, 1]


def _train(executor: Executor, home: Path, device: str) -> tuple[str, list[tuple[str, int]]]:
    store = home / "softgrade.duckdb"
    init_schema(store)
    spec = StudySpec.from_dict(tiny_study(methods=["nominal", "beta"], device=device))
    job_id = store_jobs.enqueue_job(spec.to_dict(), path=store)
    worker = Worker(executor, store_path=store, home=home)
    finished: list[tuple[str, int]] = []
    handle = worker._handle

    def spy(state, msg):
        if msg["kind"] == "done":
            finished.append((msg["run_id"], msg.get("slot", 0)))
        return handle(state, msg)

    worker._handle = spy
    worker.run_once()
    worker.close()
    job = store_jobs.get_job(job_id, path=store)
    assert job.status == "succeeded", store_jobs.list_jobs(path=store).error.iloc[0]
    return store_jobs.get_job(job_id, path=store).study_id, finished


@pytest.mark.slow  # trains in two lanes
def test_two_lanes_of_one_process_both_train_and_match_one_slot_run_by_run(
    tmp_path, tiny_phantom, device
):
    lanes_home = seed_tiny_phantom(tmp_path / "lanes", tiny_phantom)
    alone_home = seed_tiny_phantom(tmp_path / "alone", tiny_phantom)
    gpu = "0" if device == "cuda" else None
    executor = LocalExecutor([SlotPlan(device, gpu, lanes=2)])
    assert executor.slots == 2
    assert executor.devices == ["cpu", "cpu"] if device == "cpu" else ["cuda:0", "cuda:0"]
    lanes_study, finished = _train(executor, lanes_home, device)
    alone_study, alone = _train(InlineExecutor(device), alone_home, device)

    assert {slot for _, slot in finished} == {0, 1}
    assert len(finished) == len(alone) == 4
    for run_id, _ in finished:
        same_run = run_id.replace(lanes_study, alone_study)
        side_by_side = store_runs.run_predictions(run_id, path=lanes_home / "softgrade.duckdb")
        one_at_a_time = store_runs.run_predictions(same_run, path=alone_home / "softgrade.duckdb")
        assert len(side_by_side) == len(one_at_a_time) > 0
        probs = np.stack(side_by_side.probs)
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-3)
        if device == "cpu":
            # Same seed, same initial weights and batches whatever the other lane does. (On a
            # GPU, cuDNN picks kernels per process and bf16 rounds differently, and two epochs
            # on 60 films are chaotic enough to flip predictions, so only the CPU compares.)
            np.testing.assert_allclose(probs, np.stack(one_at_a_time.probs), atol=1e-4)


def test_a_slot_asks_for_the_gpu_its_worker_was_given_not_the_machines_first():
    # A worker started with CUDA_VISIBLE_DEVICES=2,3 calls them GPUs 0 and 1
    assert physical_gpu("0", "2,3") == "2"
    assert physical_gpu("1", "2, 3") == "3"
    assert physical_gpu("0", "GPU-5adb9c9b,GPU-0e63ce21") == "GPU-5adb9c9b"
    # A worker that sees every GPU: the index is the machine's
    assert physical_gpu("1", None) == "1"
    assert physical_gpu("1", "") == "1"
