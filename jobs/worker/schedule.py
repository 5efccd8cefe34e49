"""The order runs go to slots: seed by seed, and inside a seed the longest expected run first.

Slots take the next pending run as they free up, so a study's tail is whatever runs are
still training when the queue runs dry. Handing out the longest runs first (the LPT rule of
list scheduling) leaves the short ones for the end, where they fill the slots that free up
instead of one long run keeping a single slot busy while the others idle. Seeds stay in plan
order, so a study stopped early still has complete seeds first (`engine.study.plan_runs`).

Expected cost: the measured `jobs.services.run_costs.CostModel` of this worker's device when
it has one at the study's image and batch size, else a relative guess: training images ×
epoch cap, times `EAGER_GPU_COST` on a GPU for methods without a target matrix.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping

import numpy as np
import pandas as pd

from engine.config import TrainConfig
from engine.methods import get_method
from engine.study import PlannedRun
from engine.vocab import LABEL_COLUMNS
from jobs.services.run_costs import CostModel, relative_run_cost


def train_images(
    meta: pd.DataFrame, splits: Mapping[int, pd.Series], task: str, split_seed: int
) -> int:
    """How many images ``task`` trains on in the split ``split_seed`` drew (those with its
    grade); ``splits`` is keyed by split seed."""
    has_grade = meta[LABEL_COLUMNS[task]].notna().to_numpy()
    split_of = splits[split_seed].reindex(meta["image_id"]).to_numpy()
    return int(np.count_nonzero(has_grade & (split_of == "train")))


def expected_cost(
    n_train: Mapping[tuple[str, int], int], *, model: CostModel | None
) -> Callable[[PlannedRun], float]:
    """A run's expected cost: device-seconds from ``model``, else a relative guess."""

    def cost(run: PlannedRun) -> float:
        images = n_train[(run.task, run.seed)]
        if model is not None:
            return model.run_seconds(run.task, run.method, images, run.config.max_epochs)
        return relative_run_cost(images, run.config.max_epochs)

    return cost


def longest_first(runs: list[PlannedRun], cost: Callable[[PlannedRun], float]) -> list[PlannedRun]:
    """``runs`` seed by seed in their first-seen order, each seed's longest expected first
    (ties keep plan order)."""
    seed_rank = {seed: rank for rank, seed in enumerate(dict.fromkeys(r.seed for r in runs))}
    return sorted(runs, key=lambda r: (seed_rank[r.seed], -cost(r)))


#: Set to "off" to let each lane compile a task's steps when its first run of that task starts
#: (what slots did before: a benchmark's "before").
WARM_SWITCH_ENV = "SOFTGRADE_WARM_TASKS"


def warm_configs(runs: Iterable[PlannedRun]) -> tuple[TrainConfig, ...]:
    """One config per trainer the runs need (task, head, weights, path, image size),
    first-needed first, for lanes to compile after their first run
    (`jobs.worker.slots.SlotState.warm`).

    Every method trains on captured graphs (`engine.train_graphs`), so every trainer is
    compiled ahead: its first run's config stands for it (another loss on the same trainer
    costs only a capture when first used). Empty when ``SOFTGRADE_WARM_TASKS=off``.
    """
    if os.environ.get(WARM_SWITCH_ENV, "").strip().lower() == "off":
        return ()
    chosen: dict[tuple[str, str, str | None, bool | None, int], TrainConfig] = {}
    for run in runs:
        config = run.config
        head = get_method(run.method).head
        key = (config.task, head, config.weights_path, config.fast, config.image_size)
        chosen.setdefault(key, config)
    return tuple(chosen.values())
