"""What the Attention and Grade-a-film pages share: a study's saved models, its cached films
and their Grad-CAM maps, each read once and cached."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from engine import gradcam
from engine.config import SpecError, StudySpec
from engine.datasets import cache_dir_for, load_masks, open_prepared
from engine.demo_models import checkpoint_probabilities
from engine.grade_model import load_model
from jobs.services.page_store import StoreError, list_runs, load_splits, softgrade_home
from pages.present.imported_text import NO_MODELS_HERE, is_imported_results
from pages.present.tables import method_title
from pages.present.user_text import plain, said
from pages.widgets.reads import RESULTS_TTL_S, cached_studies

HEAT_HELP = (
    "Colours show Grad-CAM heat: red where the film pushed the model hardest towards the grade "
    "it gave, blue where it did not matter. Each map is scaled to its own maximum."
)


def heat_help(block: str, image_size: int) -> str:
    """The colour key, and which ResNet18 block the maps come from (and why, if not the last)."""
    if block == "layer4":
        return f"{HEAT_HELP} Maps from ResNet18's last block (layer4)."
    return (
        f"{HEAT_HELP} Maps from ResNet18's {block}: at {image_size} px the last block's map "
        "would be too coarse (under 4 cells a side); studies at 128 px and up use the last block."
    )


@st.cache_data(ttl=RESULTS_TTL_S, show_spinner=False)
def cached_selected_runs(path: str, study_id: str) -> pd.DataFrame:
    """The selected run of every (task, method, seed) of one study."""
    return list_runs([study_id], selected_only=True, path=path)


@st.cache_data(ttl=RESULTS_TTL_S, show_spinner=False)
def cached_splits(path: str, dataset_id: str, seed: int) -> pd.Series | None:
    """Which images a seed trained, validated and tested on."""
    return load_splits(dataset_id, seed, path=path)


@st.cache_data(max_entries=8, show_spinner=False)
def cached_dataset(cache_dir: str) -> tuple[pd.DataFrame, bool]:
    """The cached dataset's meta rows, and whether it has lesion masks (the phantom)."""
    prepared = open_prepared(Path(cache_dir))
    return prepared.meta, load_masks(Path(cache_dir)) is not None


@st.cache_data(max_entries=64, show_spinner=False)
def cached_crops(cache_dir: str, rows: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray | None]:
    """Crops (and lesion masks, where the dataset has them) of some cached images."""
    prepared = open_prepared(Path(cache_dir))
    masks = load_masks(Path(cache_dir))
    index = list(rows)
    return (
        np.asarray(prepared.images[index]),
        None if masks is None else np.asarray(masks[index]),
    )


@st.cache_data(max_entries=128, show_spinner=False)
def cached_maps(checkpoint: str, modified: float, images: np.ndarray) -> gradcam.CamBatch:
    """Grad-CAM maps of one saved model (``modified`` keys the cache on the file's version)."""
    return gradcam.grad_cam(load_model(Path(checkpoint)), images)


def saved_models(runs: pd.DataFrame, task: str, seed: int, methods: list[str]) -> dict[str, str]:
    """Checkpoint of each method's selected model; warns about the ones not on this machine."""
    found, missing = {}, []
    for method in methods:
        rows = runs[(runs["task"] == task) & (runs["seed"] == seed) & (runs["method"] == method)]
        ckpt = rows["checkpoint_path"].iloc[0] if len(rows) else None
        if isinstance(ckpt, str) and Path(ckpt).is_file():
            found[method] = ckpt
        else:
            missing.append(method_title(method))
    if missing:
        st.warning(
            f"The weights of {', '.join(missing)} (seed {seed}, {task}) are not on this "
            "machine, so no map can be drawn for them. Models trained on other machines "
            "(a Ray cluster) keep their weights there."
        )
    return found


@st.cache_data(max_entries=128, show_spinner=False)
def cached_probs(checkpoint: str, modified: float, images: np.ndarray) -> np.ndarray:
    """Grade probabilities of one saved model on some crops (forward only)."""
    return checkpoint_probabilities(checkpoint, images)


def probs_of(checkpoint: str, images: np.ndarray) -> np.ndarray:
    """Cached probabilities of a checkpoint, re-made when the file changes."""
    return cached_probs(checkpoint, Path(checkpoint).stat().st_mtime, images)


def maps_of(checkpoint: str, images: np.ndarray) -> gradcam.CamBatch:
    """Cached maps of a checkpoint, re-made when the file changes."""
    return cached_maps(checkpoint, Path(checkpoint).stat().st_mtime, images)


# Training a study that can grade films, in plain words (the Launch page's "Quick look").
TRAIN_ONE = (
    "To grade films, train a study: on the Launch page pick the preset “Quick look” (a few "
    "minutes on a CPU), or run `python -m jobs run engine/studies/quick.yaml`."
)


@dataclass(frozen=True)
class OpenedStudy:
    """A study's spec, its selected runs and its cached dataset on this machine."""

    spec: StudySpec
    runs: pd.DataFrame
    cache_dir: Path
    meta: pd.DataFrame
    has_masks: bool


def open_study(path: str, study: pd.Series, *, offer_others: bool = True) -> OpenedStudy:
    """Read a study's spec, selected runs and prepared images; stops the page with the reason
    when the study holds imported results (no models at all), when one of them cannot be read
    here, or when the study's models are not on this machine
    (`stop_without_models`, unless ``offer_others`` is off: said before the images, which
    only models could use)."""
    # Imported results have scores but no models and a spec no trainer could read.
    if is_imported_results(study["spec"]):
        st.info(NO_MODELS_HERE)
        st.stop()
    try:
        spec = StudySpec.from_dict(json.loads(study["spec"]))
        runs = cached_selected_runs(path, study.name)
    except (SpecError, StoreError) as exc:
        st.error(f"This study cannot be read: {said(exc)}")
        st.stop()
    if offer_others:
        stop_without_models(path, study)
    cache_dir = cache_dir_for(spec.dataset, spec.image_size, softgrade_home() / "cache")
    try:
        meta, has_masks = cached_dataset(str(cache_dir))
    except ValueError:
        st.info(
            "The prepared images of this study's dataset are not on this machine "
            f"({plain(cache_dir)}). They are rebuilt when a study on this dataset runs here."
        )
        st.stop()
    return OpenedStudy(spec, runs, cache_dir, meta, has_masks)


def _has_models(path: str, study_id: str) -> bool:
    """Whether any selected run of the study has its weights on this machine."""
    runs = cached_selected_runs(path, study_id)
    paths = runs.get("checkpoint_path", [])
    return any(isinstance(p, str) and Path(p).is_file() for p in paths)


def stop_without_models(path: str, study: pd.Series) -> None:
    """Stop the page, naming the studies that have models or how to train one, when a
    study's models are not on this machine (the bundled reference study ships its results,
    not its models)."""
    if _has_models(path, str(study.name)):
        return
    others = [
        str(row["name"])
        for _, row in cached_studies(path).iterrows()
        if int(row["runs_selected"]) > 0 and _has_models(path, str(row["study_id"]))
    ]
    offer = (
        f"Pick one that has: {', '.join(f'“{plain(name)}”' for name in others)}."
        if others
        else TRAIN_ONE
    )
    st.info(
        "This study's trained models are not on this machine, so they cannot grade a film or "
        "show where they look (the bundled reference study ships its results, not its "
        f"models). {offer}",
        icon=":material/model_training:",
    )
    st.stop()
