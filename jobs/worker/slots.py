"""What a slot does: train runs one after another and report back by messages.

A slot never opens the database. It receives a `RunTask`, trains it with a `Trainer` it keeps
across runs (dataset tensors and compiled model stay on the device), and emits messages: an
``epoch`` message after every epoch and one ``done``, ``cancelled`` or ``error`` message per
run. The worker turns those into store writes.

A slot process hosts one or more slots as lanes: a thread each, with its own CUDA stream and
trainers. Kernels of different streams in one process run side by side on the GPU, while
separate processes sharing a GPU only take turns (time slicing), so lanes are how several
runs share one GPU; each lane's per-epoch synchronisation and validation then overlap the
other lanes' training.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import queue
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from engine.config import TrainConfig
from engine.datasets import TaskSplit, open_prepared, task_split
from engine.methods import get_method
from engine.train import RunCancelled, Trainer, resolve_device, save_checkpoint
from jobs.worker.compile_cache import (
    cache_generation,
    recover_unreadable_cache,
    use_compile_cache,
)
from jobs.worker.lane_group import LaneGroup
from jobs.worker.pruning import SearchTrial
from jobs.worker.tasks import Emit, RunTask, device_name

log = logging.getLogger(__name__)


@dataclass
class SlotState:
    """Caches a slot keeps between runs: task tensors on the device and trainers."""

    device: torch.device
    splits_cache: OrderedDict[tuple[str, int, str], TaskSplit] = field(default_factory=OrderedDict)
    trainers: dict[tuple[str, str | None, bool, str, int], Trainer] = field(default_factory=dict)
    max_cached_splits: int = 4
    warmed: bool = False  # whether `warm` ran (once per lane)
    runs_started: int = 0
    # The lanes of this slot process (None: a lane alone, as in Ray actors and inline).
    group: LaneGroup | None = None

    def task_data(self, task: RunTask) -> TaskSplit:
        """The (task, split seed) tensors on this slot's device, built once and reused."""
        key = (task.cache_dir, task.config.split_seed, task.config.task)
        if key in self.splits_cache:
            self.splits_cache.move_to_end(key)
            return self.splits_cache[key]
        data = task_split(open_prepared(Path(task.cache_dir)), task.splits, task.config.task)
        data = data.to(self.device)
        self.splits_cache[key] = data
        while len(self.splits_cache) > self.max_cached_splits:
            self.splits_cache.popitem(last=False)
        return data

    def warm(self, configs: tuple[TrainConfig, ...]) -> float:
        """Build and compile a trainer for each of ``configs`` (once per lane); the seconds it
        took.

        One lane of a GPU slot process calls it before its first run, once its siblings
        train (`jobs.worker.lane_group`); a lane alone (Ray actors, inline, CPU) before its
        second run. Left to the first run of each task, every lane wants the next task's
        compile at the study's first switch of task, all at once, and a compile holds every
        other lane's run start (`GLOBAL_STATE_LOCK`): the GPU idled 20-30 s there (issue
        30). The study's first result does not wait for tasks it does not need yet.
        """
        if self.warmed:
            return 0.0
        self.warmed = True
        started = time.perf_counter()
        for config in configs:
            if self.trainer(config).warm_up(config):
                log.info("lane compiled the %s steps (%s)", config.task, config.method)
        return time.perf_counter() - started

    def trainer(self, config: TrainConfig) -> Trainer:
        """A trainer for the config's task; one per (task, weights, path, head, image size)
        kept alive, also between studies (a worker's slots outlive its jobs, and another
        image size needs graphs and a compile of its own)."""
        key = self._trainer_key(config)
        if key not in self.trainers:
            self.trainers[key] = Trainer(
                num_classes=config.num_classes,
                device=self.device,
                fast=key[2],
                weights_path=config.weights_path,
                head=key[3],
            )
        return self.trainers[key]

    def forget_trainers(self) -> None:
        """Drop this lane's trainers (a compile failed: the one of this run, or one compiled
        ahead), so the next run builds and compiles them anew."""
        self.trainers.clear()

    def _trainer_key(self, config: TrainConfig) -> tuple[str, str | None, bool, str, int]:
        fast = self.device.type == "cuda" if config.fast is None else config.fast
        head = get_method(config.method).head
        return (config.task, config.weights_path, fast, head, config.image_size)


