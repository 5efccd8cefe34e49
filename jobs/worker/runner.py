"""The worker: claim a job → expand it into runs → execute on slots → record results.

The worker is the only writer of results. Each finished run is stored in one transaction
(`store.runs.record_run`); after each, the best configuration of its (task, method, seed)
is re-selected by validation AMAE and checkpoints of runs that lost are deleted.

Heartbeats: a background thread beats the worker row and the claimed job every
``beat_s``. Any worker requeues running jobs whose heartbeat is older than ``stale_after_s``;
a requeued job resumes at its first unfinished run.
"""

from __future__ import annotations

import atexit
import logging
import os
import socket
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from engine.config import DatasetSpec, StudySpec, TrainConfig
from engine.datasets import make_splits, prepare_dataset
from engine.methods import PLUGIN_VARIABLE, is_registered, method_names
from engine.protocol import SEARCH_SELECTION
from engine.study import PlannedRun, plan_runs
from jobs.services.provenance import worker_environment
from jobs.services.run_costs import CostModel, cost_model
from jobs.worker.compile_cache import CACHE_FOLDER
from jobs.worker.executors import Executor
from jobs.worker.pruning import PruningTask, journal_path, search_name
from jobs.worker.schedule import expected_cost, longest_first, train_images, warm_configs
from jobs.worker.startup import process_started_at, startup_line
from jobs.worker.tasks import Message, RunTask, device_name
from store import costs as store_costs
from store import datasets as store_datasets
from store import jobs as store_jobs
from store import runs as store_runs
from store import studies as store_studies
from store.db import LOCK_STATS, data_home_of, default_store_path, init_schema
from store.jobs import Job, JobStatus

log = logging.getLogger(__name__)


class MethodsUnknownHere(ValueError):
    """A job names methods this worker's registry lacks (the message says how to add them)."""


def _check_methods_known(spec: dict[str, Any]) -> None:
    """Raise `MethodsUnknownHere` naming the job's methods this worker does not know.

    A study launched where a lab's method package is installed can be claimed by a worker
    started without it (another machine, another shell): the job then fails with this one
    message on the Jobs page, not a traceback.
    """
    unknown = [str(m) for m in spec.get("methods") or [] if not is_registered(str(m))]
    if unknown:
        raise MethodsUnknownHere(
            f"this worker does not know the method(s) {', '.join(unknown)}; it knows "
            f"{', '.join(method_names())}. A method added outside SoftGrade must be importable "
            f"where the worker runs: name its package in {PLUGIN_VARIABLE} and put its "
            "folder on PYTHONPATH before starting the worker, then launch the study again"
        )


@dataclass
class WorkerOptions:
    """Timing knobs (tests shrink them)."""

    beat_s: float = 5.0
    stale_after_s: float = 30.0
    idle_poll_s: float = 2.0
    progress_every_s: float = 1.0
    rates_every_s: float = 5.0  # live images/s per device (the Jobs page's GPU table)


@dataclass
class _JobState:
    """Book-keeping of the job being executed."""

    job: Job
    pending: deque[PlannedRun]
    tasks: dict[str, RunTask]
    runs_total: int
    runs_done: int
    cancel: bool = False
    error: str | None = None
    in_flight: set[str] = field(default_factory=set)
    # Runs that failed while the study went on: (run id, the exception's line, traceback).
    failed: list[tuple[str, str, str]] = field(default_factory=list)
    last_progress: float = 0.0
    rates: dict[int, float] = field(default_factory=dict)  # slot -> its latest images/s
    last_rates: float = 0.0

    @property
    def stopping(self) -> bool:
        """Cancelled or failed: no new runs, the ones in flight finish or stop."""
        return self.cancel or self.error is not None


