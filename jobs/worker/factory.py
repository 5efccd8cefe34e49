"""Building a worker from command-line choices: executor kind and slot count."""

from __future__ import annotations

import logging

import torch

from jobs.worker.executors import Executor, InlineExecutor, LocalExecutor, plan_slots
from jobs.worker.runner import Worker, WorkerOptions
from jobs.worker.settings import DEFAULT_MAX_RETRIES, DEFAULT_THREADS_PER_SLOT

log = logging.getLogger(__name__)

# GPU memory planned per slot. One fast-path ResNet18 run at 224 px, batch 128, peaks at
# ~1.8 GiB allocated (bench/RESULTS.md); the rest is headroom for the CUDA context, cuDNN
# workspaces and the allocator's cache. Slots per GPU are chosen so K of them fit; beyond 2-4
# lanes a card gains nothing more (it is busy), hence the cap.
RUN_GPU_MEMORY_GIB = 6.0
MAX_SLOTS_PER_GPU = 4


def auto_slots_per_gpu() -> int:
    """Slots per GPU from free memory of the first GPU (1 without CUDA)."""
    if not torch.cuda.is_available():
        return 1
    free, _ = torch.cuda.mem_get_info(0)
    fit = int(free / 2**30 * 0.8 // RUN_GPU_MEMORY_GIB)
    return max(1, min(MAX_SLOTS_PER_GPU, fit))


def make_executor(
    kind: str,
    *,
    device: str,
    slots_per_gpu: int,
    cpu_slots: int,
    address: str | None,
    processes_per_gpu: int = 1,
    threads_per_slot: int = DEFAULT_THREADS_PER_SLOT,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> Executor:
    """The executor the CLI asked for (``max_retries``: Ray only)."""
    if kind == "inline":
        return InlineExecutor(
            device="cuda"
            if device == "auto" and torch.cuda.is_available()
            else ("cpu" if device == "auto" else device),
            threads_per_slot=threads_per_slot,
        )
    if kind == "ray":
        from jobs.worker.ray_executor import RayExecutor

        # No free-memory probe here: the worker's machine need not have the cluster's GPUs.
        return RayExecutor(
            address=address,
            device=device,
            slots_per_gpu=slots_per_gpu or 1,
            processes_per_gpu=processes_per_gpu,
            cpu_slots=cpu_slots,
            max_retries=max_retries,
            threads_per_slot=threads_per_slot,
        )
    k = slots_per_gpu or auto_slots_per_gpu()
    return LocalExecutor(
        plan_slots(device, k, cpu_slots, processes_per_gpu), threads_per_slot=threads_per_slot
    )


def make_worker(
    *,
    executor: str,
    device: str,
    slots_per_gpu: int,
    cpu_slots: int,
    address: str | None,
    processes_per_gpu: int = 1,
    threads_per_slot: int = DEFAULT_THREADS_PER_SLOT,
    max_retries: int = DEFAULT_MAX_RETRIES,
    options: WorkerOptions | None = None,
) -> Worker:
    """A worker on the default store with the chosen executor."""
    return Worker(
        make_executor(
            executor,
            device=device,
            slots_per_gpu=slots_per_gpu,
            cpu_slots=cpu_slots,
            address=address,
            processes_per_gpu=processes_per_gpu,
            threads_per_slot=threads_per_slot,
            max_retries=max_retries,
        ),
        executor_name=executor,
        options=options,
    )
