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
    with_train_images,
)
from jobs.worker.executors import InlineExecutor
from jobs.worker.runner import Worker
from jobs.worker.schedule import expected_cost, longest_first
from pages.present.job_view import planned_runs
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
    cost = expected_cost(n_train, model=None)

    order = longest_first(plan, cost)

    assert [r.seed for r in order] == sorted(r.seed for r in plan), "seeds stay in plan order"
    for seed in spec.seeds:
        costs = [cost(r) for r in order if r.seed == seed]
        assert costs == sorted(costs, reverse=True)
    # CPPD trains on more images; every method trains on captured graphs, at one speed
    first_seed = [(r.task, r.method) for r in order if r.seed == 0]
    assert [task for task, _ in first_seed] == ["CPPD", "CPPD", "KL", "KL"]


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
    order = longest_first(plan, expected_cost(n_train, model=model))
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
    # a task not measured borrows its family's cost (cdw_ce's family was measured slower)
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


CPU = "CPU Test 9000 (1 thread(s))"
METHODS = ("nominal", "binomial", "beta", "triangular", "exponential")


def _synthetic_job(n_finished: int) -> tuple[pd.DataFrame, pd.DataFrame, float, float]:
    """A 20-run CPU study (2 seeds × KL, CPPD × 5 methods, as `engine/studies/quick.yaml`) whose
    KL runs train on 3× CPPD's images, handed out longest first on one slot, with the first
    ``n_finished`` runs done: (study runs, planned runs, true seconds left, the old guess).

    Every run costs 0.01 s per training image and epoch and stops early at 8-10 of its 10
    epochs. The old guess is the mean duration of the finished runs times the runs left.
    """
    n_train = {"KL": 300, "CPPD": 100}
    spec = StudySpec.from_dict(tiny_study(methods=list(METHODS), seeds=[0, 1], max_epochs=10))
    plan = plan_runs(spec, "s", "cpu")
    planned = planned_runs(spec.to_dict(), "s").assign(n_train=lambda f: f["task"].map(n_train))
    cost = expected_cost({(r.task, r.seed): n_train[r.task] for r in plan}, model=None)
    order = longest_first(plan, cost)
    epochs = {run.run_id: 8 + i % 3 for i, run in enumerate(order)}  # early stopping
    wall = {run.run_id: 0.01 * n_train[run.task] * epochs[run.run_id] for run in order}
    done = order[:n_finished]
    study_runs = pd.DataFrame(
        [
            {
                "run_id": run.run_id,
                "task": run.task,
                "method": run.method,
                "device_name": CPU,
                "slots_sharing": 1,
                "n_train": n_train[run.task],
                "max_epochs": 10,
                "epochs_run": epochs[run.run_id],
                "wall_s": wall[run.run_id],
            }
            for run in done
        ]
    )
    true_left = sum(wall[run.run_id] for run in order[n_finished:])
    old_guess = study_runs["wall_s"].mean() * (len(order) - n_finished)
    return study_runs, planned, true_left, old_guess


@pytest.mark.parametrize("n_finished", [1, 3, 5, 12])
def test_time_left_after_the_longest_runs_is_not_their_average(n_finished):
    # Lanes take the longest runs first, so the first to finish are the long KL runs: the
    # time left must price each run left at its own expected cost, not at their average.
    study_runs, planned, true_left, old_guess = _synthetic_job(n_finished)
    assert study_runs["task"].iloc[0] == "KL"  # the long runs went first
    left = time_left(study_runs, planned, parallel=1)
    assert left is not None and left.device_name == CPU and left.measured_runs == n_finished
    # Within 15 % of the truth (early stopping varies 8-10 epochs per run) ...
    assert left.seconds == pytest.approx(true_left, rel=0.15)
    if n_finished <= 5:  # ... where the old average over finished runs was 1.3-1.7x high
        assert old_guess > 1.3 * true_left
        assert abs(left.seconds - true_left) < abs(old_guess - true_left) / 3


def test_time_left_before_the_splits_are_read_prices_runs_at_the_measured_images():
    # The page reads the study's training images once its splits are stored (and caches
    # that read): until then a run left must not be priced at 1 image against the measured
    # runs' hundreds, which read "2 s left" with 46 of 60 runs to go.
    study_runs, planned, true_left, _ = _synthetic_job(5)
    unknown = planned.assign(n_train=float("nan"))
    left = time_left(study_runs, unknown, parallel=1)
    # Only KL runs are measured: CPPD's runs left are priced at KL's images (3x theirs), so
    # the guess is high, but of the right size.
    assert left is not None and true_left < left.seconds < 3 * true_left
    assert time_left(study_runs, planned, parallel=1).seconds == pytest.approx(true_left, 0.15)


def test_time_left_shares_the_runs_left_over_the_devices_and_skips_unmeasured_runs():
    runs = pd.DataFrame(
        [
            {
                "run_id": "a",
                "task": "KL",
                "method": "nominal",
                "device_name": GPU,
                "slots_sharing": 4,
                "n_train": 500,
                "max_epochs": 50,
                "epochs_run": 50,
                "wall_s": 40.0,  # 10 s of the card for 500 × 50 image-epochs
            },
            {
                "run_id": "b",
                "task": "CPPD",
                "method": "beta",
                "device_name": None,
                "slots_sharing": None,
                "n_train": None,
                "max_epochs": None,
                "epochs_run": None,
                "wall_s": None,
            },  # stored before costs
        ]
    )
    planned = pd.DataFrame(
        [
            ("a", "KL", "nominal", 0, 50, 500.0),
            ("b", "CPPD", "beta", 0, 50, 1000.0),
            ("c", "KL", "nominal", 1, 50, 500.0),
            ("d", "CPPD", "beta", 1, 50, float("nan")),  # its split not stored yet
            ("e", "CPPD", "cdw_ce", 1, 50, 1000.0),
        ],
        columns=["run_id", "task", "method", "split_seed", "max_epochs", "n_train"],
    )
    left = time_left(runs, planned, parallel=2)
    assert left is not None and left.device_name == GPU and left.measured_runs == 1
    # c: 10 s; d: CPPD's 1000 images, 20 s; e: 20 s (every method at one speed); 2 GPUs
    assert left.seconds == pytest.approx((10 + 20 + 20) / 2)
    assert time_left(runs.iloc[1:], planned, parallel=1) is None


def test_planned_runs_take_their_training_images_per_split_seed_and_task():
    planned = pd.DataFrame(
        [("a", "KL", "nominal", 0, 10), ("b", "CPPD", "nominal", 1, 10)],
        columns=["run_id", "task", "method", "split_seed", "max_epochs"],
    )
    counts = pd.DataFrame({"split_seed": [0, 1], "task": ["KL", "CPPD"], "n_train": [7, 9]})
    assert with_train_images(planned, counts)["n_train"].tolist() == [7, 9]
    assert with_train_images(planned, counts.iloc[:0])["n_train"].isna().all()


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
    # Each run trained on its (split seed, task)'s training images, as the store counts them
    # for the Jobs page's time left.
    (study_id,) = store_jobs.list_jobs(path=store)["study_id"]
    planned = with_train_images(
        planned_runs(spec.to_dict(), study_id),
        store_costs.train_image_counts(study_id, path=store),
    )
    trained = store_costs.study_run_costs(study_id, path=store).set_index("run_id")["n_train"]
    assert planned.set_index("run_id")["n_train"].to_dict() == trained.to_dict()
