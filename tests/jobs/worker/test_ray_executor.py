"""The Ray executor on a local Ray instance (2 CPUs): a study, a dying actor, cancel."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pandas as pd
import pytest
import ray

from engine.config import StudySpec
from engine.methods import PLUGIN_VARIABLE
from engine.study import plan_runs
from jobs.worker.executors import LocalExecutor, plan_slots
from jobs.worker.ray_executor import REPO_ROOT, RayExecutor, SlotActor, actor_env_vars
from jobs.worker.runner import Worker, WorkerOptions
from jobs.worker.tasks import RunTask
from store import jobs as store_jobs
from store import runs as store_runs
from store import studies
from store.db import connect
from tests.helpers.method_plugins import LAB_METHOD, LAB_METHOD_SOURCE, write_method_package
from tests.helpers.studies import tiny_study

# Every worker here finds the tiny phantom already rendered in its home (tmp_path).
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("phantom_tmp")]


@pytest.fixture(scope="module")
def ray_local(request):
    """One local Ray instance for the module; RayExecutor joins it instead of starting one."""
    # "local": a fresh instance even if `ray start` runs (or ran) on this machine.
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    request.addfinalizer(ray.shutdown)


class _Recording(Worker):
    """A worker that keeps every message it handles."""

    def __init__(self, *args, **kwargs):
        self.messages: list[dict] = []
        super().__init__(*args, **kwargs)

    def _handle(self, state, msg):
        self.messages.append(msg)
        super()._handle(state, msg)


def _run_study(worker: Worker, store: Path, **overrides) -> store_jobs.Job:
    job_id = store_jobs.enqueue_job(
        StudySpec.from_dict(tiny_study(**overrides)).to_dict(), path=store
    )
    worker.serve(stop_when_idle=True)
    return store_jobs.get_job(job_id, path=store)


def _row_counts(store: Path) -> tuple[int, int, int, int]:
    """(runs, distinct run ids, prediction rows, distinct prediction keys)."""
    with connect(store, read_only=True) as con:
        runs, distinct = con.execute("SELECT count(*), count(DISTINCT run_id) FROM runs").fetchone()
        preds, keys = con.execute(
            "SELECT count(*), count(DISTINCT (run_id, split, image_id)) FROM predictions"
        ).fetchone()
    return runs, distinct, preds, keys


def test_a_tiny_study_runs_on_ray_actors_and_stores_every_run_once(ray_local, tmp_path):
    store = tmp_path / "softgrade.duckdb"
    executor = RayExecutor(cpu_slots=2)
    assert executor.slots == 2 and executor.devices == ["cpu", "cpu"]
    assert all(d["pid"] != os.getpid() for d in executor._devices)
    worker = _Recording(executor, store_path=store, home=tmp_path, executor_name="ray")

    job = _run_study(worker, store)

    assert job.status == "succeeded", job
    runs = store_runs.list_runs([job.study_id], path=store)
    assert len(runs) == 4  # 2 tasks x 2 methods, budget 1
    runs_n, distinct, preds, keys = _row_counts(store)
    assert runs_n == distinct == 4 and preds == keys > 0
    assert (runs["device"] == "cpu").all()
    epochs = [m for m in worker.messages if m["kind"] == "epoch"]
    assert len(epochs) == 4 * 2  # progress came back from the actors, 2 epochs per run
    assert {m["slot"] for m in worker.messages} == {0, 1}  # both actors trained


def test_an_actor_dying_mid_run_is_replaced_and_the_run_stored_once(ray_local, tmp_path):
    marker = tmp_path / "crashed-run"

    class DiesOnceAfterAnEpoch(SlotActor):
        """Kills its own process after the first epoch message of the whole test."""

        def _emit(self, message):
            super()._emit(message)
            if message["kind"] != "epoch":
                return
            try:  # O_EXCL: exactly one actor of the two wins, exactly once
                fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return
            os.write(fd, message["run_id"].encode())
            os.close(fd)
            self._flush_epochs()  # the worker sees the epoch, so this is truly mid-run
            os._exit(1)

    store = tmp_path / "softgrade.duckdb"
    executor = RayExecutor(cpu_slots=2, actor_class=DiesOnceAfterAnEpoch)
    worker = _Recording(executor, store_path=store, home=tmp_path, executor_name="ray")

    job = _run_study(worker, store)

    assert job.status == "succeeded", job
    crashed = marker.read_text()
    assert executor.restarts == 1
    runs = store_runs.list_runs([job.study_id], path=store)
    assert len(runs) == 4 and crashed in set(runs.run_id)
    runs_n, distinct, preds, keys = _row_counts(store)
    assert runs_n == distinct == 4 and preds == keys
    done = pd.Series([m["run_id"] for m in worker.messages if m["kind"] == "done"])
    assert done.is_unique and len(done) == 4
    first_epochs = [m for m in worker.messages if m["kind"] == "epoch" and m["run_id"] == crashed]
    assert [m["epoch"] for m in first_epochs] == [1, 1, 2]  # died after epoch 1, then retried
    log_lines = store_jobs.job_log(job.job_id, path=store)["message"].tolist()
    retried = [line for line in log_lines if "lost its Ray actor" in line]
    assert len(retried) == 1 and crashed in retried[0]  # the Jobs page shows the retry
    assert "attempt 1 of 3" in retried[0] and "retrying it on a fresh actor" in retried[0]


def test_one_actor_hosts_two_lanes_that_train_side_by_side(ray_local, tmp_path):
    store = tmp_path / "softgrade.duckdb"
    executor = RayExecutor(cpu_slots=1, cpu_lanes=2)
    assert executor.slots == 2 and len(executor._actors) == 1
    assert len({d["pid"] for d in executor._devices}) == 1  # both slots in one process
    assert executor.sharing(0) == 1  # CPU slots share no GPU
    worker = _Recording(executor, store_path=store, home=tmp_path, executor_name="ray")

    job = _run_study(worker, store)

    assert job.status == "succeeded", job
    runs_n, distinct, preds, keys = _row_counts(store)
    assert runs_n == distinct == 4 and preds == keys > 0
    assert {m["slot"] for m in worker.messages if m["kind"] == "done"} == {0, 1}
    # Side by side: a run on one lane was received before a run on the other lane finished
    # (the lanes' runs overlap in time; an epoch's message could come late on a busy machine).
    done = [m for m in worker.messages if m["kind"] == "done"]
    spans = {
        slot: [(m["received_at"], m["finished_at"]) for m in done if m["slot"] == slot]
        for slot in (0, 1)
    }
    overlaps = [(a, b) for a in spans[0] for b in spans[1] if a[0] < b[1] and b[0] < a[1]]
    assert overlaps, spans


def test_an_actor_of_two_lanes_dying_is_replaced_once_and_both_runs_retried(ray_local, tmp_path):
    marker = tmp_path / "crashed"

    class DiesWhenBothLanesTrain(SlotActor):
        """Kills its process at the first epoch seen while the other lane is mid-run too."""

        def _emit(self, message):
            super()._emit(message)
            if message["kind"] != "epoch":
                return
            busy = getattr(type(self), "busy", set())
            busy.add(self._call.slot)
            type(self).busy = busy
            if len(busy) < 2 or marker.exists():
                return
            marker.write_text("died")
            self._flush_epochs()
            os._exit(1)

    store = tmp_path / "softgrade.duckdb"
    executor = RayExecutor(cpu_slots=1, cpu_lanes=2, actor_class=DiesWhenBothLanesTrain)
    worker = _Recording(executor, store_path=store, home=tmp_path, executor_name="ray")

    job = _run_study(worker, store)

    assert job.status == "succeeded", job
    assert marker.exists() and executor.restarts == 1  # one fresh actor for both lanes
    runs_n, distinct, preds, keys = _row_counts(store)
    assert runs_n == distinct == 4 and preds == keys
    done = pd.Series([m["run_id"] for m in worker.messages if m["kind"] == "done"])
    assert done.is_unique and len(done) == 4
    log_lines = store_jobs.job_log(job.job_id, path=store)["message"].tolist()
    retried = [line for line in log_lines if "lost its Ray actor" in line]
    assert 1 <= len(retried) <= 2, retried  # each run in flight on the dead actor, once


class _CancelsDuringSecondRun(_Recording):
    """Asks for cancel (as the Jobs page does) at the first epoch after a run was stored."""

    requested = False

    def _handle(self, state, msg):
        if msg["kind"] == "epoch" and state.runs_done >= 1 and not self.requested:
            self.requested = True
            self.cancelled_run = msg["run_id"]
            store_jobs.request_cancel(state.job.job_id, path=self.store_path)
        super()._handle(state, msg)


def test_cancel_reaches_a_running_ray_actor_and_keeps_finished_runs(ray_local, tmp_path):
    store = tmp_path / "softgrade.duckdb"
    max_epochs = 8
    executor = RayExecutor(cpu_slots=1)
    worker = _CancelsDuringSecondRun(
        executor,
        store_path=store,
        home=tmp_path,
        options=WorkerOptions(progress_every_s=0),  # see the cancel at the next epoch message
        executor_name="ray",
    )

    job = _run_study(
        worker,
        store,
        tasks=["CPPD"],
        methods=["nominal", "beta", "triangular"],
        max_epochs=max_epochs,
        patience=max_epochs,
    )

    assert job.status == "cancelled", job
    runs = store_runs.list_runs([job.study_id], path=store)
    assert len(runs) == 1 and runs.epochs_run.iloc[0] == max_epochs  # the finished run is kept
    stopped = worker.cancelled_run
    finals = {m["run_id"]: m["kind"] for m in worker.messages if m["kind"] != "epoch"}
    assert finals[stopped] == "cancelled"  # the actor itself stopped the run it was training
    stopped_epochs = [
        m["epoch"] for m in worker.messages if m["kind"] == "epoch" and m["run_id"] == stopped
    ]
    assert max(stopped_epochs) < max_epochs
    assert len({m["run_id"] for m in worker.messages}) == 2  # the third run never started


def test_a_cache_missing_on_the_node_fails_with_a_clear_message(ray_local, tmp_path):
    config = plan_runs(StudySpec.from_dict(tiny_study()), "s", "cpu")[0].config
    task = RunTask(
        job_id="j",
        run_id="r",
        config=config,
        cache_dir=str(tmp_path / "not-shared"),
        splits=pd.Series(dtype=str),
        checkpoint_path=None,
    )
    executor = RayExecutor(cpu_slots=1)
    try:
        executor.submit(task)
        messages: list[dict] = []
        deadline = time.monotonic() + 60
        while not messages and time.monotonic() < deadline:
            executor.poll(0.5, messages.append)
        assert [m["kind"] for m in messages] == ["error"]
        assert "not visible on Ray node" in messages[0]["traceback"]
        assert "SOFTGRADE_HOME" in messages[0]["traceback"]
        assert executor.free_slots() == 1

        # The store-side guard: a second 'done' for one submission never reaches the worker.
        seen: list[dict] = []
        for _ in range(2):
            executor._deliver({"kind": "done", "run_id": "r"}, seen.append)
        assert len(seen) == 1
    finally:
        executor.close()


def _trained_numbers(store: Path) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """Every number a study's runs produced, without ids or timings: runs, epochs, predictions."""
    with connect(store, read_only=True) as con:
        runs = con.execute(
            "SELECT task, method, seed, config_index, best_epoch, epochs_run, val_amae "
            "FROM runs ORDER BY ALL"
        ).fetchall()
        epochs = con.execute(
            "SELECT r.task, r.method, e.* EXCLUDE (run_id, duration_s) FROM epoch_metrics e "
            "JOIN runs r USING (run_id) ORDER BY ALL"
        ).fetchall()
        predictions = con.execute(
            "SELECT r.task, r.method, p.split, p.image_id, p.y_pred, p.probs FROM predictions p "
            "JOIN runs r USING (run_id) ORDER BY ALL"
        ).fetchall()
    return runs, epochs, predictions


