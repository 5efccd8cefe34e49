"""The Launch page's study form without its widgets: presets as widget values, checking a
study, the request id that makes a submit happen once, and the run count and rough time.

No streamlit, so it is unit-tested.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from engine.config import SpecError, StudySpec
from engine.methods import Method, MethodParams
from engine.phantom import PhantomSpec
from engine.study import plan_runs
from engine.vocab import TOP_GRADE, TRAIN_FRACTION
from pages.present.estimates import rough_study_seconds
from pages.present.formatting import format_duration

PHANTOM = "phantom"
FOLDER = "folder"
DEVICES = ("auto", "cpu", "cuda")
TASK_LABELS = {task: f"{task} (grades 0–{top})" for task, top in TOP_GRADE.items()}
PRESETS = {
    "quick": ("Quick look", "CPU, a few minutes: small phantom, 32 px, few epochs"),
    "paper": ("Paper protocol", "GPU, hours: 20 seeds, budget 15, 100 epochs, 224 px"),
}
# Matrices shown with these parameters; the search also tries eta 0.8 (20 % one-hot).
SHOWN_PARAMS = MethodParams(lr=1e-3, eta=1.0, alpha2=0.05, p=1.0)


def shown_params(method: Method) -> MethodParams:
    """The configuration a method's target matrix is drawn with on the Launch page:
    `SHOWN_PARAMS` where the method has that parameter, else its grid's first value."""
    return MethodParams(
        **{h.name: SHOWN_PARAMS.get(h.name, h.values[0]) for h in method.hyperparameters}
    )


#: Reads a folder's labels CSV (folder, labels CSV) and checks the films it lists.
FolderReader = Callable[[str, str], pd.DataFrame]


def preset_values(study: Mapping[str, Any]) -> dict[str, Any]:
    """Widget values (by key) that show ``study`` (a ``StudySpec.to_dict`` mapping)."""
    dataset = dict(study["dataset"])
    values = {
        "launch_name": study["name"],
        "launch_tasks": list(study["tasks"]),
        "launch_methods": list(study["methods"]),
        "launch_seeds": len(study["seeds"]),
        "launch_budget": study["budget"],
        "launch_max_epochs": study["max_epochs"],
        "launch_patience": study["patience"],
        "launch_image_size": study["image_size"],
        "launch_batch_size": study["batch_size"],
        "launch_device": study["device"] if study["device"] in DEVICES else "auto",
    }
    if dataset.pop("kind", PHANTOM) == PHANTOM:
        values["launch_dataset"] = PHANTOM
        values["launch_n_images"] = int(dataset.get("n_images", 2170))
        values["launch_n_joint"] = int(dataset.get("n_joint", 970))
        values["launch_phantom_seed"] = int(dataset.get("seed", 0))
    return values


def request_id_for(form_id: str, study: Mapping[str, Any]) -> str:
    """Same form and same study → same request id → the same job."""
    digest = hashlib.sha1(json.dumps(study, sort_keys=True).encode()).hexdigest()[:12]
    return f"launch-{form_id}-{digest}"


def read_folder_labels(folder: str, labels_csv: str) -> pd.DataFrame:
    """A folder's labels CSV, after checking every row and that every listed film exists
    (ValueError names the first problem)."""
    from engine.films import read_labels

    return read_labels(Path(folder).expanduser(), Path(labels_csv).expanduser())


def check_study(
    raw: dict[str, Any], *, importing: bool = False, read_folder: FolderReader = read_folder_labels
) -> StudySpec:
    """Validate a study mapping; SpecError says which value is refused and why.

    Args:
        raw: The form's study, in the shape of a study file.
        importing: The dataset is a folder typed into the form, so its labels CSV and films
            are checked too (a registered dataset was checked when it was first prepared).
        read_folder: Reads the folder's labels (the page passes a cached reader).
    """
    dataset = raw.get("dataset")
    if importing:
        for field, what in (("path", "the folder of films"), ("labels_csv", "the labels CSV")):
            if not str(dataset.get(field) or "").strip():
                raise SpecError(f"dataset.{field}: give the path of {what} on this machine")
    spec = StudySpec.from_dict(raw)
    if importing:
        from engine.datasets import check_split_sizes  # imports torch: only when importing

        try:
            table = read_folder(
                str(spec.dataset.params["path"]), str(spec.dataset.params["labels_csv"])
            )
            check_split_sizes(table, spec.seeds, spec.tasks)
        except ValueError as exc:
            raise SpecError(str(exc)) from exc
    if spec.dataset.kind == PHANTOM:
        try:
            PhantomSpec(**spec.dataset.params)
        except (TypeError, ValueError) as exc:
            raise SpecError(f"dataset (phantom): {exc}") from exc
    return spec


def study_size(spec: StudySpec) -> tuple[int, dict[str, int]]:
    """How many runs the study makes, in all and per task."""
    plan = plan_runs(spec, "preview", "cpu")
    return len(plan), {task: sum(r.task == task for r in plan) for task in spec.tasks}


def rough_time_text(
    spec: StudySpec, runs_per_task: Mapping[str, int], images_per_task: Mapping[str, int]
) -> str:
    """The rough training time on the study's device, in words ("about 3 min 05 s on …").

    Args:
        spec: The checked study.
        runs_per_task: Task → runs of the study's plan (`study_size`).
        images_per_task: Task → images graded for it in the dataset (all splits).
    """
    train_images = {
        t: round(n * TRAIN_FRACTION) for t, n in images_per_task.items() if t in spec.tasks
    }
    guesses = {
        d: rough_study_seconds(
            train_images,
            runs_per_task,
            max_epochs=spec.max_epochs,
            image_size=spec.image_size,
            device=d,
        )
        for d in ("cpu", "cuda")
    }
    return {
        "cpu": f"about {format_duration(guesses['cpu'])} on one CPU slot",
        "cuda": f"about {format_duration(guesses['cuda'])} on one GPU",
        "auto": f"about {format_duration(guesses['cuda'])} on a GPU, "
        f"{format_duration(guesses['cpu'])} on a CPU",
    }[spec.device]


def gpu_hours_per_seed(
    spec: StudySpec, runs_per_task: Mapping[str, int], images_per_task: Mapping[str, int]
) -> float:
    """The rough GPU hours one seed of this study takes (`rough_study_seconds` on one GPU,
    divided by the seeds): what each extra seed costs."""
    train_images = {
        t: round(n * TRAIN_FRACTION) for t, n in images_per_task.items() if t in spec.tasks
    }
    seconds = rough_study_seconds(
        train_images,
        runs_per_task,
        max_epochs=spec.max_epochs,
        image_size=spec.image_size,
        device="cuda",
    )
    return seconds / max(len(spec.seeds), 1) / 3600
