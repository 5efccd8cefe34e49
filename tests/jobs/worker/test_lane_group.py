"""One lane of a slot process compiles the job's tasks ahead while its siblings train their
first runs (issue 30: no idle GPU after the study's first result)."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from engine.config import StudySpec
from engine.study import plan_runs
from jobs.worker.lane_group import LaneGroup
from jobs.worker.schedule import warm_configs
from jobs.worker.slots import SlotState, _warm_before_run, _warms_ahead
from jobs.worker.tasks import RunTask
from tests.helpers.studies import tiny_study


def _waiter(group: LaneGroup) -> tuple[threading.Thread, list[float]]:
    waited: list[float] = []
    thread = threading.Thread(target=lambda: waited.append(group.wait_for_siblings()))
    thread.start()
    return thread, waited


def test_only_the_first_lane_to_ask_warms_ahead_and_never_a_lone_lane():
    group = LaneGroup(4)
    assert [group.claim_warming() for _ in range(4)] == [True, False, False, False]
    assert LaneGroup(1).claim_warming() is False


def test_the_warming_lane_waits_until_every_sibling_has_compiled():
    group = LaneGroup(3, settle_s=5.0, compile_wait_s=30.0)
    thread, waited = _waiter(group)
    with group.first_run() as first, group.first_run() as second:
        first()
        time.sleep(0.2)
        assert thread.is_alive(), "one sibling is still compiling: the warming lane must wait"
        second()
        thread.join(timeout=5)
    assert not thread.is_alive() and waited, "the last sibling compiled: the wait must end"


def test_a_sibling_run_that_ends_before_its_first_epoch_releases_the_wait():
    group = LaneGroup(2, settle_s=5.0, compile_wait_s=30.0)
    thread, _ = _waiter(group)
    with pytest.raises(RuntimeError), group.first_run():
        raise RuntimeError("the run failed while compiling")
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_siblings_that_never_get_a_run_hold_the_wait_only_for_the_settle_time():
    group = LaneGroup(4, settle_s=0.2, compile_wait_s=30.0)
    started = time.perf_counter()
    waited = group.wait_for_siblings()
    assert 0.15 <= waited <= 2.0
    assert time.perf_counter() - started < 2.0


def test_only_a_gpu_lane_among_several_with_tasks_to_compile_warms_ahead():
    spec = StudySpec.from_dict(tiny_study())
    plan = plan_runs(spec, "s", "cuda")
    run = plan[0]
    task = RunTask("job", run.run_id, run.config, "cache", None, None, warm=warm_configs(plan))  # type: ignore[arg-type]
    group = LaneGroup(2)
    cuda = [SlotState(device=torch.device("cuda"), group=group) for _ in range(2)]
    for state in cuda:
        state.runs_started = 1

    assert [_warms_ahead(state, task) for state in cuda] == [True, False]
    cpu = SlotState(device=torch.device("cpu"), group=LaneGroup(2))
    cpu.runs_started = 1
    assert _warms_ahead(cpu, task) is False, "CPU lanes compile nothing: nobody waits"
    alone = SlotState(device=torch.device("cuda"))
    alone.runs_started = 1
    assert _warms_ahead(alone, task) is False
    later = SlotState(device=torch.device("cuda"), group=LaneGroup(2))
    later.runs_started = 2
    assert _warms_ahead(later, task) is False, "only before a lane's first run"


def test_a_sibling_lane_leaves_the_compiling_to_its_warming_lane():
    spec = StudySpec.from_dict(tiny_study())
    plan = plan_runs(spec, "s", "cuda")
    run = plan[0]
    task = RunTask("job", run.run_id, run.config, "cache", None, None, warm=warm_configs(plan))  # type: ignore[arg-type]
    sibling = SlotState(device=torch.device("cuda"), group=LaneGroup(4))
    sibling.runs_started = 2

    # No trainer is built and nothing compiled here: on its second run a sibling would wait
    # for the warming lane's compile (the lock), idling the GPU.
    assert _warm_before_run(sibling, task, warms_ahead=False) == 0.0
    assert not sibling.warmed and not sibling.trainers
