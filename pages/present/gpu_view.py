"""The Jobs page's GPU table as values: each GPU's use, memory and live images/s, and which
GPUs idle while a job runs. No streamlit, so it is unit-tested with plain readings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from jobs.services.gpu_probe import GpuReading

# A GPU busy less than this while a job runs is marked idle: training keeps an H200 at
# ~100 % (bench/RESULTS.md), so half means it waits on something (start-up, a compile, the
# store, too few runs left).
IDLE_BELOW_PCT = 50.0
NO_GPU_TEXT = "No GPU on this machine: studies train on the CPU."
GPU_COLUMNS = ("GPU", "Use", "Memory", "Training images/s")


def rates_by_index(rates: pd.DataFrame, hostname: str) -> dict[int, float]:
    """This host's live training images/s per GPU index, from `store.costs.live_device_rates`
    (devices 'cuda:N' as the workers name them; CPU slots and other hosts left out)."""
    found: dict[int, float] = {}
    if rates.empty:
        return found
    for row in rates.itertuples():
        device = str(row.device)
        if row.hostname != hostname or not device.startswith("cuda"):
            continue
        index = int(device.split(":")[1]) if ":" in device else 0
        found[index] = found.get(index, 0.0) + float(row.images_per_s)
    return found


def gpu_table(readings: Sequence[GpuReading], rates: Mapping[int, float]) -> pd.DataFrame:
    """One row per GPU: "0 · NVIDIA H200", "97 %", "12.3 / 139.8 GiB", "15,800" (or "—"
    while no run trains on it)."""
    rows = [
        (
            f"{r.index} · {r.name}",
            f"{r.utilization_pct:.0f} %",
            f"{r.memory_used_bytes / 2**30:.1f} / {r.memory_total_bytes / 2**30:.1f} GiB",
            f"{rates[r.index]:,.0f}" if r.index in rates else "—",
        )
        for r in readings
    ]
    return pd.DataFrame(rows, columns=list(GPU_COLUMNS))


def idle_gpus(readings: Sequence[GpuReading], *, job_running: bool) -> list[int]:
    """Indices of GPUs below `IDLE_BELOW_PCT` while a job runs (none while nothing runs)."""
    if not job_running:
        return []
    return [r.index for r in readings if r.utilization_pct < IDLE_BELOW_PCT]


def idle_text(idle: Sequence[int], readings: Sequence[GpuReading]) -> str:
    """One sentence naming the idle GPUs and their use."""
    use = {r.index: r.utilization_pct for r in readings}
    names = ", ".join(f"GPU {i} ({use[i]:.0f} %)" for i in idle)
    return (
        f"Idle while a job runs: {names} below {IDLE_BELOW_PCT:.0f} %. Start-up and the "
        "first compile take a minute; longer means a GPU waits (too few runs left, or a "
        "worker without it)."
    )
