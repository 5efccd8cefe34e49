"""Measured run costs per device, the cost model made from them, and longest runs first."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.config import StudySpec
from engine.study import plan_runs
from jobs.services.run_costs import (
    CostModel,
    cost_model,
    family_of,
    latest_device,
    time_left,
)
from jobs.worker.executors import InlineExecutor
from jobs.worker.runner import Worker
from jobs.worker.schedule import expected_cost, longest_first
from store import costs as store_costs
from store import jobs as store_jobs
from store.db import init_schema
from tests.helpers.studies import tiny_study
from tests.helpers.workers import run_collecting_done

GPU = "NVIDIA H200"


def measured_rows(rows: list[dict]) -> pd.DataFrame:
    """`store.costs.run_costs`-shaped rows (defaults: 224 px, batch 128, cap 100)."""
    base = {
        "device_name": GPU,
        "slots_sharing": 4,
        "image_size": 224,
        "batch_size": 128,
        "max_epochs": 100,
        "recorded_at": pd.Timestamp("2026-11-01"),
    }
    frame = pd.DataFrame([{**base, **row} for row in rows])
    frame["images_per_s"] = frame["n_train"] * frame["epochs_run"] / frame["wall_s"]
    return frame


def test_longest_expected_runs_go_first_within_each_seed():
    spec = StudySpec.from_dict(tiny_study(methods=["nominal", "cdw_ce"], seeds=[0, 1]))
    plan = plan_runs(spec, "s", "cuda")
    n_train = {(t, s): {"KL": 20, "CPPD": 30}[t] for t in spec.tasks for s in spec.seeds}
    cost = expected_cost(n_train, on_gpu=True, model=None)

    order = longest_first(plan, cost)

    assert [r.seed for r in order] == sorted(r.seed for r in plan), "seeds stay in plan order"
    for seed in spec.seeds:
        costs = [cost(r) for r in order if r.seed == seed]
        assert costs == sorted(costs, reverse=True)
    # CPPD trains on more images; cdw_ce has no target matrix, so a GPU trains it eagerly
    first_seed = [(r.task, r.method) for r in order if r.seed == 0]
    assert first_seed == [
        ("CPPD", "cdw_ce"),
        ("KL", "cdw_ce"),
        ("CPPD", "nominal"),
        ("KL", "nominal"),
    ]


def test_a_measured_model_orders_by_what_runs_cost_on_that_device():
    spec = StudySpec.from_dict(tiny_study(methods=["nominal", "beta"], image_size=32))
    plan = plan_runs(spec, "s", "cuda")
    n_train = {(t, 0): 25 for t in spec.tasks}
    # Measured: KL runs stop late, CPPD runs early, so KL costs more despite equal images.
    model = CostModel(
        device_name=GPU,
        runs=4,
        unit={("KL", family_of("nominal")): 1e-3, ("CPPD", family_of("nominal")): 1e-3},
        epochs={("KL", family_of("nominal"), 2): 2.0, ("CPPD", family_of("nominal"), 2): 1.0},
    )
    order = longest_first(plan, expected_cost(n_train, on_gpu=True, model=model))
    assert [r.task for r in order] == ["KL", "KL", "CPPD", "CPPD"]


def test_the_model_scales_the_measured_share_of_the_card_by_images_and_epochs():
    measured = measured_rows(
        [
            {"task": "KL", "method": "nominal", "n_train": 500, "epochs_run": 50, "wall_s": 40.0},
            {"task": "KL", "method": "beta", "n_train": 500, "epochs_run": 70, "wall_s": 56.0},
            {"task": "KL", "method": "cdw_ce", "n_train": 500, "epochs_run": 60, "wall_s": 90.0},
            {
                "task": "KL",
                "method": "nominal",
                "n_train": 500,
                "epochs_run": 50,
                "wall_s": 9.0,
                "device_name": "NVIDIA H100 80GB HBM3",
            },
        ]
    )
    model = cost_model(measured, GPU, image_size=224, batch_size=128)
    assert model is not None and model.runs == 3
    # nominal and beta are one family: 40 / 4 / (500 * 50) = 56 / 4 / (500 * 70) = 3.2e-4
    per_image_epoch = 40.0 / 4 / (500 * 50)
    assert model.run_seconds("KL", "beta", 1000, 100, all_epochs=True) == pytest.approx(
        per_image_epoch * 1000 * 100
    )
    # epochs: the median the family stopped at on any device (50, 70, 50), unless all are
    # asked for: early stopping follows the data, not the device
    assert model.run_seconds("KL", "nominal", 1000, 100) == pytest.approx(
        per_image_epoch * 1000 * 50
    )
    # a task not measured borrows its family's cost; the eager family costs more
    assert model.run_seconds("CPPD", "cdw_ce", 1000, 100, all_epochs=True) > model.run_seconds(
        "CPPD", "nominal", 1000, 100, all_epochs=True
    )
    assert cost_model(measured, GPU, image_size=32, batch_size=128) is None
    assert cost_model(measured, "NVIDIA A100", image_size=224, batch_size=128) is None


def test_latest_device_of_each_kind():
    measured = measured_rows(
        [
            {"task": "KL", "method": "nominal", "n_train": 5, "epochs_run": 1, "wall_s": 1.0},
            {
                "task": "KL",
                "method": "nominal",
                "n_train": 5,
                "epochs_run": 1,
                "wall_s": 1.0,
                "device_name": "CPU Xeon (1 thread(s))",
                "recorded_at": pd.Timestamp("2026-12-01"),
            },
        ]
    )
    assert latest_device(measured, gpu=True) == GPU
    assert latest_device(measured, gpu=False) == "CPU Xeon (1 thread(s))"
    assert latest_device(measured.iloc[:0], gpu=True) is None


def test_time_left_sums_the_unfinished_runs_at_the_studys_measured_cost():
    runs = pd.DataFrame(
        [
            {
                "task": "KL",
                "method": "nominal",
                "device_name": GPU,
                "slots_sharing": 4,
                "n_train": 500,
                "epochs_run": 50,
                "wall_s": 40.0,
            },
            {
                "task": "CPPD",
                "method": "nominal",
                "device_name": GPU,
                "slots_sharing": 4,
                "n_train": 900,
                "epochs_run": 50,
                "wall_s": 80.0,
            },
            {
                "task": "CPPD",
                "method": "beta",
                "device_name": None,
                "slots_sharing": None,
                "n_train": None,
                "epochs_run": None,
                "wall_s": None,
            },  # stored before costs
        ]
    )
    planned = {("KL", "nominal"): 3, ("CPPD", "nominal"): 2, ("CPPD", "beta"): 2}
    left = time_left(runs, planned, parallel=2)
    assert left is not None and left.device_name == GPU and left.measured_runs == 2
    # KL nominal: 2 left at 10 s; CPPD nominal: 1 at 20 s; CPPD beta: 1 at 20 s (its family)
    assert left.seconds == pytest.approx((2 * 10 + 20 + 20) / 2)
    assert time_left(runs.iloc[2:], planned, parallel=1) is None


@pytest.mark.slow  # trains a tiny study
def test_a_finished_run_stores_its_cost_and_runs_go_longest_first(tmp_path):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    spec = StudySpec.from_dict(tiny_study(methods=["nominal", "beta"]))
    store_jobs.enqueue_job(spec.to_dict(), path=store)
    executor = InlineExecutor("cpu")
    worker = Worker(executor, store_path=store, home=tmp_path)
    trainers: list[tuple[str, int]] = []
    make_trainer = executor.state.trainer

    def trainer_of(config):
        trainer = make_trainer(config)
        trainers.append((config.task, id(trainer)))
        return trainer

    executor.state.trainer = trainer_of

    finished = [msg["run_id"] for msg in run_collecting_done(worker)]

    costs = store_costs.run_costs(path=store)
    assert len(costs) == 4
    assert costs["device_name"].str.startswith("CPU ").all()
    assert costs["device_name"].str.endswith("(1 thread(s))").all()
    assert (costs["slots_sharing"] == 1).all() and (costs["images_per_s"] > 0).all()
    by_task = costs.groupby("task")["n_train"].first()
    # the tiny phantom grades CPPD on every film and KL on some: CPPD trains on more
    assert by_task["CPPD"] > by_task["KL"]
    assert [run_id.split("-")[-4] for run_id in finished] == ["CPPD", "CPPD", "KL", "KL"]
    # both tasks' trainers (compiled steps on a GPU) stay warm: one each, reused run to run
    # (and by the lane's warm-up of every task after its first run)
    assert len(trainers) >= 4 and len(set(trainers)) == 2
    assert store_costs.live_device_rates(path=store).empty, "rates are cleared at the end"
