"""How a worker's start-up went: one job-log line at its first result (issue 30, item 2).

A study in a new process waits for the worker's imports, its slot processes (imports and
the GPU's context), the data and the first run's compiled steps before anything trains. The
line names when each was done, counted from the process's start, so a slow start shows
where its seconds went (`bench/compile_cache.py` reads it).
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def process_age_s(stat: Path = Path("/proc/self/stat")) -> float | None:
    """Seconds since this process started, from the kernel's record (Linux); None elsewhere.

    Field 22 of ``/proc/self/stat`` is the start in clock ticks after boot, on the clock
    that CLOCK_BOOTTIME reads.
    """
    try:
        text = stat.read_text()
        # The command name (field 2) may hold spaces and parentheses: split after its end.
        fields = text[text.rindex(")") + 2 :].split()
        ticks = int(fields[19])  # field 22 counted from 1; fields[0] is field 3
        per_second = os.sysconf("SC_CLK_TCK")
        return time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / per_second
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def process_started_at() -> float | None:
    """This process's start on the wall clock (``time.time()``), None where unknown."""
    age = process_age_s()
    return None if age is None else time.time() - age


def startup_line(
    started_at: float,
    ready_at: list[float],
    received_at: float,
    first_epoch_s: float | None,
    finished_at: float,
) -> str:
    """The job log's sentence on the worker's first result, every time from its start."""

    def since(at: float) -> str:
        return f"{at - started_at:.1f} s"

    parts = [f"first result {since(finished_at)} after this worker's process started"]
    if ready_at:
        first, last = min(ready_at), max(ready_at)
        span = since(first) if last - first < 0.05 else f"{since(first)}-{since(last)}"
        parts.append(f"slot processes ready (their imports and device) at {span}")
    parts.append(f"its run reached a slot at {since(received_at)}")
    if first_epoch_s is not None:
        parts.append(
            f"its first epoch (data, the model, its compiled steps) ended at "
            f"{since(received_at + first_epoch_s)}"
        )
    return "; ".join(parts)