def test_one_configuration_gives_identical_numbers_on_the_local_and_the_ray_executor(
    ray_local, tmp_path
):
    """Issue 30: with 2 threads in local CPU slots and 1 in Ray actors, one nominal run's
    validation AMAE was 1.400 locally and 1.905 on Ray. One thread per slot everywhere."""
    numbers = {}
    executors = {
        "local": lambda: LocalExecutor(plan_slots("cpu", 1, cpu_slots=1)),
        "ray": lambda: RayExecutor(cpu_slots=1),
    }
    for name, make in executors.items():
        store = tmp_path / f"{name}.duckdb"
        worker = Worker(make(), store_path=store, home=tmp_path)
        assert worker.executor.threads_per_slot == 1
        job = _run_study(worker, store, tasks=["CPPD"], methods=["nominal"], max_epochs=2)
        assert job.status == "succeeded", job
        card = studies.study_card(job.study_id, path=store)
        assert card["executor"] == name and card["threads per slot"].startswith("1 CPU thread ")
        numbers[name] = _trained_numbers(store)

    runs, epochs, predictions = numbers["local"]
    assert len(runs) == 1 and len(epochs) == 2 and len(predictions) > 0
    assert numbers["ray"] == numbers["local"]  # exactly: every metric, epoch and probability


