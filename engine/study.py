"""Expanding a study into runs: every (task, method, seed) × its sampled configurations.

Run ids are derived from the study id and the run's place in the plan, so a resumed job
recognises the runs it already finished and never redoes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.config import StudySpec, TrainConfig
from engine.methods import sample_configs
from engine.vocab import run_id


@dataclass(frozen=True)
class PlannedRun:
    """One run of a study's plan."""

    run_id: str
    task: str
    method: str
    seed: int
    config_index: int
    config: TrainConfig

    @property
    def split_seed(self) -> int:
        """The seed that drew this run's split (`engine.seeds`)."""
        return int(self.config.split_seed)

    @property
    def init_seed(self) -> int:
        """The seed that drew this run's initial weights, batch order and search sample."""
        return int(self.config.init_seed)

    @property
    def group(self) -> tuple[str, str, int]:
        """The (task, method, seed) whose search this run belongs to."""
        return (self.task, self.method, self.seed)


def plan_runs(spec: StudySpec, study_id: str, device: str) -> list[PlannedRun]:
    """Every run of ``spec`` in execution order: seed-major, so finished seeds come early
    and a partial study already has complete seeds to compare.

    The search's configurations are drawn with the init seed (the learning procedure's
    randomness, `engine.seeds`), which is the seed itself for independent seeds.
    """
    plan = []
    for seed in spec.seeds:
        _, init_seed = spec.split_and_init(seed)
        for task in spec.tasks:
            for method in spec.methods:
                for index, params in enumerate(sample_configs(method, spec.budget, init_seed)):
                    plan.append(
                        PlannedRun(
                            run_id=run_id(study_id, task, method, seed, index),
                            task=task,
                            method=method,
                            seed=seed,
                            config_index=index,
                            config=spec.train_config(task, method, seed, params, device),
                        )
                    )
    return plan
