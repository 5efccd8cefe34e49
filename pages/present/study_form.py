"""The Launch page's study form without its widgets: presets as widget values, checking a
study, the request id that makes a submit happen once, and the run count and rough time.

No streamlit, so it is unit-tested.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from engine.config import SpecError, StudySpec
from engine.methods import (
    FAMILIES,
    Method,
    MethodParams,
    grid_size,
    method_label,
    methods_by_family,
    order_methods,
)
from engine.phantom import PhantomSpec
from engine.pruning import NO_PRUNER, PRUNERS, SearchSpec
from engine.study import plan_runs
from engine.study_settings import FACTORIAL_SIZE, PHANTOM_DEFAULTS, PHANTOM_SIZE, TRAINING_NUMBERS
from engine.vocab import TOP_GRADE, TRAIN_FRACTION
from jobs.services.run_costs import CostModel, cost_model, is_gpu_name, latest_device
from pages.present.estimates import rough_study_seconds, startup_seconds
from pages.present.formatting import format_duration

PHANTOM = "phantom"
FOLDER = "folder"
DEVICES = ("auto", "cpu", "cuda")
TASK_LABELS = {task: f"{task} (grades 0–{top})" for task, top in TOP_GRADE.items()}
PRESETS = {
    "quick": ("Quick look", "CPU, a few minutes: small phantom, 32 px, few epochs"),
    "paper": ("Paper protocol", "GPU, hours: 20 seeds, budget 15, 100 epochs, 224 px"),
    "ordinal-survey": (
        "Ordinal methods survey",
        "GPU: every registered method on the paper's protocol",
    ),
}
#: The Launch page's pruner choices (``successive_halving`` is asha's other name: one entry).
PRUNER_CHOICES: tuple[str, ...] = tuple(
    name for name in PRUNERS if name not in (NO_PRUNER, "successive_halving")
)
#: What a pruned search does, for a lab member deciding whether to switch it on.
PRUNING_HELP = (
    "Every configuration of a search reports its validation AMAE after each epoch. At fixed "
    "epochs, configurations already behind the others are stopped, so the study costs less "
    "GPU time. A stopped configuration is kept (marked as pruned, with the epochs it trained) "
    "but never selected. The selected configuration can differ from a full search's, and "
    "which ones are stopped depends on which finished first, so the paper's protocol "
    "(switch off) trains every configuration to the end."
)


def pruning_budget_note(budget: int) -> str | None:
    """What the Launch page says beside the pruned-search switch when the search has nothing
    to prune (one configuration per method); None otherwise."""
    if budget > 1:
        return None
    return (
        "With a search budget of 1, each method trains one configuration: there is nothing "
        "to prune, so this study costs what the full search does. Raise the search budget "
        "for pruning to save time."
    )


def pruner_label(name: str) -> str:
    """A pruner as the Launch page offers it: its name and what it does."""
    return f"{name}: {PRUNERS[name]}"


def search_values(study: Mapping[str, Any]) -> dict[str, Any]:
    """The pruning switch and pruner widget values for ``study`` (a spec mapping)."""
    search = SearchSpec.from_value(study.get("search"))
    pruner = "asha" if search.pruner == "successive_halving" else search.pruner
    return {
        "launch_prune": search.pruned,
        "launch_pruner": pruner if pruner in PRUNER_CHOICES else PRUNER_CHOICES[0],
    }


def pruning_text(spec: StudySpec) -> str | None:
    """The check's sentence on a pruned search (None for the full search)."""
    if not spec.search.pruned:
        return None
    # The estimate below prices every configuration to its end, whether it comes from this
    # lab's measured runs or the rough model: say so in the same words either way (issue 39:
    # "less than the rough time below" sat above an "Expected time" from measured runs, and
    # above a budget of 1, where nothing is pruned).
    if pruning_budget_note(spec.budget) is not None:
        return (
            f"Search {spec.search.describe(spec.max_epochs)}. With one configuration per "
            "method there is nothing to prune: the time below is the study's."
        )
    return (
        f"Search {spec.search.describe(spec.max_epochs)}. Configurations that have already "
        "lost stop early and are never selected, so the study usually takes less than the "
        "time below, which prices every configuration to its end."
    )


# Matrices shown with these parameters; the search also tries eta 0.8 (20 % one-hot).
SHOWN_PARAMS = MethodParams(lr=1e-3, eta=1.0, alpha2=0.05, p=1.0)


def shown_params(method: Method) -> MethodParams:
    """The configuration a method's target matrix is drawn with on the Launch page:
    `SHOWN_PARAMS` where the method has that parameter, else its grid's first value."""
    return MethodParams(
        **{h.name: SHOWN_PARAMS.get(h.name, h.values[0]) for h in method.hyperparameters}
    )


def family_key(family: str) -> str:
    """The Launch page's widget key of one method family's picker."""
    return "launch_methods_" + family.replace(" ", "_")