def test_actors_get_the_labs_method_packages_and_the_folders_they_come_from(tmp_path, monkeypatch):
    write_method_package(tmp_path, "labpkg_ray_env", {"mce_wk": LAB_METHOD_SOURCE})
    monkeypatch.syspath_prepend(str(tmp_path))

    env = actor_env_vars({PLUGIN_VARIABLE: "labpkg_ray_env"})

    assert env[PLUGIN_VARIABLE] == "labpkg_ray_env"
    paths = env["PYTHONPATH"].split(os.pathsep)
    assert paths == [str(REPO_ROOT), str(tmp_path), "${PYTHONPATH}"]
    assert actor_env_vars({}) == {"PYTHONPATH": f"{REPO_ROOT}{os.pathsep}${{PYTHONPATH}}"}


def test_a_labs_method_trains_on_actors_of_a_ray_instance_started_without_it(
    ray_local, tmp_path, monkeypatch
):
    """The module's Ray instance started before the method package existed: its nodes'
    environment lacks it, so the actors must get it from the executor."""
    plugins = tmp_path / "plugins"
    write_method_package(plugins, "labpkg_ray_run", {"mce_wk": LAB_METHOD_SOURCE})
    monkeypatch.setenv(PLUGIN_VARIABLE, "labpkg_ray_run")
    monkeypatch.syspath_prepend(str(plugins))
    store = tmp_path / "softgrade.duckdb"
    worker = Worker(RayExecutor(cpu_slots=1), store_path=store, home=tmp_path, executor_name="ray")

    job = _run_study(worker, store, tasks=["CPPD"], methods=[LAB_METHOD])

    assert job.status == "succeeded", job
    runs = store_runs.list_runs([job.study_id], path=store)
    assert list(runs["method"]) == [LAB_METHOD]