class Worker:
    """Claims jobs and runs them on an `Executor`; ``run_once`` does one job (tests)."""

    def __init__(
        self,
        executor: Executor,
        *,
        store_path: Path | None = None,
        home: Path | None = None,
        options: WorkerOptions | None = None,
        executor_name: str | None = None,
    ) -> None:
        """Register a worker on the store.

        Args:
            home: The data folder (dataset caches, checkpoints), shared with Ray nodes;
                default `store.db.data_home_of` the store (SOFTGRADE_HOME for the default).
            executor_name: The name the registry and study card show (default the
                executor's own).
        """
        executor_name = executor_name or executor.name
        self.executor = executor
        self.store_path = store_path or default_store_path()
        self.home = home or data_home_of(self.store_path)
        self.options = options or WorkerOptions()
        init_schema(self.store_path)
        self.worker_id = store_jobs.register_worker(
            hostname=socket.gethostname(),
            pid=os.getpid(),
            executor=executor_name,
            devices=executor.devices,
            slots=executor.slots,
            path=self.store_path,
        )
        self.executor_name = executor_name
        self._current: _JobState | None = None
        # Where this process's start is known and a job was waiting for it, that job's first
        # result's log says how the start-up went (once: a worker that stays up pays it once).
        self._started_at = process_started_at()
        self._plan: dict[str, PlannedRun] = {}
        self._stop = threading.Event()
        self._beater = threading.Thread(target=self._beat_loop, name="heartbeat", daemon=True)
        self._beater.start()
        # Stop the heartbeat thread before the interpreter tears down: a daemon thread caught
        # inside DuckDB during finalisation aborts the process.
        atexit.register(self._stop_beating)
        log.info(
            "worker %s up with %d slot(s) on %s",
            self.worker_id,
            executor.slots,
            ", ".join(executor.devices),
        )

    # -- lifecycle ---------------------------------------------------------------------------

    def serve(self, *, stop_when_idle: bool = False) -> None:
        """Claim and run jobs until stopped (or, with ``stop_when_idle``, until none is left)."""
        try:
            while not self._stop.is_set():
                ran = self.run_once()
                if not ran:
                    if stop_when_idle:
                        return
                    self._stop.wait(self.options.idle_poll_s)
        finally:
            self.close()

    def _stop_beating(self) -> None:
        self._stop.set()
        if self._beater.is_alive() and self._beater is not threading.current_thread():
            self._beater.join(timeout=5)

    def close(self) -> None:
        """Stop heartbeats and slots; mark the worker stopped."""
        self._stop_beating()
        atexit.unregister(self._stop_beating)
        self.executor.close()
        store_jobs.beat_worker(self.worker_id, stopped=True, path=self.store_path)

    def run_once(self) -> bool:
        """Requeue stale jobs, claim the next one and run it to the end. False if none."""
        store_jobs.requeue_stale_jobs(self.options.stale_after_s, path=self.store_path)
        job = store_jobs.claim_next_job(self.worker_id, path=self.store_path)
        if job is None:
            # It waited for work: a later job's first result says nothing of its start-up.
            self._started_at = None
            return False
        try:
            self._execute(job)
        except MethodsUnknownHere as exc:  # the worker's environment, not a bug: no traceback
            log.error("job %s failed: %s", job.job_id, exc)
            store_jobs.fail_job(job.job_id, str(exc), path=self.store_path)
        except Exception:  # the job boundary: keep the traceback on the job
            tb = traceback.format_exc()
            log.error("job %s failed:\n%s", job.job_id, tb)
            store_jobs.fail_job(job.job_id, tb, path=self.store_path)
        except BaseException:
            # Ctrl+C or SIGTERM: not the job's fault; hand it back for the next worker.
            store_jobs.release_job(job.job_id, self.worker_id, path=self.store_path)
            raise
        finally:
            self._current = None
        return True

    # -- one job -----------------------------------------------------------------------------

    def _execute(self, job: Job) -> None:
        _check_methods_known(job.spec)
        spec = StudySpec.from_dict(job.spec)
        self._record_environment(job, search_pruned=spec.search.pruned)
        self._log(job, f"preparing dataset {spec.dataset.key} at {spec.image_size} px")
        dataset_id, cache_dir, meta = self._prepare(spec.dataset, spec.image_size)
        store_datasets.set_study_dataset(job.study_id, dataset_id, path=self.store_path)
        # One split per split seed: a factorial study's inits of one split share it.
        splits = {seed: self._splits(dataset_id, meta, seed) for seed in spec.split_seeds}
        device = self.executor.devices[0].split(":")[0]
        plan = plan_runs(spec, job.study_id, device)
        done = store_runs.finished_run_ids(job.study_id, path=self.store_path)
        # Keyed by the pairing seed, counted on the split its split seed drew.
        n_train = {
            (task, seed): train_images(meta, splits, task, spec.split_and_init(seed)[0])
            for task in spec.tasks
            for seed in spec.seeds
        }
        cost = expected_cost(n_train, model=self._cost_model(spec))
        pending = deque(longest_first([run for run in plan if run.run_id not in done], cost))
        checkpoints = self.home / "checkpoints" / job.study_id
        warm = warm_configs(pending)
        tasks = {
            run.run_id: RunTask(
                job_id=job.job_id,
                run_id=run.run_id,
                config=run.config,
                cache_dir=str(cache_dir),
                splits=splits[run.split_seed],
                checkpoint_path=str(checkpoints / f"{run.run_id}.pt"),
                compile_cache=str(self.home / CACHE_FOLDER),
                pruning=self._pruning(spec, job.study_id, run),
                warm=warm,
            )
            for run in pending
        }
        state = _JobState(job, pending, tasks, runs_total=len(plan), runs_done=len(done))
        self._current = state
        self._plan = {run.run_id: run for run in plan}
        self._log(job, f"{len(plan)} runs planned, {len(done)} already finished")
        self._progress(state, force=True)
        self.executor.set_cancel(False)
        self._drive(state)
        self._finish(state)

    def _pruning(self, spec: StudySpec, study_id: str, run: PlannedRun) -> PruningTask | None:
        """The shared Optuna study a run of a pruned search joins; None for a full search."""
        if not spec.search.pruned:
            return None
        return PruningTask(
            journal=str(journal_path(self.home, study_id, run.task, run.method, run.seed)),
            study_name=search_name(run.task, run.method, run.seed),
            search=spec.search,
            max_epochs=spec.max_epochs,
            run_id=run.run_id,
            lower_is_better=SEARCH_SELECTION.lower_is_better,
        )

    def _record_environment(self, job: Job, *, search_pruned: bool = False) -> None:
        """Provenance: this worker's host, devices, code and library versions, kept with the
        study each time its job is claimed (a resumed study may train on several)."""
        environment = worker_environment(
            self.executor.devices,
            local_devices=self.executor_name != "ray",
            executor=self.executor_name,
            threads_per_slot=self.executor.threads_per_slot,
            search_pruned=search_pruned,
        )
        store_studies.record_environment(
            job.study_id,
            job_id=job.job_id,
            worker_id=self.worker_id,
            environment=environment,
            path=self.store_path,
        )

    def _cost_model(self, spec: StudySpec) -> CostModel | None:
        """The measured costs of this worker's device at the study's sizes (None: none yet,
        or the slots run elsewhere, as Ray's do)."""
        if self.executor_name == "ray":
            return None
        first = self.executor.devices[0]
        if first.startswith("cuda"):
            if not torch.cuda.is_available():
                return None
            name = device_name(torch.device(first))
        else:
            name = device_name(torch.device("cpu"), self.executor.threads_per_slot)
        measured = store_costs.run_costs(path=self.store_path)
        return cost_model(measured, name, image_size=spec.image_size, batch_size=spec.batch_size)

    def _drive(self, state: _JobState) -> None:
        """Keep every slot busy until the plan is done, cancelled or failed."""
        while state.pending or state.in_flight:
            self._submit_pending(state)
            if state.stopping and not state.in_flight:
                break
            self.executor.poll(0.5, lambda msg: self._handle(state, msg))
            if state.stopping:
                self.executor.set_cancel(True)

    def _submit_pending(self, state: _JobState) -> None:
        """Hand planned runs to free slots, unless the job is stopping."""
        while state.pending and not state.stopping and self.executor.free_slots() > 0:
            run = state.pending.popleft()
            state.in_flight.add(run.run_id)
            self.executor.submit(state.tasks[run.run_id])

    def _finish(self, state: _JobState) -> None:
        job = state.job
        self._log(
            job,
            f"store lock retries in this worker so far: {LOCK_STATS.retries} "
            f"({LOCK_STATS.waited_s:.2f} s waited)",
        )
        if state.error is not None:
            store_jobs.fail_job(job.job_id, state.error, path=self.store_path)
        elif state.failed:
            summary = failed_runs_summary(state.failed, state.runs_total, job.job_id)
            self._log(job, summary)
            store_jobs.fail_job(job.job_id, summary, path=self.store_path)
        elif state.cancel:
            store_jobs.finish_job(job.job_id, JobStatus.CANCELLED, path=self.store_path)
        else:
            store_jobs.finish_job(job.job_id, JobStatus.SUCCEEDED, path=self.store_path)
        store_costs.set_device_rates(self.worker_id, {}, path=self.store_path)

    def _handle(self, state: _JobState, msg: Message) -> None:
        kind = msg["kind"]
        if kind == "log":  # the executor's word on a run (e.g. a Ray retry) for the Jobs page
            self._log(state.job, msg["text"])
            return
        if kind == "epoch":
            if msg.get("n_train") and msg.get("duration_s"):
                state.rates[msg.get("slot", 0)] = msg["n_train"] / msg["duration_s"]
            self._progress(
                state, current_run=msg["run_id"], epoch=msg["epoch"], val_amae=msg["val_amae"]
            )
            return
        state.in_flight.discard(msg["run_id"])
        state.rates.pop(msg.get("slot", 0), None)
        if kind == "done":
            # The slot gets its next run before the store write, so it trains meanwhile.
            self._submit_pending(state)
            self._record(state, msg)
        elif kind == "error":
            self._record_failure(state, msg)
        elif kind == "requeue":
            # Its slot process was replaced after a sibling lane's CUDA fault: not its fault.
            state.pending.appendleft(self._plan[msg["run_id"]])
            self._log(state.job, f"run {msg['run_id']} queued again: {msg.get('reason', '')}")
        elif kind == "cancelled":
            self._log(state.job, f"run {msg['run_id']} stopped by cancel; it is not stored")

    def _record_failure(self, state: _JobState, msg: Message) -> None:
        """Keep a failed run and its error; the study goes on with its other runs."""
        run = self._plan[msg["run_id"]]
        line = msg.get("error_line") or last_line(msg["traceback"])
        store_runs.record_failed_run(
            store_runs.FailedRun(
                **_run_identity(state, run),
                error_line=line,
                traceback=msg["traceback"],
            ),
            path=self.store_path,
        )
        state.failed.append((run.run_id, line, msg["traceback"]))
        replaced = (
            " (its slot process lost the GPU and was replaced)" if msg.get("context_lost") else ""
        )
        self._log(
            state.job,
            f"run {run.run_id} failed: {run.task} {run.method} seed {run.seed} config "
            f"{run.config_index}: {line}{replaced}; the study goes on. Full traceback: "
            f"`softgrade status {state.job.job_id}` or the Jobs page",
        )

    def _record(self, state: _JobState, msg: Message) -> None:
        run = self._plan[msg["run_id"]]
        store_runs.record_run(
            store_runs.RunRecord(
                **_run_identity(state, run),
                split_seed=run.split_seed,
                init_seed=run.init_seed,
                best_epoch=msg["best_epoch"],
                epochs_run=msg["epochs_run"],
                val_amae=msg["val_amae"],
                device=msg["device"],
                duration_s=msg["duration_s"],
                weights_init=msg["weights_init"],
                checkpoint_path=state.tasks[run.run_id].checkpoint_path,
                predictions=_prediction_frame(msg),
                epochs=pd.DataFrame(msg["history"]).drop(columns=["best_epoch"]),
                cost=self._run_cost(run.config, msg),
                pruned=bool(msg.get("pruned", False)),
                diverged_epoch=msg.get("diverged_epoch"),
            ),
            path=self.store_path,
        )
        for lost in store_runs.select_best_runs(state.job.study_id, path=self.store_path):
            Path(lost).unlink(missing_ok=True)
        state.runs_done += 1
        pruned = f", pruned after epoch {msg['epochs_run']}" if msg.get("pruned") else ""
        if msg.get("diverged_epoch"):
            pruned += f", DIVERGED at epoch {msg['diverged_epoch']} (lr {run.config.lr:g})"
        if msg.get("warm_s"):
            pruned += f" (after {msg['warm_s']:.1f} s compiling every task's steps)"
        if msg.get("first_epoch_s"):
            pruned += f"; its lane's first run, first epoch {msg['first_epoch_s']:.1f} s in"
        self._log(
            state.job,
            f"run {state.runs_done}/{state.runs_total} done: {run.task} {run.method} seed "
            f"{run.seed} config {run.config_index}, val AMAE {msg['val_amae']:.3f}, best epoch "
            f"{msg['best_epoch']}/{msg['epochs_run']}, {msg['duration_s']:.1f} s{pruned}",
        )
        self._progress(state, force=True, current_run=run.run_id, val_amae=msg["val_amae"])
        self._log_startup(state.job, msg)

    def _log_startup(self, job: Job, msg: Message) -> None:
        """At this worker's first result, the job log's line on its start-up."""
        if self._started_at is None or "received_at" not in msg:
            return
        line = startup_line(
            self._started_at,
            self.executor.slots_ready_at(),
            msg["received_at"],
            msg.get("first_epoch_s"),
            msg.get("finished_at", time.time()),
        )
        self._started_at = None
        self._log(job, line)

    def _run_cost(self, config: TrainConfig, msg: Message) -> store_costs.RunCost | None:
        """What the finished run cost on its device (None from a slot that does not say)."""
        if not msg.get("device_name") or not msg.get("n_train") or msg["duration_s"] <= 0:
            return None
        return store_costs.RunCost(
            device_name=msg["device_name"],
            slots_sharing=self.executor.sharing(msg.get("slot", 0)),
            task=config.task,
            method=config.method,
            image_size=config.image_size,
            batch_size=config.batch_size,
            max_epochs=config.max_epochs,
            n_train=msg["n_train"],
            epochs_run=msg["epochs_run"],
            wall_s=msg["duration_s"],
        )

    def _write_rates(self, state: _JobState, now: float) -> None:
        """Each device's live training images/s: the sum of its slots' latest epochs."""
        state.last_rates = now
        devices = self.executor.devices
        rates: dict[str, tuple[float, int]] = {}
        for slot, rate in state.rates.items():
            device = devices[slot] if 0 <= slot < len(devices) else devices[0]
            total, runs = rates.get(device, (0.0, 0))
            rates[device] = (total + rate, runs + 1)
        store_costs.set_device_rates(self.worker_id, rates, path=self.store_path)

    def _progress(
        self,
        state: _JobState,
        *,
        force: bool = False,
        current_run: str | None = None,
        epoch: int | None = None,
        val_amae: float | None = None,
    ) -> None:
        """Write live progress, at most every ``progress_every_s`` unless forced; pick up a
        cancel request on the way."""
        now = time.monotonic()
        if not force and now - state.last_progress < self.options.progress_every_s:
            return
        state.last_progress = now
        cancel = store_jobs.update_progress(
            state.job.job_id,
            worker_id=self.worker_id,
            runs_total=state.runs_total,
            runs_done=state.runs_done,
            current_run=current_run,
            current_epoch=epoch,
            latest_val_amae=val_amae,
            path=self.store_path,
        )
        self._notice_cancel(state, cancel)
        if force or now - state.last_rates >= self.options.rates_every_s:
            self._write_rates(state, now)

    def _beat_job(self, state: _JobState) -> None:
        """Keep the job's heartbeat fresh (and notice a cancel) even while no epoch ends,
        e.g. during dataset preparation or compilation. Leaves the progress throttle alone."""
        cancel = store_jobs.update_progress(
            state.job.job_id, worker_id=self.worker_id, path=self.store_path
        )
        self._notice_cancel(state, cancel)

    def _notice_cancel(self, state: _JobState, requested: bool) -> None:
        """Act once on a cancel request read from the store: slots stop at the next epoch."""
        if requested and not state.cancel:
            state.cancel = True
            self.executor.set_cancel(True)
            self._log(state.job, "cancel seen; stopping at the next epoch boundary")

    def _beat_loop(self) -> None:
        while not self._stop.wait(self.options.beat_s):
            try:
                store_jobs.beat_worker(self.worker_id, path=self.store_path)
                state = self._current
                if state is not None:
                    self._beat_job(state)
            except Exception:  # a missed beat must not kill the worker
                log.warning("heartbeat failed", exc_info=True)

    # -- data --------------------------------------------------------------------------------

    def _prepare(self, spec: DatasetSpec, image_size: int) -> tuple[str, Path, pd.DataFrame]:
        prepared = prepare_dataset(spec, image_size, self.home / "cache")
        dataset_id = store_datasets.find_dataset(spec.key, path=self.store_path)
        if dataset_id is None:
            dataset_id = store_datasets.register_dataset(
                spec_key=spec.key,
                kind=spec.kind,
                params=spec.params,
                meta=prepared.meta,
                path=self.store_path,
            )
        return dataset_id, prepared.cache_dir, prepared.meta

    def _splits(self, dataset_id: str, meta: pd.DataFrame, seed: int) -> pd.Series:
        stored = store_datasets.load_splits(dataset_id, seed, path=self.store_path)
        if stored is not None:
            return stored
        splits = make_splits(meta, seed)
        store_datasets.save_splits(dataset_id, seed, splits, path=self.store_path)
        return splits

    def _log(self, job: Job, message: str) -> None:
        log.info("%s: %s", job.job_id, message)
        store_jobs.log_job(job.job_id, message, path=self.store_path)


