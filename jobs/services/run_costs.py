"""What runs cost and will cost, from the costs measured here (`store.costs`), per device.

A run's measured cost is its share of the device: wall seconds / the slots that shared the
device meanwhile (a GPU's lanes train side by side). Per training image and epoch that share
is nearly constant for one device, image size and batch size, and differs by the method's
family (a GPU replays captured graphs for target-distribution methods and trains the others
eagerly at about half the speed) and a little by task. So a `CostModel` keeps the median per
(task, family) and scales it by the planned run's training images and epochs. Epochs: the
median a (task, family) stopped at under the same epoch cap, or the cap itself.

Nothing here reads the store or imports torch: the worker orders runs with it, the pages
estimate with it (both pass the frames `store.costs` returns).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from engine.methods import get_method, is_registered

# A method without a (J, J) target matrix (a regularised loss, an ordinal output layer)
# trains on the GPU's eager fast path at 0.46-0.59x the captured graphs' images/s on an H200
# (bench/RESULTS.md, training images/s per method): ~1.9x the time per image. The CPU path is
# the same for every method. Used where nothing is measured yet.
EAGER_GPU_COST = 1.9
# Names `jobs.worker.slots.device_name` gives a CPU ("CPU <model> (N thread(s))").
CPU_PREFIX = "CPU "


def is_gpu_name(device_name: str) -> bool:
    """Whether a measured device name is a GPU's (not 'CPU <model> ...')."""
    return not device_name.startswith(CPU_PREFIX)


def family_of(method: str) -> str:
    """The method's family from the registry; a method not registered here is its own."""
    return get_method(method).family if is_registered(method) else method


def eager_on_gpu(method: str) -> bool:
    """Whether a GPU trains ``method`` eagerly (no target matrix, so no captured graphs)."""
    return is_registered(method) and get_method(method).target_matrix is None


@dataclass(frozen=True)
class CostModel:
    """Measured costs on one device at one image and batch size.

    Attributes:
        device_name: The device measured ('NVIDIA H200', 'CPU ... (1 thread(s))').
        runs: How many measured runs the medians come from.
        unit: (task, family) -> median device-seconds per training image and epoch.
        epochs: (task, family, epoch cap) -> median epochs the runs ran.
    """

    device_name: str
    runs: int
    unit: Mapping[tuple[str, str], float]
    epochs: Mapping[tuple[str, str, int], float]

    def unit_for(self, task: str, family: str) -> float:
        """The (task, family) median; else the family's on any task; else every run's."""
        if (task, family) in self.unit:
            return self.unit[(task, family)]
        same_family = [v for (_, f), v in self.unit.items() if f == family]
        pool = same_family or list(self.unit.values())
        return float(pd.Series(pool).median())

    def run_seconds(
        self, task: str, method: str, n_train: int, max_epochs: int, *, all_epochs: bool = False
    ) -> float:
        """A planned run's expected device-seconds: the unit cost × images × epochs, the
        epochs measured runs stopped at (or ``max_epochs`` with ``all_epochs``)."""
        family = family_of(method)
        epochs = float(max_epochs)
        if not all_epochs:
            epochs = min(epochs, self.epochs.get((task, family, max_epochs), epochs))
        return self.unit_for(task, family) * n_train * epochs


def cost_model(
    measured: pd.DataFrame, device_name: str, *, image_size: int, batch_size: int
) -> CostModel | None:
    """The model of ``device_name`` from `store.costs.run_costs` rows at this image and batch
    size; None when none was measured there."""
    if measured.empty:
        return None
    same = measured[
        (measured["device_name"] == device_name)
        & (measured["image_size"] == image_size)
        & (measured["batch_size"] == batch_size)
    ]
    if same.empty:
        return None
    same = same.assign(
        family=same["method"].map(family_of),
        unit=same["wall_s"] / same["slots_sharing"] / (same["n_train"] * same["epochs_run"]),
    )
    unit = same.groupby(["task", "family"])["unit"].median()
    every = measured.assign(family=measured["method"].map(family_of))
    epochs = every.groupby(["task", "family", "max_epochs"])["epochs_run"].median()
    return CostModel(
        device_name=device_name,
        runs=len(same),
        unit={(str(t), str(f)): float(v) for (t, f), v in unit.items()},
        epochs={(str(t), str(f), int(m)): float(v) for (t, f, m), v in epochs.items()},
    )


def latest_device(measured: pd.DataFrame, *, gpu: bool) -> str | None:
    """The GPU (or CPU) that most recently trained a measured run here, or None."""
    if measured.empty:
        return None
    kind = measured[measured["device_name"].map(is_gpu_name) == gpu]
    if kind.empty:
        return None
    return str(kind.sort_values("recorded_at").iloc[-1]["device_name"])


@dataclass(frozen=True)
class TimeLeft:
    """A running study's time left from its own measured runs."""

    seconds: float
    device_name: str
    measured_runs: int


def time_left(
    study_runs: pd.DataFrame, planned: Mapping[tuple[str, str], int], parallel: int
) -> TimeLeft | None:
    """The time its unfinished runs take, from the study's own measured runs on its device.

    Args:
        study_runs: `store.costs.study_run_costs` of the study (every stored run; cost
            columns empty where not measured).
        planned: (task, method) -> runs the study's plan holds.
        parallel: Devices training at once (GPUs, or CPU slots).

    Returns:
        None while none of the study's runs has a measured cost.
    """
    measured = study_runs.dropna(subset=["wall_s"])
    if measured.empty:
        return None
    device = str(measured["device_name"].mode().iloc[0])
    measured = measured[measured["device_name"] == device]
    share = measured["wall_s"] / measured["slots_sharing"]
    by_group = share.groupby([measured["task"], measured["method"].map(family_of)]).median()
    by_task = share.groupby(measured["task"]).median()
    overall = float(share.median())
    done = study_runs.groupby(["task", "method"]).size()
    seconds = 0.0
    for (task, method), n in planned.items():
        left = max(0, n - int(done.get((task, method), 0)))
        cost = by_group.get((task, family_of(method)), by_task.get(task, overall))
        seconds += left * float(cost)
    return TimeLeft(seconds / max(parallel, 1), device, len(measured))
