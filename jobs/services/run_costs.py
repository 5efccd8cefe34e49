"""What runs cost and will cost, from the costs measured here (`store.costs`), per device.

A run's measured cost is its share of the device: wall seconds / the slots that shared the
device meanwhile (a GPU's lanes train side by side). Per training image and epoch that share
is nearly constant for one device, image size and batch size, and differs a little by the
method's family and by task (every method replays captured graphs on a GPU since issue 37).
So a `CostModel` keeps the median per (task, family) and scales it by the planned run's
training images and epochs. Epochs: the median a (task, family) stopped at under the same
epoch cap, or the cap itself.

Nothing here reads the store or imports torch: the worker orders runs with it, the pages
estimate with it (both pass the frames `store.costs` returns).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from engine.methods import get_method, is_registered

# Names `jobs.worker.tasks.device_name` gives a CPU ("CPU <model> (N thread(s))").
CPU_PREFIX = "CPU "


def is_gpu_name(device_name: str) -> bool:
    """Whether a measured device name is a GPU's (not 'CPU <model> ...')."""
    return not device_name.startswith(CPU_PREFIX)


def family_of(method: str) -> str:
    """The method's family from the registry; a method not registered here is its own."""
    return get_method(method).family if is_registered(method) else method


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


def relative_run_cost(n_train: float, max_epochs: float) -> float:
    """A run's expected cost relative to others, with nothing measured: training images ×
    epoch cap (every method trains at about one speed on a device). The order lanes take
    runs in (`jobs.worker.schedule`) and a study's time left use it."""
    return float(n_train) * float(max_epochs)


#: Columns of a study's planned runs for `time_left` (``n_train`` may be missing).
PLANNED_COLUMNS = ("run_id", "task", "method", "split_seed", "max_epochs", "n_train")


def with_train_images(planned: pd.DataFrame, counts: pd.DataFrame) -> pd.DataFrame:
    """``planned`` (run_id, task, method, split_seed, max_epochs) with each run's training
    images from ``counts`` (`store.costs.train_image_counts`: split_seed, task, n_train);
    missing where the split is not stored yet."""
    planned = planned.drop(columns="n_train", errors="ignore")
    if counts.empty:
        return planned.assign(n_train=float("nan"))
    counts = counts.astype({"split_seed": "int64", "n_train": "float64"})
    return planned.merge(counts, on=["split_seed", "task"], how="left")


@dataclass(frozen=True)
class TimeLeft:
    """A running study's time left from its own measured runs."""

    seconds: float
    device_name: str
    measured_runs: int


def time_left(study_runs: pd.DataFrame, planned: pd.DataFrame, parallel: int) -> TimeLeft | None:
    """The time the study's unfinished runs take: each at its own expected cost, scaled by
    how long the study's measured runs took on its device against theirs.

    Lanes take the longest expected runs first (`jobs.worker.schedule`), so the first runs
    to finish are the longest: an average over finished runs would overestimate the short
    ones left (a 20-run CPU study guessed 527 s after its first run, against 324 s). The
    ratio of measured device-seconds to expected cost (`relative_run_cost`) is what the
    finished runs say about this device and study; every run left is its expected cost times
    that ratio.

    Args:
        study_runs: `store.costs.study_run_costs` of the study (every stored run; cost
            columns empty where not measured).
        planned: The study's planned runs (`PLANNED_COLUMNS`; ``n_train`` from
            `with_train_images`, missing where not known: then its task's, else every
            planned run's median).
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
    expected_done = [
        relative_run_cost(r.n_train, r.max_epochs) for r in measured.itertuples(index=False)
    ]
    seconds_per_unit = float(share.sum()) / sum(expected_done)
    left = planned[~planned["run_id"].isin(study_runs["run_id"])]
    n_train = _filled_train_images(planned, measured).loc[left.index]
    expected_left = sum(
        relative_run_cost(n, r.max_epochs)
        for r, n in zip(left.itertuples(index=False), n_train, strict=True)
    )
    return TimeLeft(seconds_per_unit * expected_left / max(parallel, 1), device, len(measured))


def _filled_train_images(planned: pd.DataFrame, measured: pd.DataFrame) -> pd.Series:
    """Each planned run's training images; where unknown (its split not read yet), its
    task's median among the planned runs, else among the measured runs, else every measured
    run's, else 1 (then runs differ only by epochs and method).

    The measured runs come before 1: they are priced at their own images, and a run left
    priced at 1 image would cost a few hundredth of them (a study's first minute read "2 s
    left" with 46 of 60 runs to go).
    """
    if "n_train" in planned:
        n_train = pd.to_numeric(planned["n_train"], errors="coerce").astype("float64")
    else:
        n_train = pd.Series(float("nan"), index=planned.index)
    done = pd.to_numeric(measured["n_train"], errors="coerce").astype("float64")
    planned_task = n_train.groupby(planned["task"]).transform("median")
    measured_task = planned["task"].map(done.groupby(measured["task"]).median())
    overall = done.median()
    filled = n_train.fillna(planned_task).fillna(measured_task)
    return filled.fillna(1.0 if pd.isna(overall) else overall)