def failed_runs_summary(failed: list[tuple[str, str, str]], total: int, job_id: str) -> str:
    """The job's closing word when runs failed: how many, the first errors, where each full
    traceback is, and the first one in full."""
    lines = [f"{len(failed)} of {total} runs failed; every other run is stored."]
    lines += [f"run {run_id}: {line}" for run_id, line, _ in failed[:5]]
    if len(failed) > 5:
        lines.append(f"... and {len(failed) - 5} more")
    lines.append(
        f"Each failed run's traceback: `softgrade status {job_id}`. Resuming the study trains "
        "the failed runs again."
    )
    lines.append(f"The first, run {failed[0][0]}:\n{failed[0][2].rstrip()}")
    return "\n".join(lines)


def last_line(traceback_text: str) -> str:
    """The last non-blank line of a traceback: the exception and its message."""
    lines = [line.strip() for line in traceback_text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "unknown error"


def _run_identity(state: _JobState, run: PlannedRun) -> dict[str, Any]:
    """The fields of `store_runs.RunIdentity` for a planned run of this job, as keywords for
    the finished-run and the failed-run records alike."""
    return {
        "run_id": run.run_id,
        "study_id": state.job.study_id,
        "job_id": state.job.job_id,
        "task": run.task,
        "method": run.method,
        "seed": run.seed,
        "config_index": run.config_index,
        "config": run.config.to_dict(),
    }


def _prediction_frame(msg: Message) -> pd.DataFrame:
    """Long predictions of a finished run: one row per (split, image); ``y_pred`` is the
    grade the run's method predicts (its head's rule), argmax from a slot that does not say."""
    parts = []
    for split, ids, y, probs, pred in (
        ("val", msg["val_ids"], msg["y_val"], msg["val_probs"], msg.get("val_pred")),
        ("test", msg["test_ids"], msg["y_test"], msg["test_probs"], msg.get("test_pred")),
    ):
        probs = np.asarray(probs, dtype=np.float32)
        predicted = probs.argmax(axis=1) if pred is None else np.asarray(pred)
        parts.append(
            pd.DataFrame(
                {
                    "image_id": ids,
                    "split": split,
                    "y_true": np.asarray(y, dtype=np.int8),
                    "y_pred": predicted.astype(np.int8),
                    "probs": list(probs),
                }
            )
        )
    return pd.concat(parts, ignore_index=True)