def execute_run(
    state: SlotState, task: RunTask, emit: Emit, should_stop: Callable[[], bool]
) -> None:
    """Train one run and emit its messages; never raises (errors become messages)."""
    base = {"job_id": task.job_id, "run_id": task.run_id}
    received = time.perf_counter()
    received_at = time.time()  # wall clock, for the worker's start-up line
    first_epoch: list[float] = []  # seconds from receipt to the end of the first epoch
    n_train = 0
    try:
        if task.compile_cache:  # before the first compile of this process
            use_compile_cache(Path(task.compile_cache), state.device)
        state.runs_started += 1
        warms_ahead = _warms_ahead(state, task)
        trial = SearchTrial(task.pruning) if task.pruning is not None else None
        with _compiling_first(state, warms_ahead) as compiled:

            def on_epoch_end(stats: Any) -> None:
                compiled()  # this run's steps are compiled once an epoch has run
                if not first_epoch:
                    first_epoch.append(time.perf_counter() - received)
                emit({**base, "kind": "epoch", "n_train": n_train, **asdict(stats)})

            def attempt() -> tuple[float, TaskSplit, Any]:
                nonlocal n_train
                warm_s = _warm_before_run(state, task, warms_ahead)
                data = state.task_data(task)
                n_train = len(data.y_train)
                result = state.trainer(task.config).fit(
                    task.config,
                    data,
                    on_epoch_end=on_epoch_end,
                    should_stop=should_stop,
                    should_prune=trial.should_prune if trial is not None else None,
                )
                return warm_s, data, result

            warm_s, data, result = _again_if_cache_unreadable(state, task, attempt, first_epoch)
        if trial is not None:
            trial.finish(pruned=result.pruned, value=result.val_amae)
        # A pruned run is never selected, so its weights are never wanted.
        if task.checkpoint_path and not result.pruned:
            save_checkpoint(Path(task.checkpoint_path), result.state_dict, task.config)
        emit(
            {
                **base,
                "kind": "done",
                "best_epoch": result.best_epoch,
                "epochs_run": result.epochs_run,
                "pruned": result.pruned,
                "val_amae": result.val_amae,
                "duration_s": result.duration_s,
                "weights_init": result.weights_init,
                "device": str(state.device),
                "device_name": device_name(state.device),
                "n_train": n_train,
                "compile_cache_dir": os.environ.get("TORCHINDUCTOR_CACHE_DIR"),
                "warm_s": warm_s,
                # A lane's first run: how long until it trained (data, trainer, compile,
                # waits for the lock), for the job log and issue 30's start-up breakdown.
                "first_epoch_s": first_epoch[0]
                if first_epoch and state.runs_started == 1
                else None,
                "received_at": received_at,
                "finished_at": time.time(),
                "history": [asdict(h) for h in result.history],
                "val_ids": data.val_ids,
                "test_ids": data.test_ids,
                "y_val": data.y_val.cpu().numpy(),
                "y_test": data.y_test.cpu().numpy(),
                "val_probs": result.val_probs,
                "test_probs": result.test_probs,
                "val_pred": result.val_pred,
                "test_pred": result.test_pred,
                "diverged_epoch": result.diverged_epoch,
            }
        )
    except RunCancelled:
        emit({**base, "kind": "cancelled"})
    except Exception as exc:  # the task boundary: every failure becomes a message
        emit(
            {
                **base,
                "kind": "error",
                "traceback": traceback.format_exc(),
                "error_line": error_line(exc),
                "context_lost": state.device.type == "cuda" and lost_cuda_context(exc),
            }
        )


# What a CUDA fault says: after one, the process's CUDA context is unusable (every later call
# fails), so the worker replaces the slot process (`jobs.worker.executors`).
_CUDA_FAULTS = (
    "cuda error",
    "cudnn error",
    "cudnn_status",
    "cublas_status",
    "illegal memory access",
    "device-side assert",
    "unspecified launch failure",
    "acceleratorerror",
)