def test_a_pruned_search_on_two_actors_shares_one_optuna_study(ray_local, tmp_path):
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    store = tmp_path / "softgrade.duckdb"
    worker = _Recording(RayExecutor(cpu_slots=2), store_path=store, home=tmp_path)
    job = _run_study(
        worker,
        store,
        methods=["beta"],
        tasks=["CPPD"],
        budget=6,
        max_epochs=3,
        patience=3,
        search={"pruner": "asha", "min_epochs": 1},
    )
    assert job.status == "succeeded", job
    runs = store_runs.list_runs([job.study_id], path=store).set_index("run_id")
    assert len(runs) == 6 and {m["slot"] for m in worker.messages} == {0, 1}
    journal = tmp_path / "pruning" / job.study_id / "CPPD-beta-seed0.log"
    study = optuna.load_study(
        study_name="CPPD-beta-seed0", storage=JournalStorage(JournalFileBackend(str(journal)))
    )
    # Both actors' runs are trials of the one study, each closed as its run was stored.
    states = {t.user_attrs["run_id"]: t.state for t in study.trials}
    assert set(states) == set(runs.index)
    for run_id, state in states.items():
        assert runs.loc[run_id, "pruned"] == (state == optuna.trial.TrialState.PRUNED)
    assert not runs.loc[runs.pruned, "selected"].any() and runs.selected.sum() == 1
