"""This machine's GPUs as the Jobs page shows them: use, memory, by NVML.

NVML (nvidia-ml-py, the ``pynvml`` module) reads what ``nvidia-smi`` reads, from the
driver, without a CUDA context: torch's ``mem_get_info`` would put a context of several
hundred MiB on every GPU from the app's process. Without the package or a driver there is
no reading, and the page says so in one sentence.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GpuReading:
    """One GPU now: its NVML index and name, percent of time a kernel ran over the last
    sample period (NVML's utilization.gpu), and memory in bytes."""

    index: int
    name: str
    utilization_pct: float
    memory_used_bytes: int
    memory_total_bytes: int


@functools.cache
def _nvml() -> Any | None:
    """The initialised pynvml module, or None without the package, a driver or a GPU."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # ImportError, NVMLError (no driver, no device): no readings
        log.debug("NVML unavailable", exc_info=True)
        return None
    return pynvml


def read_gpus() -> list[GpuReading]:
    """Every GPU of this machine now; empty when there is none (or NVML cannot tell)."""
    nvml = _nvml()
    if nvml is None:
        return []
    readings = []
    try:
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            name = nvml.nvmlDeviceGetName(handle)
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            readings.append(
                GpuReading(
                    index=index,
                    name=name.decode() if isinstance(name, bytes) else str(name),
                    utilization_pct=float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu),
                    memory_used_bytes=int(memory.used),
                    memory_total_bytes=int(memory.total),
                )
            )
    except nvml.NVMLError:  # a GPU fell off the bus mid-read: show what was read
        log.warning("NVML reading failed", exc_info=True)
    return readings