def method_widget_values(methods: list[str]) -> dict[str, list[str]]:
    """The family pickers' values (by key) that show ``methods``: every family's key, each
    with its chosen methods in registry order; a name this checkout does not know is
    dropped (the form offers only registered methods)."""
    chosen = set(methods)
    values: dict[str, list[str]] = {family_key(f): [] for f in FAMILIES}
    for family, members in methods_by_family().items():
        values[family_key(family)] = [m.name for m in members if m.name in chosen]
    return values


def chosen_methods(values: Mapping[str, list[str]]) -> list[str]:
    """The methods picked over every family's picker, in display order."""
    return order_methods(m for f in FAMILIES for m in values.get(family_key(f)) or [])


#: Reads a folder's labels CSV (folder, labels CSV) and checks the films it lists.
FolderReader = Callable[[str, str], pd.DataFrame]


def preset_values(study: Mapping[str, Any]) -> dict[str, Any]:
    """Widget values (by key) that show ``study`` (a ``StudySpec.to_dict`` mapping)."""
    dataset = dict(study["dataset"])
    values = {
        "launch_name": study["name"],
        "launch_tasks": list(study["tasks"]),
        **method_widget_values(list(study["methods"])),
        **seed_widget_values(study),
        **{f"launch_{s.field}": study[s.key] for s in TRAINING_NUMBERS},
        "launch_device": study["device"] if study["device"] in DEVICES else "auto",
        **search_values(study),
    }
    if dataset.pop("kind", PHANTOM) == PHANTOM:
        values["launch_dataset"] = PHANTOM
        for setting in PHANTOM_SIZE:
            default = PHANTOM_DEFAULTS[setting.key]
            values[f"launch_{setting.field}"] = int(dataset.get(setting.key, default))
    return values


#: The Launch page's two ways of drawing seeds (`engine.seeds`).
INDEPENDENT = "independent"
FACTORIAL = "factorial"
SEED_DESIGNS: dict[str, str] = {
    INDEPENDENT: "independent",
    FACTORIAL: "splits × inits",
}
#: What the splits × inits inputs start from when a study has independent seeds.
DEFAULT_SPLITS, DEFAULT_INITS = 10, 2
#: The fewest splits and inits a factorial design separates variances with.
MIN_FACTORIAL = min(s.low for s in FACTORIAL_SIZE)


def factorial_for(seeds: int) -> tuple[int, int]:
    """Splits × inits close to ``seeds`` independent seeds: 2 inits per split and as many
    splits as make up the count (at least 2 × 2), so switching the design keeps the
    study's size instead of jumping to a preset's (issue 39: 2 seeds became 20 silently)."""
    splits = max(MIN_FACTORIAL, math.ceil(max(int(seeds), 1) / DEFAULT_INITS))
    return splits, DEFAULT_INITS


def seed_widget_values(study: Mapping[str, Any]) -> dict[str, Any]:
    """The seed inputs' values (by key) that show ``study``'s seeds: a count, or its
    factorial design (``seed_design`` of a stored spec)."""
    design = study.get("seed_design")
    if design:
        return {
            "launch_seed_design": FACTORIAL,
            "launch_seeds": len(study["seeds"]),
            "launch_splits": int(design["splits"]),
            "launch_inits": int(design["inits"]),
        }
    splits, inits = factorial_for(len(study["seeds"]))
    return {
        "launch_seed_design": INDEPENDENT,
        "launch_seeds": len(study["seeds"]),
        "launch_splits": splits,
        "launch_inits": inits,
    }


def seeds_text(spec: StudySpec) -> str:
    """``"20 seed(s)"`` or ``"10 splits × 2 inits (20 seeds)"``: the study's seeds in the
    Launch page's count of runs."""
    design = spec.seed_design
    if design is None:
        return f"{len(spec.seeds)} seed(s)"
    return f"{design.splits} splits × {design.inits} inits ({len(spec.seeds)} seeds)"


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
    dataset = raw.get("dataset") or {}
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
            check_split_sizes(table, spec.split_seeds, spec.tasks)
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


def configurations_text(spec: StudySpec) -> str:
    """How many configurations each method searches per (task, seed): the budget, or its
    whole grid where that is smaller ("configurations 15 for Triangular, …; 3 for Nominal, …")."""
    by_count: dict[int, list[str]] = {}
    for method in spec.methods:
        by_count.setdefault(min(spec.budget, grid_size(method)), []).append(method_label(method))
    parts = [f"{n} for {', '.join(names)}" for n, names in sorted(by_count.items(), reverse=True)]
    if len(parts) == 1:
        n = next(iter(by_count))
        return f"{n} configuration{'s' * (n != 1)} each"
    return "configurations " + "; ".join(parts)


