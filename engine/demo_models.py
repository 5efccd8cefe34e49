"""The models that grade a film in a demonstration: which ones, and what each seed says.

- `default_method` and `best_seed`: the method best on validation, and its seed whose
  selected models did best on validation with weights on this machine (that seed's models
  give the grade and the Grad-CAM map).
- `seed_checkpoints`: every seed's selected model of a method with weights here, so the demo
  can show how much the seeds agree rather than one seed's word.
- `checkpoint_probabilities`: P(grade) of a saved model on knee crops.
- `knee_to_grade`: the knee on a whole film and whether it is one, found and judged as
  imports do (a trained YOLO detector's folder, or the classical detector).

No streamlit and no store: the pages and `jobs.services.demo_bundle` read runs and pass them in.
torch, Grad-CAM and the detectors are imported where a model runs, so the CLI (which
imports this through `jobs.services.demo_bundle`) starts without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from engine.analysis.metrics import SELECTION_COLUMN, SELECTION_METRIC, get_metric

if TYPE_CHECKING:
    from engine.detect import Box


def _best_on_validation(runs: pd.DataFrame, by: str) -> Any:
    """The ``by`` value whose runs have the best mean selection metric on validation."""
    means = runs.groupby(by)[SELECTION_COLUMN].mean()
    return means.idxmin() if get_metric(SELECTION_METRIC).lower_is_better else means.idxmax()


def default_method(runs: pd.DataFrame) -> str:
    """The method with the best mean validation selection metric (AMAE) over its selected
    runs."""
    return str(_best_on_validation(runs, "method"))


def _with_weights(runs: pd.DataFrame, method: str, tasks: list[str]) -> pd.DataFrame:
    """Selected runs of ``method`` on ``tasks`` whose checkpoint file is on this machine."""
    mine = runs[(runs["method"] == method) & runs["task"].isin(tasks)].copy()
    return mine[mine["checkpoint_path"].map(lambda p: isinstance(p, str) and Path(p).is_file())]


def best_seed(runs: pd.DataFrame, method: str, tasks: list[str]) -> tuple[int, dict[str, str]]:
    """The seed whose selected models of ``method`` did best on validation (mean selection
    metric over the tasks) among seeds with saved weights for every task, and those weights' paths.

    Args:
        runs: Selected runs: ``task``, ``method``, ``seed``, ``val_amae``, ``checkpoint_path``.
        method: The method whose models grade.
        tasks: Every task that must have a model.

    Returns:
        The seed and the checkpoint path by task; ``(-1, {})`` when no seed has weights on
        this machine for every task.
    """
    complete = (
        _with_weights(runs, method, tasks)
        .groupby("seed")
        .filter(lambda g: set(g["task"]) == set(tasks))
    )
    if complete.empty:
        return -1, {}
    seed = int(_best_on_validation(complete, "seed"))
    rows = complete[complete["seed"] == seed].set_index("task")["checkpoint_path"]
    return seed, {task: str(rows[task]) for task in tasks}


def seed_checkpoints(
    runs: pd.DataFrame, method: str, tasks: list[str]
) -> dict[str, dict[int, str]]:
    """Per task, every seed's selected model of ``method`` with weights on this machine.

    Args:
        runs: Selected runs, as for `best_seed`.
        method: The method whose seeds are compared.
        tasks: The tasks to list (a task without any saved model maps to ``{}``).

    Returns:
        task -> seed -> checkpoint path, seeds in ascending order.
    """
    mine = _with_weights(runs, method, tasks).sort_values("seed")
    return {
        task: {
            int(row.seed): str(row.checkpoint_path)
            for row in mine[mine["task"] == task].itertuples(index=False)
        }
        for task in tasks
    }


def checkpoint_probabilities(checkpoint: Path | str, images: np.ndarray) -> np.ndarray:
    """P(grade) of a saved model on knee crops.

    Args:
        checkpoint: A file written by `engine.grade_model.save_checkpoint`.
        images: (N, S, S) uint8 crops at the size the model was trained on.

    Returns:
        (N, J) probabilities.
    """
    from engine.gradcam import predict
    from engine.grade_model import load_model

    return predict(load_model(Path(checkpoint)), images)


def seed_probabilities(
    checkpoints: Mapping[int, Path | str], crop: np.ndarray
) -> dict[int, np.ndarray]:
    """Each seed's model's P(grade) for one (S, S) uint8 crop: seed -> (J,)."""
    return {
        seed: checkpoint_probabilities(path, crop[None])[0] for seed, path in checkpoints.items()
    }


@dataclass(frozen=True)
class KneeToGrade:
    """The knee a demonstration grades on a whole film, and whether it is one.

    Attributes:
        box: The most confident knee's box, or None when no knee was found at all.
        confidence: The detector's confidence in it (0 when none).
        finding: `engine.films.knee_finding`'s word: "none", "low" or "found" (the rule the
            import check applies, so a film the import would leave out is not graded here).
    """

    box: Box | None
    confidence: float
    finding: str


def knee_to_grade(film: np.ndarray, detector_dir: Path | None = None) -> KneeToGrade:
    """The knee to grade on a whole film, found as imports find knees
    (`engine.films.locate_knees`): by a trained detector (``detector_dir``, an
    `engine.detect.yolo` detector folder), else the classical detector."""
    from engine.detect import CLASSICAL_DETECTOR, DetectorInfo
    from engine.films import knee_finding, locate_knees

    detector = (
        DetectorInfo(name="YOLOv8n", key=detector_dir.name, folder=str(detector_dir))
        if detector_dir is not None
        else CLASSICAL_DETECTOR
    )
    knees = locate_knees(film, detector=detector)
    if not knees:
        return KneeToGrade(None, 0.0, knee_finding(0.0, 0))
    box, confidence = max(knees, key=lambda k: k[1])
    return KneeToGrade(box, confidence, knee_finding(confidence, len(knees)))


def example_films(
    films: pd.DataFrame, n: int, task: str, *, first: str | None = None
) -> pd.DataFrame:
    """Up to ``n`` films spread over the grades of ``task``: one of each grade in turn, in
    the films' own order, so a demo shows healthy and diseased knees alike.

    Args:
        films: One row per film, with the task's grade column (e.g. ``kl``).
        n: How many to keep.
        task: The task whose grades to spread over.
        first: A boolean column of ``films``: those films are taken first (spread over the
            grades among themselves), e.g. the films every exported seed tested on.

    Films without a grade of ``task`` come last (a CPPD-only film has no KL grade).
    """
    column = task.lower()
    grades = films[column] if column in films else pd.Series(pd.NA, films.index)
    preferred = films[first].astype(bool) if first else pd.Series(True, films.index)
    order = pd.DataFrame(
        {
            "later": ~preferred,
            "ungraded": grades.isna(),
            "grade": grades.fillna(-1).astype(int),
        }
    )
    order["turn"] = order.groupby(["later", "grade"]).cumcount()
    chosen = order.sort_values(["later", "ungraded", "turn", "grade"], kind="stable").index[:n]
    return films.loc[chosen]
