"""What a slot does: train runs one after another and report back by messages.

A slot never opens the database. It receives a `RunTask`, trains it with a `Trainer` it keeps
across runs (dataset tensors and compiled model stay on the device), and emits messages: an
``epoch`` message after every epoch and one ``done``, ``cancelled`` or ``error`` message per
run. The worker turns those into store writes.
"""

from __future__ import annotations

import logging
import os
import traceback
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from engine.config import TrainConfig
from engine.data import TaskSplit, open_prepared, task_split
from engine.train import RunCancelled, Trainer, resolve_device, save_checkpoint

log = logging.getLogger(__name__)

Message = dict[str, Any]
Emit = Callable[[Message], None]


@dataclass(frozen=True)
class RunTask:
    """Everything a slot needs for one run; picklable, no store handle."""

    job_id: str
    run_id: str
    config: TrainConfig
    cache_dir: str
    splits: pd.Series
    checkpoint_path: str | None


@dataclass
class SlotState:
    """Caches a slot keeps between runs: task tensors on the device and trainers."""

    device: torch.device
    splits_cache: OrderedDict[tuple[str, int, str], TaskSplit] = field(default_factory=OrderedDict)
    trainers: dict[tuple[str, str | None, bool], Trainer] = field(default_factory=dict)
    max_cached_splits: int = 4

    def task_data(self, task: RunTask) -> TaskSplit:
        """The (task, seed) tensors on this slot's device, built once and reused."""
        key = (task.cache_dir, task.config.seed, task.config.task)
        if key in self.splits_cache:
            self.splits_cache.move_to_end(key)
            return self.splits_cache[key]
        data = task_split(open_prepared(Path(task.cache_dir)), task.splits, task.config.task)
        data = data.to(self.device)
        self.splits_cache[key] = data
        while len(self.splits_cache) > self.max_cached_splits:
            self.splits_cache.popitem(last=False)
        return data

    def trainer(self, config: TrainConfig) -> Trainer:
        """A trainer for the config's task; one per (task, weights, path) kept alive."""
        fast = self.device.type == "cuda" if config.fast is None else config.fast
        key = (config.task, config.weights_path, fast)
        if key not in self.trainers:
            self.trainers[key] = Trainer(
                num_classes=config.num_classes,
                device=self.device,
                fast=fast,
                weights_path=config.weights_path,
            )
        return self.trainers[key]


def execute_run(
    state: SlotState, task: RunTask, emit: Emit, should_stop: Callable[[], bool]
) -> None:
    """Train one run and emit its messages; never raises (errors become messages)."""
    base = {"job_id": task.job_id, "run_id": task.run_id}
    try:
        data = state.task_data(task)
        trainer = state.trainer(task.config)
        result = trainer.fit(
            task.config,
            data,
            on_epoch_end=lambda stats: emit({**base, "kind": "epoch", **asdict(stats)}),
            should_stop=should_stop,
        )
        if task.checkpoint_path:
            save_checkpoint(Path(task.checkpoint_path), result.state_dict, task.config)
        emit(
            {
                **base,
                "kind": "done",
                "best_epoch": result.best_epoch,
                "epochs_run": result.epochs_run,
                "val_amae": result.val_amae,
                "duration_s": result.duration_s,
                "weights_init": result.weights_init,
                "device": str(state.device),
                "history": [asdict(h) for h in result.history],
                "val_ids": data.val_ids,
                "test_ids": data.test_ids,
                "y_val": data.y_val.cpu().numpy(),
                "y_test": data.y_test.cpu().numpy(),
                "val_probs": result.val_probs,
                "test_probs": result.test_probs,
            }
        )
    except RunCancelled:
        emit({**base, "kind": "cancelled"})
    except Exception:  # noqa: BLE001 - the task boundary: every failure becomes a message
        emit({**base, "kind": "error", "traceback": traceback.format_exc()})


def slot_main(
    slot_id: int,
    device: str,
    visible_gpu: str | None,
    inbox: Any,
    outbox: Any,
    cancel: Any,
    parent_pid: int,
    threads: int,
) -> None:
    """Entry point of a slot process: loop over tasks until a None arrives.

    Args:
        slot_id: Index of this slot in its worker.
        device: 'cpu' or 'cuda'.
        visible_gpu: GPU index for CUDA_VISIBLE_DEVICES (set before CUDA initialises).
        inbox: Queue of `RunTask` (None stops the slot).
        outbox: Queue the slot puts messages on.
        cancel: Event set by the worker when the current job is cancelled.
        parent_pid: The worker's pid; the slot stops if its worker dies.
        threads: CPU threads for torch (cores shared among CPU slots).
    """
    if visible_gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = visible_gpu
    _die_with_parent()
    torch.set_num_threads(threads)
    state = SlotState(device=resolve_device(device))

    def orphaned() -> bool:
        return os.getppid() != parent_pid

    outbox.put({"kind": "ready", "slot": slot_id})
    while True:
        task = inbox.get()
        if task is None or orphaned():
            return
        execute_run(
            state,
            task,
            emit=lambda msg: outbox.put({**msg, "slot": slot_id}),
            should_stop=lambda: cancel.is_set() or orphaned(),
        )


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its worker dies, so no orphan keeps training."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except OSError:
        log.debug("prctl unavailable; slots rely on the parent-pid check", exc_info=True)