def _seconds(
    spec: StudySpec,
    runs_per_task: Mapping[str, int],
    images_per_task: Mapping[str, int],
    device: str,
) -> float:
    """`rough_study_seconds` of ``spec`` on one CPU slot or one GPU."""
    train_images = {
        t: round(n * TRAIN_FRACTION) for t, n in images_per_task.items() if t in spec.tasks
    }
    return rough_study_seconds(
        train_images,
        runs_per_task,
        max_epochs=spec.max_epochs,
        image_size=spec.image_size,
        device=device,
    )


def preset_gpu_seconds(study: Mapping[str, Any]) -> float | None:
    """A GPU preset's rough time on one GPU (every run to its epoch cap), from its phantom's
    size; None for a CPU preset or a dataset whose size is not in the file."""
    spec = StudySpec.from_dict(dict(study))
    params = spec.dataset.params
    if spec.device == "cpu" or spec.dataset.kind != PHANTOM or "n_images" not in params:
        return None
    images = {"KL": int(params.get("n_joint", 0)), "CPPD": int(params["n_images"])}
    return _seconds(spec, study_size(spec)[1], images, "cuda")


def preset_gpu_text(study: Mapping[str, Any]) -> str | None:
    """`preset_gpu_seconds` in words ("about 7 h 21 min on one GPU"), or None."""
    seconds = preset_gpu_seconds(study)
    return None if seconds is None else f"about {format_duration(seconds)} on one GPU"


def rough_time_text(
    spec: StudySpec, runs_per_task: Mapping[str, int], images_per_task: Mapping[str, int]
) -> str:
    """The rough training time on the study's device, in words ("about 3 min 05 s on …").

    Args:
        spec: The checked study.
        runs_per_task: Task → runs of the study's plan (`study_size`).
        images_per_task: Task → images graded for it in the dataset (all splits).
    """
    guesses = {d: _seconds(spec, runs_per_task, images_per_task, d) for d in ("cpu", "cuda")}
    return {
        "cpu": f"about {format_duration(guesses['cpu'])} on one CPU slot",
        "cuda": f"about {format_duration(guesses['cuda'])} on one GPU",
        "auto": f"about {format_duration(guesses['cuda'])} on a GPU, "
        f"{format_duration(guesses['cpu'])} on a CPU",
    }[spec.device]


@dataclass(frozen=True)
class SeedCost:
    """What one more seed of a study costs: ``hours`` of ``unit`` (issue 39: a CPU study was
    priced in GPU hours)."""

    hours: float
    unit: str  # "GPU hours" or "CPU-slot hours"


def hours_per_seed(
    spec: StudySpec, runs_per_task: Mapping[str, int], images_per_task: Mapping[str, int]
) -> SeedCost:
    """The rough hours one seed of this study takes on the device it asks for
    (`rough_study_seconds` divided by the seeds): GPU hours for ``cuda`` and ``auto`` (a GPU
    when there is one), CPU-slot hours for ``cpu``."""
    device = "cpu" if spec.device == "cpu" else "cuda"
    seconds = _seconds(spec, runs_per_task, images_per_task, device)
    unit = "CPU-slot hours" if device == "cpu" else "GPU hours"
    return SeedCost(seconds / max(len(spec.seeds), 1) / 3600, unit)


def _measured_seconds(
    spec: StudySpec, model: CostModel, train_images: Mapping[str, int], *, all_epochs: bool
) -> float:
    """The study's time on ``model``'s device: every planned run's expected device-seconds."""
    plan = plan_runs(spec, "preview", "cpu")
    device = "cuda" if is_gpu_name(model.device_name) else "cpu"
    return startup_seconds(device) + sum(
        model.run_seconds(
            r.task, r.method, train_images.get(r.task, 0), spec.max_epochs, all_epochs=all_epochs
        )
        for r in plan
    )


def measured_time_text(
    spec: StudySpec, images_per_task: Mapping[str, int], measured: pd.DataFrame
) -> str | None:
    """The study's time from the runs measured here on the device it would train on (the
    newest GPU, or CPU, that trained a run at its image and batch size), in words; None when
    none was measured there, so the rough guess stands.

    Args:
        spec: The checked study.
        images_per_task: Task -> images graded for it in the dataset (all splits).
        measured: `store.costs.run_costs`.
    """
    train_images = {t: round(n * TRAIN_FRACTION) for t, n in images_per_task.items()}
    kinds = {"cpu": (False,), "cuda": (True,), "auto": (True, False)}[spec.device]
    parts = []
    for gpu in kinds:
        device = latest_device(measured, gpu=gpu)
        model = device and cost_model(
            measured, device, image_size=spec.image_size, batch_size=spec.batch_size
        )
        if not model:
            continue
        typical = _measured_seconds(spec, model, train_images, all_epochs=False)
        upper = _measured_seconds(spec, model, train_images, all_epochs=True)
        parts.append(
            f"about {format_duration(typical)} on one {model.device_name}, at most "
            f"{format_duration(upper)} if every run used all its epochs (from {model.runs} "
            f"run{'s' * (model.runs != 1)} measured on it here)"
        )
    return "; ".join(parts) or None
