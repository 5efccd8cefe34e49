"""Lanes compile every task's steps before their first run (issue 30: no idle GPU at the
study's first switch of task)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from engine.config import StudySpec
from engine.study import plan_runs
from jobs.worker.executors import InlineExecutor
from jobs.worker.runner import Worker
from jobs.worker.schedule import WARM_SWITCH_ENV, warm_configs
from jobs.worker.slots import SlotState
from store import jobs as store_jobs
from store.db import init_schema
from tests.helpers.studies import tiny_study
from tests.helpers.workers import run_collecting_done


def test_one_config_per_task_and_head_in_first_needed_order():
    methods = ["cdw_ce", "nominal", "beta", "clm"]
    spec = StudySpec.from_dict(tiny_study(methods=methods, seeds=[0, 1]))
    plan = plan_runs(spec, "s", "cuda")

    chosen = warm_configs(reversed(plan))

    # Every method trains on captured graphs, so every trainer is compiled ahead: cdw_ce,
    # nominal and beta share the softmax head (one trainer per task), clm has its own.
    first = {}
    for run in reversed(plan):
        head = "clm" if run.method == "clm" else "softmax"
        first.setdefault((run.task, head), run.config)
    assert list(chosen) == list(first.values())
    assert len(chosen) == 2 * len(spec.tasks)


def test_the_switch_turns_warming_off(monkeypatch: pytest.MonkeyPatch):
    spec = StudySpec.from_dict(tiny_study())
    plan = plan_runs(spec, "s", "cuda")
    assert len(warm_configs(plan)) == 2
    monkeypatch.setenv(WARM_SWITCH_ENV, "off")
    assert warm_configs(plan) == ()


def test_warming_on_cpu_builds_each_trainer_once_and_compiles_nothing():
    spec = StudySpec.from_dict(tiny_study())
    configs = warm_configs(plan_runs(spec, "s", "cpu"))
    state = SlotState(device=torch.device("cpu"))

    state.warm(configs)

    # The trainers the runs will use exist (built once, reused); on the plain CPU path there
    # are no graphs, so warm_up says it did nothing.
    assert {key[0] for key in state.trainers} == {"KL", "CPPD"}
    built = dict(state.trainers)
    assert state.warm(configs) == 0.0, "a lane warms once"
    assert state.trainers == built
    for config in configs:
        assert state.trainer(config) is built[next(k for k in built if k[0] == config.task)]
        assert state.trainer(config).warm_up(config) is False


@pytest.mark.slow  # trains a model (tests/helpers/tier_guard.py)
@pytest.mark.usefixtures("phantom_tmp")  # its worker finds the tiny phantom rendered
def test_a_lane_warms_every_task_after_its_first_run_not_before(tmp_path: Path):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    spec = StudySpec.from_dict(tiny_study(methods=["nominal", "beta"]))
    job_id = store_jobs.enqueue_job(spec.to_dict(), path=store)
    worker = Worker(InlineExecutor("cpu"), store_path=store, home=tmp_path)
    warm_seconds = [msg["warm_s"] for msg in run_collecting_done(worker)]

    assert store_jobs.get_job(job_id, path=store).status == "succeeded"
    # The first run starts at once; the second builds the trainers of every task first.
    assert len(warm_seconds) == 4
    assert warm_seconds[0] == 0.0
    assert warm_seconds[1] > 0.0
    assert warm_seconds[2:] == [0.0, 0.0]


@pytest.mark.slow  # trains a model (tests/helpers/tier_guard.py)
@pytest.mark.usefixtures("phantom_tmp")  # its worker finds the tiny phantom rendered
def test_a_lanes_first_run_says_when_it_first_trained(tmp_path: Path):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    spec = StudySpec.from_dict(tiny_study(methods=["nominal"]))
    store_jobs.enqueue_job(spec.to_dict(), path=store)
    worker = Worker(InlineExecutor("cpu"), store_path=store, home=tmp_path)
    done = run_collecting_done(worker)

    # Only the lane's first run reports its start-up (the job log's start-up breakdown).
    first, *later = [msg["first_epoch_s"] for msg in done]
    assert first is not None and 0 < first <= done[0]["duration_s"] + 60
    assert later and all(seconds is None for seconds in later)


def test_a_lane_keeps_one_trainer_per_image_size_between_studies():
    spec = StudySpec.from_dict(tiny_study())
    config = plan_runs(spec, "s", "cpu")[0].config
    state = SlotState(device=torch.device("cpu"))

    first = state.trainer(config)
    same = state.trainer(config)
    smaller = state.trainer(replace(config, image_size=config.image_size // 2))

    # A worker's slots outlive its studies: a study at another image size must not replay
    # the graphs (or the compile) of the previous one's size.
    assert same is first
    assert smaller is not first
