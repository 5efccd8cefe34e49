"""How a worker trains, as the command line and every executor share it (imports no torch,
so the command line can offer the defaults without loading it)."""

from __future__ import annotations

# torch's CPU threads in each CPU slot. One thread per slot is the default on every executor:
# CPU results depend on the thread count (reductions split differently), and the Ray executor
# reserves one CPU per slot, so with one thread each the executors give the same numbers.
DEFAULT_THREADS_PER_SLOT = 1

# How often the Ray executor retries a run whose actor died (lost node, out of memory).
DEFAULT_MAX_RETRIES = 2


def check_threads_per_slot(threads_per_slot: int) -> int:
    """``threads_per_slot`` if it is a whole number >= 1, else a ValueError saying so."""
    if isinstance(threads_per_slot, bool) or not isinstance(threads_per_slot, int):
        raise ValueError(f"threads per slot: {threads_per_slot!r} must be a whole number >= 1")
    if threads_per_slot < 1:
        raise ValueError(f"threads per slot: {threads_per_slot} must be >= 1")
    return threads_per_slot
