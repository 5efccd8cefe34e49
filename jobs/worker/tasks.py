"""What the worker hands a slot and what a slot says back: `RunTask`, `Message`, and the
device name a run's cost is recorded under.

Light on purpose: the worker process imports this, while the training code (`engine.train`,
torchvision, torch's compiler: 1-4 s of imports) is imported only where runs train, in the
slots (`jobs.worker.slots`). The worker is up, and its slot processes spawned, that much
sooner (issue 30: a study's start-up).
"""

from __future__ import annotations

import contextlib
import functools
import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from engine.config import TrainConfig
from jobs.worker.pruning import PruningTask

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
    # Where compiled steps are kept across processes (`jobs.worker.compile_cache`): the
    # worker's SOFTGRADE_HOME/compile-cache; None leaves torch's default folder.
    compile_cache: str | None = None
    # A pruned search's shared study (jobs.worker.pruning); None: the full search.
    pruning: PruningTask | None = None
    # One config per trainer the job needs (each task, head and weights): one lane of a GPU
    # process compiles them ahead, a lane alone after its first run (`SlotState.warm`).
    # Empty: each compiles when first used.
    warm: tuple[TrainConfig, ...] = ()


def device_name(device: torch.device, threads: int | None = None) -> str:
    """The device a run's cost was measured on: the GPU's name ('NVIDIA H200'), or the CPU's
    model with torch's thread count (a CPU run's time depends on both; default this
    process's)."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return torch.cuda.get_device_name(index)
    threads = torch.get_num_threads() if threads is None else threads
    return f"CPU {_cpu_model()} ({threads} thread(s))"


@functools.cache
def _cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else the platform's word for it."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return " ".join(line.split(":", 1)[1].split())
    return platform.processor() or platform.machine() or "unknown"