def lost_cuda_context(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is a CUDA fault."""
    seen: BaseException | None = exc
    while seen is not None:
        text = f"{type(seen).__name__} {seen}".lower()
        if any(fault in text for fault in _CUDA_FAULTS):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def error_line(exc: BaseException) -> str:
    """The exception's own line, as a traceback ends: ``Type: first line of its message``
    (at most 300 characters)."""
    message = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {message[0]}" if message else type(exc).__name__
    return line if len(line) <= 300 else line[:299] + "…"


def _again_if_cache_unreadable(
    state: SlotState,
    task: RunTask,
    attempt: Callable[[], tuple[float, TaskSplit, Any]],
    first_epoch: list[float],
) -> tuple[float, TaskSplit, Any]:
    """Run ``attempt``; when it fails compiling from an unreadable compile cache (a disk fault,
    a half-written entry: inductor raises rather than compiling afresh), empty the cache,
    say so, and run it once more from a new trainer. A run that had ended an epoch is not
    repeated (its epochs are stored), nor one that failed otherwise."""
    generation = cache_generation()
    try:
        return attempt()
    except RunCancelled:
        raise
    except Exception as exc:
        why = None if first_epoch else recover_unreadable_cache(exc, generation)
        if why is None:
            raise
        log.warning("run %s: %s; training it again", task.run_id, why)
        state.forget_trainers()
        return attempt()


def _warms_ahead(state: SlotState, task: RunTask) -> bool:
    """Whether this run's lane is its process's one lane that compiles the job's tasks before
    its first run (on a GPU, among several lanes, with tasks to compile; the first to ask)."""
    return (
        state.runs_started == 1
        and bool(task.warm)
        and _has_warming_lane(state)
        and state.group is not None
        and state.group.claim_warming()
    )


def _warm_before_run(state: SlotState, task: RunTask, warms_ahead: bool) -> float:
    """Compile the job's tasks before this run where this lane's turn has come: its first
    where it warms ahead for its process, once its siblings have compiled and begun
    training; a lane alone (Ray actors, inline, CPU), its second. The seconds it took, the
    wait included."""
    if warms_ahead and state.group is not None:
        waited = state.group.wait_for_siblings()
        return waited + state.warm(task.warm)
    if _has_warming_lane(state):
        # Its sibling compiled every task ahead; this lane's trainers capture from the
        # process's caches when first used (0.5-2 s each). Warming here, at the second run,
        # waited for that sibling's compile and idled the GPU ~25 s (4 x H200, issue 30).
        return 0.0
    return state.warm(task.warm) if state.runs_started > 1 else 0.0


def _has_warming_lane(state: SlotState) -> bool:
    """Whether one lane of this lane's process compiles the job's tasks ahead (a GPU slot
    process of several lanes)."""
    return state.group is not None and state.group.lanes > 1 and state.device.type == "cuda"


@contextlib.contextmanager
def _compiling_first(state: SlotState, warms_ahead: bool) -> Iterator[Callable[[], None]]:
    """Around a run: on a lane's first run in a group (not the lane warming ahead), tell the
    group while it compiles; elsewhere nothing. Yields the function that says it compiled."""
    group = state.group
    if group is None or state.runs_started > 1 or warms_ahead:
        yield lambda: None
        return
    with group.first_run() as compiled:
        yield compiled


def slot_main(
    first_slot: int,
    lanes: int,
    device: str,
    visible_gpu: str | None,
    inbox: Any,
    outbox: Any,
    cancel: Any,
    parent_pid: int,
    threads: int,
) -> None:
    """Entry point of a slot process: route tasks to its lanes until a None arrives.

    Args:
        first_slot: Worker-wide index of this process's first lane; lanes are numbered on.
        lanes: Slots this process hosts (threads with a CUDA stream each).
        device: 'cpu' or 'cuda'.
        visible_gpu: GPU index for CUDA_VISIBLE_DEVICES (set before CUDA initialises).
        inbox: Queue of (slot, `RunTask`) pairs (None stops the process).
        outbox: Queue the lanes put messages on, each tagged with its slot.
        cancel: Event set by the worker when the current job is cancelled.
        parent_pid: The worker's pid; the slot stops if its worker dies.
        threads: CPU threads for torch (cores shared among CPU slots).
    """
    if visible_gpu is not None:
        inherited = os.environ.get("CUDA_VISIBLE_DEVICES")
        os.environ["CUDA_VISIBLE_DEVICES"] = physical_gpu(visible_gpu, inherited)
    _die_with_parent(parent_pid)
    torch.set_num_threads(threads)
    resolved = resolve_device(device)
    prime_device(resolved)

    def orphaned() -> bool:
        return os.getppid() != parent_pid

    group = LaneGroup(lanes)

    def lane_loop(slot: int, tasks: queue.Queue) -> None:
        state = SlotState(device=resolved, group=group)
        with lane_stream(new_lane_stream(resolved)):
            while (task := tasks.get()) is not None:
                execute_run(
                    state,
                    task,
                    emit=lambda msg: outbox.put({**msg, "slot": slot}),
                    should_stop=lambda: cancel.is_set() or orphaned(),
                )

    lane_tasks: dict[int, queue.Queue[RunTask | None]] = {
        first_slot + k: queue.Queue() for k in range(lanes)
    }
    workers = [
        threading.Thread(target=lane_loop, args=(slot, q), name=f"lane-{slot}", daemon=True)
        for slot, q in lane_tasks.items()
    ]
    for thread in workers:
        thread.start()
    for slot in lane_tasks:
        outbox.put({"kind": "ready", "slot": slot, "at": time.time()})
    while True:
        item = inbox.get()
        if item is None or orphaned():
            break
        slot, task = item
        lane_tasks[slot].put(task)
    for q in lane_tasks.values():
        q.put(None)
    for thread in workers:
        thread.join(timeout=5)


def prime_device(device: torch.device) -> None:
    """Create the GPU's context and import the compiler's front end now, while the worker
    still prepares the job's data, rather than in the first run (issue 30: the second study
    on a machine should reach its first result within 30 s). Nothing to do on CPU.

    Inductor itself is left to the first compile: importing it can start its pool of compile
    processes, which must see the compile cache's folders (`use_compile_cache`), and those
    come with the first run.
    """
    if device.type != "cuda":
        return
    started = time.perf_counter()
    torch.empty(1, device=device)
    importlib.import_module("torch._dynamo")
    log.info("slot primed %s in %.1f s", device, time.perf_counter() - started)


def physical_gpu(index: str, inherited: str | None) -> str:
    """What a slot on the worker's GPU ``index`` puts in CUDA_VISIBLE_DEVICES.

    The worker counts GPUs among those it sees, and a worker started with
    ``CUDA_VISIBLE_DEVICES=2,3`` sees the machine's GPUs 2 and 3 as 0 and 1; its slot for
    GPU 0 must ask for "2", else it trains on the machine's first GPU, beside whatever runs
    there (issue 30's benchmarks put five jobs on one card this way). Entries may be indices
    or UUIDs; an index beyond the list is left as it is (CUDA then reports no device).
    """
    if inherited is None or not inherited.strip():
        return index
    entries = [entry.strip() for entry in inherited.split(",") if entry.strip()]
    position = int(index)
    return entries[position] if 0 <= position < len(entries) else index


def new_lane_stream(device: torch.device) -> torch.cuda.Stream | None:
    """A CUDA stream for one lane on ``device``; None on CPU."""
    return torch.cuda.Stream(device) if device.type == "cuda" else None


@contextlib.contextmanager
def lane_stream(stream: torch.cuda.Stream | None) -> Iterator[None]:
    """Run this thread's CUDA work on the lane's own stream (`new_lane_stream`; None: CPU,
    nothing to do)."""
    if stream is None:
        yield
        return
    with torch.cuda.stream(stream):
        yield


def _die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGKILL this process when its worker dies, so no orphan keeps training.

    A worker killed while this process was still starting (importing torch takes seconds)
    sends no signal: it died before the request. Then this process is an orphan already and
    would wait on its inbox forever, so it leaves at once (the kill-storm test caught it).
    """
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except OSError:
        log.debug("prctl unavailable; slots rely on the parent-pid check", exc_info=True)
    if os.getppid() != parent_pid:
        os._exit(0)
