"""Executors: where runs train. The worker submits `RunTask`s and polls for messages.

- `LocalExecutor` (default): long-lived slot processes, GPUs assigned through
  CUDA_VISIBLE_DEVICES. A GPU's slots are lanes (a thread and CUDA stream each) of one
  process by default, so their kernels overlap; CPU slots are a process each.
- `InlineExecutor`: runs each task in the worker's own process (tests, debugging).

CPU threads: a run on CPU gives different numbers with a different number of torch threads
(reductions are split differently), so every executor trains CPU runs with exactly
``threads_per_slot`` threads (default 1, ``softgrade worker --threads-per-slot N``) and the
study card records it. GPU slots keep the machine's cores: their numbers do not depend on it.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import queue
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from engine.spawn import main_module_hidden
from jobs.worker.settings import DEFAULT_THREADS_PER_SLOT, check_threads_per_slot
from jobs.worker.tasks import Message, RunTask

if TYPE_CHECKING:
    from multiprocessing.synchronize import Event as EventType

log = logging.getLogger(__name__)

Handle = Callable[[Message], None]


@dataclass(frozen=True)
class SlotPlan:
    """One slot process: its device, on a GPU which one, and how many slots (lanes) it hosts."""

    device: str
    visible_gpu: str | None
    lanes: int = 1


def plan_slots(
    device: str, slots_per_gpu: int, cpu_slots: int = 1, processes_per_gpu: int = 1
) -> list[SlotPlan]:
    """Slot processes for ``device`` ('auto', 'cpu', 'cuda', 'cuda:N') on this machine.

    A GPU's ``slots_per_gpu`` slots are spread over ``processes_per_gpu`` processes as lanes.
    """
    if slots_per_gpu < 1 or cpu_slots < 1 or processes_per_gpu < 1:
        raise ValueError(f"{slots_per_gpu=}, {cpu_slots=} and {processes_per_gpu=} must be >= 1")
    use_cuda = device != "cpu" and torch.cuda.is_available()
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but this machine has no CUDA GPU")
    if not use_cuda:
        return [SlotPlan("cpu", None) for _ in range(cpu_slots)]
    gpus = (
        [device.split(":")[1]]
        if ":" in device
        else [str(i) for i in range(torch.cuda.device_count())]
    )
    return [
        SlotPlan("cuda", gpu, n)
        for gpu in gpus
        for n in split_lanes(slots_per_gpu, processes_per_gpu)
    ]


def split_lanes(slots: int, processes: int) -> list[int]:
    """Lanes per process when ``slots`` are spread over at most ``processes``, evenly."""
    procs = min(processes, slots)
    return [slots // procs + (k < slots % procs) for k in range(procs)]


class Executor(ABC):
    """Runs `RunTask`s on slots and hands their messages to the worker.

    Messages are those of `jobs.worker.slots` plus ``log`` (``text`` for the job's log).
    """

    #: The executor's name on the study card and the worker registry.
    name: str = "local"
    #: torch's CPU threads in each CPU slot (recorded on the study card).
    threads_per_slot: int = DEFAULT_THREADS_PER_SLOT
    #: Set to ask every run in flight to stop: a thread's event, or a process context's for
    #: slots in processes of their own (each executor makes the one its slots can see).
    cancel: threading.Event | EventType

    @property
    @abstractmethod
    def slots(self) -> int:
        """How many runs may train at once."""

    @property
    @abstractmethod
    def devices(self) -> list[str]:
        """Device names, for the worker registry (e.g. ['cuda:0', 'cuda:0'] or ['cpu'])."""

    @abstractmethod
    def submit(self, task: RunTask) -> None:
        """Start ``task`` on a free slot (call only while `free_slots` > 0)."""

    @abstractmethod
    def free_slots(self) -> int:
        """Slots not training now."""

    @abstractmethod
    def poll(self, timeout_s: float, handle: Handle) -> None:
        """Hand every message that arrives within ``timeout_s`` to ``handle``."""

    def sharing(self, slot: int) -> int:
        """How many slots train on ``slot``'s device at once: a GPU's slots share the card
        (its lanes train side by side), while each CPU slot has cores of its own."""
        devices = self.devices
        mine = devices[slot] if 0 <= slot < len(devices) else "cpu"
        return devices.count(mine) if mine.startswith("cuda") else 1

    def set_cancel(self, cancelled: bool) -> None:
        """Ask every run in flight to stop at its next epoch boundary (or clear that)."""
        if cancelled:
            self.cancel.set()
        else:
            self.cancel.clear()

    def slots_ready_at(self) -> list[float]:
        """When each slot process said it was ready (wall clock); empty where the
        executor has no processes of its own to wait for."""
        return []

    def close(self) -> None:  # noqa: B027 - optional hook
        """Stop slots and release resources."""


def slot_process(*args: Any) -> None:
    """A slot process's entry point (`jobs.worker.slots.slot_main`'s arguments): the
    training code is imported here, in the slot, never in the worker (`jobs.worker.tasks`)."""
    from jobs.worker.slots import slot_main

    slot_main(*args)


class InlineExecutor(Executor):
    """One slot inside the worker process; `poll` trains the submitted run."""

    name = "inline"

    def __init__(
        self, device: str = "cpu", threads_per_slot: int = DEFAULT_THREADS_PER_SLOT
    ) -> None:
        # It trains in this process: the training code comes with it (`slot_process`).
        from engine.grade_model import resolve_device
        from jobs.worker.slots import SlotState

        self.state = SlotState(device=resolve_device(device))
        self.threads_per_slot = check_threads_per_slot(threads_per_slot)
        if self.state.device.type == "cpu":
            torch.set_num_threads(self.threads_per_slot)
        self.cancel = threading.Event()
        self._task: RunTask | None = None

    @property
    def slots(self) -> int:
        return 1

    @property
    def devices(self) -> list[str]:
        return [str(self.state.device)]

    def submit(self, task: RunTask) -> None:
        self._task = task

    def free_slots(self) -> int:
        return 0 if self._task else 1

    def poll(self, timeout_s: float, handle: Handle) -> None:
        from jobs.worker.slots import execute_run

        task, self._task = self._task, None
        if task is not None:
            execute_run(self.state, task, emit=handle, should_stop=self.cancel.is_set)


class LocalExecutor(Executor):
    """Long-lived slot processes on this machine (spawned, so CUDA is safe in each)."""

    def __init__(
        self, plans: list[SlotPlan], threads_per_slot: int = DEFAULT_THREADS_PER_SLOT
    ) -> None:
        self.threads_per_slot = check_threads_per_slot(threads_per_slot)
        self._ctx = mp.get_context("spawn")
        self.cancel = self._ctx.Event()
        self._outbox = self._ctx.Queue()
        self._plans = plans
        self._busy: dict[int, str | None] = {}
        self._ready_at: dict[int, float] = {}
        self._process_of: dict[int, int] = {}
        self._device_of: dict[int, str] = {}
        self._first_slot: list[int] = []
        self._inboxes: list[Any] = []
        self._procs: list[Any] = []
        for index, plan in enumerate(plans):
            first_slot = len(self._busy)
            self._first_slot.append(first_slot)
            inbox, proc = self._start_process(index)
            self._inboxes.append(inbox)
            self._procs.append(proc)
            device = plan.device if plan.visible_gpu is None else f"cuda:{plan.visible_gpu}"
            for slot in range(first_slot, first_slot + plan.lanes):
                self._busy[slot] = None
                self._process_of[slot] = index
                self._device_of[slot] = device

    def _start_process(self, index: int) -> tuple[Any, Any]:
        """Start the slot process of plan ``index``; its inbox and the process."""
        plan = self._plans[index]
        threads = self.threads_per_slot if plan.device == "cpu" else (os.cpu_count() or 1)
        inbox = self._ctx.Queue()
        proc = self._ctx.Process(
            target=slot_process,
            args=(
                self._first_slot[index],
                plan.lanes,
                plan.device,
                plan.visible_gpu,
                inbox,
                self._outbox,
                self.cancel,
                os.getpid(),
                threads,
            ),
            name=f"softgrade-slot-{self._first_slot[index]}",
            daemon=True,
        )
        with main_module_hidden():  # a slot needs nothing from __main__ (engine.spawn)
            proc.start()
        return inbox, proc

    def _replace_process(self, index: int, reason: str, handle: Handle) -> None:
        """Stop slot process ``index`` and start a fresh one in its place (a CUDA fault
        leaves a process's context unusable). Runs its other lanes had in flight are handed
        back to be queued again: they did nothing wrong."""
        old = self._procs[index]
        old.terminate()
        old.join(timeout=10)
        if old.is_alive():
            old.kill()
        self._inboxes[index], self._procs[index] = self._start_process(index)
        for slot, process in self._process_of.items():
            if process != index:
                continue
            run = self._busy[slot]
            self._busy[slot] = None
            if run is not None:
                handle({"kind": "requeue", "run_id": run, "slot": slot, "reason": reason})

    @property
    def slots(self) -> int:
        return len(self._busy)

    @property
    def devices(self) -> list[str]:
        return list(self._device_of.values())

    def free_slots(self) -> int:
        return sum(run is None for run in self._busy.values())

    def submit(self, task: RunTask) -> None:
        slot = next(s for s, run in self._busy.items() if run is None)
        self._busy[slot] = task.run_id
        self._inboxes[self._process_of[slot]].put((slot, task))

    def poll(self, timeout_s: float, handle: Handle) -> None:
        try:
            message = self._outbox.get(timeout=timeout_s)
        except queue.Empty:
            self._replace_dead(handle)
            return
        while True:
            if message["kind"] in ("done", "cancelled", "error"):
                self._busy[message["slot"]] = None
            if message["kind"] == "ready":
                self._ready_at[message["slot"]] = message.get("at", 0.0)
            else:
                handle(message)
            if message["kind"] == "error" and message.get("context_lost"):
                index = self._process_of[message["slot"]]
                self._replace_process(
                    index, f"a sibling lane's run {message['run_id']} hit a CUDA fault", handle
                )
            try:
                message = self._outbox.get_nowait()
            except queue.Empty:
                break
        self._replace_dead(handle)

    def _replace_dead(self, handle: Handle) -> None:
        """A slot process that died while training (killed for memory, a crash) fails the
        run it had and is started again, so the study goes on."""
        for index, proc in enumerate(self._procs):
            if proc.is_alive():
                continue
            lost = [
                (slot, run)
                for slot, run in self._busy.items()
                if self._process_of[slot] == index and run is not None
            ]
            if not lost:
                continue
            why = f"its slot process died (exit code {proc.exitcode}); often out of memory"
            for slot, run in lost:
                self._busy[slot] = None
                handle(
                    {
                        "kind": "error",
                        "run_id": run,
                        "slot": slot,
                        "traceback": f"RuntimeError: {why}",
                        "error_line": f"RuntimeError: {why}",
                    }
                )
            self._inboxes[index], self._procs[index] = self._start_process(index)

    def slots_ready_at(self) -> list[float]:
        return list(self._ready_at.values())

    def close(self) -> None:
        for inbox in self._inboxes:
            inbox.put(None)
        for proc in self._procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
