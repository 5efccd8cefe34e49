"""Grade a film: show one knee radiograph to a study's models, for demonstrations.

A clinician or a visitor picks a test film of the study (whose grades are known) or uploads a
film of their own. SoftGrade finds the knee, crops it as training did, and each task's model
of the chosen method gives its grade, its probabilities and a Grad-CAM map. The models are the
selected ones of the seed where that method did best on validation.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import streamlit as st

from engine import gradcam
from engine.importing import FILM_FORMATS, decode_film
from engine.train import load_checkpoint
from engine.vocab import GRADE_SIGNS, TASKS, order_methods
from pages import _charts as charts
from pages._admin_tables import upload_size_problem
from pages._model_choice import best_seed, default_method
from pages._models import (
    OpenedStudy,
    cached_crops,
    cached_splits,
    heat_help,
    maps_of,
    open_study,
)
from pages._tables import method_title
from pages._ui import pick_study, require_page, run_inside_shell, store_path

SOURCES = ("A test film of this study", "Upload a film")


@st.cache_data(max_entries=32, show_spinner=False)
def cached_reading(
    checkpoints: tuple[tuple[str, str], ...], film: np.ndarray, image_size: int
) -> gradcam.FilmReading:
    """An uploaded film graded by one model per task (cached on the film's pixels)."""
    models = {task: load_checkpoint(Path(p))[0] for task, p in checkpoints}
    return gradcam.read_film(film, models, image_size)


def film_with_box(film: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
    """The film in RGB with the found knee outlined, to show what was graded."""
    rgb = cv2.cvtColor(film, cv2.COLOR_GRAY2RGB)
    thickness = max(2, min(film.shape) // 150)
    cv2.rectangle(rgb, box[:2], (box[2] - 1, box[3] - 1), (255, 140, 0), thickness)
    return rgb


def show_grades(crop: np.ndarray, grades: dict[str, gradcam.CamBatch], known: dict) -> None:
    """Per task: the grade given, what it means, the probabilities and the map."""
    columns = st.columns(len(grades))
    for column, (task, batch) in zip(columns, grades.items(), strict=True):
        grade = int(batch.predicted[0])
        with column:
            st.metric(
                f"{task} grade",
                f"{task} {grade}",
                border=True,
            )
            st.caption(f"{task} {grade}: {GRADE_SIGNS[task][grade]}.")
            if task in known:
                st.markdown(known[task])
            st.altair_chart(charts.grade_probabilities(batch.probs[0], task), width="stretch")
            st.image(
                gradcam.overlay(crop, batch.cams[0]),
                caption=f"Where the {task} model looked",
                width="stretch",
            )
    first = next(iter(grades.values()))
    st.caption(heat_help(first.block, crop.shape[-1]))


def known_grades(row: pd.Series, tasks: list[str]) -> dict[str, str]:
    """What the annotator recorded for a test film (and the phantom's truth where it differs)."""
    out = {}
    for task in tasks:
        recorded = row.get(task.lower())
        if pd.isna(recorded):
            out[task] = f"Annotated: no {task} grade on this film."
            continue
        text = f"Annotated: **{task} {int(recorded)}**"
        truth = row.get(f"{task.lower()}_true")
        if truth is not None and not pd.isna(truth) and int(truth) != int(recorded):
            text += f" (the phantom drew {task} {int(truth)}: annotation noise)"
        out[task] = text
    return out


def pick_models(opened: OpenedStudy) -> tuple[int, dict[str, str]]:
    """The method picker (the best on validation first chosen), then that method's best seed:
    the seed and its checkpoint by task. Stops the page when no weights are here."""
    runs = opened.runs
    tasks = [t for t in TASKS if t in set(runs["task"])]
    methods = order_methods(runs["method"])
    best = default_method(runs)
    c1, c2 = st.columns([1, 2])
    method = c1.selectbox(
        "Method",
        methods,
        index=methods.index(best),
        format_func=lambda m: method_title(m) + (" (best on validation)" if m == best else ""),
        key="demo_method",
    )
    seed, checkpoints = best_seed(runs, method, tasks)
    if not checkpoints:
        st.warning(
            f"No seed of this study has saved weights of {method_title(method)} for "
            f"{' and '.join(tasks)} on this machine, so it cannot grade a film here."
        )
        st.stop()
    c2.markdown(
        f"Models: {method_title(method)}, seed {seed} (its best on validation), trained at "
        f"{opened.spec.image_size} px."
    )
    return seed, checkpoints


def show_test_film(
    path: str, dataset_id: str, opened: OpenedStudy, seed: int, checkpoints: dict[str, str]
) -> None:
    """A test film of the seed (its models never trained on it), graded by each task's model."""
    splits = cached_splits(path, dataset_id, seed)
    meta = opened.meta
    if splits is None:
        st.info(f"Seed {seed} has no stored split yet.")
        st.stop()
    test = meta[(splits.reindex(meta["image_id"]) == "test").to_numpy()]
    number = st.number_input(
        "Test film",
        min_value=1,
        max_value=len(test),
        value=1,
        key="demo_film",
        help=f"The {len(test)} films seed {seed} kept aside for testing: its models never "
        "trained on them.",
    )
    row = test.iloc[int(number) - 1]
    crop = cached_crops(str(opened.cache_dir), (int(row.name),))[0][0]
    left, right = st.columns([1, 3])
    left.image(crop, caption=f"film {row['image_id']} (knee crop)", width="stretch")
    with right:
        grades = {task: maps_of(ckpt, crop[None]) for task, ckpt in checkpoints.items()}
        show_grades(crop, grades, known_grades(row, list(checkpoints)))  # keys: the tasks


def upload_limit_mb() -> float:
    """The largest upload accepted, in MB: Streamlit's ``server.maxUploadSize``."""
    return float(st.get_option("server.maxUploadSize"))


def show_upload(checkpoints: dict[str, str], image_size: int) -> None:
    """An uploaded film: the knee found, cropped as in training, and graded."""
    upload = st.file_uploader(
        f"A knee radiograph, anteroposterior view (DICOM, {', '.join(FILM_FORMATS)})",
        type=None,  # DICOM files often have no extension; the film's bytes decide
        key="demo_upload",
        help=f"Up to {upload_limit_mb():g} MB. The film is held in memory for this browser "
        "session only; nothing is written to disk or stored.",
    )
    if upload is None:
        st.info("Upload a film to grade it.")
        st.stop()
    # Streamlit's own cap (server.maxUploadSize, set by `up --max-upload-mb`) is enforced by
    # the browser; the page checks again so a client that skips it gets the same answer.
    if problem := upload_size_problem(upload.name, upload.size, upload_limit_mb()):
        st.error(problem, icon=":material/file_present:")
        st.stop()
    try:
        film = decode_film(upload.getvalue(), upload.name)
    except ValueError as exc:
        st.error(str(exc))
        st.stop()
    with st.spinner("Finding the knee and grading…"):
        reading = cached_reading(tuple(checkpoints.items()), film, image_size)
    left, right = st.columns([1, 3])
    left.image(
        film_with_box(film, reading.box), caption="the knee SoftGrade found", width="stretch"
    )
    left.image(reading.crop, caption="what the models saw", width="stretch")
    with right:
        show_grades(reading.crop, reading.grades, {})


run_inside_shell()
require_page("demo")
st.title("Grade a film")
st.caption(
    "Show a knee radiograph to a study's models: SoftGrade finds the knee, and each model "
    "gives its grade and shows where it looked. A research tool for demonstrations, not for "
    "diagnosis."
)

path = str(store_path())
study = pick_study(
    path,
    key="demo_study",
    empty_hint="No study has finished runs yet. Launch one from the Launch page; its models "
    "can grade films here once its first seed finishes.",
    dependent_keys=("demo_method", "demo_film"),
)
opened = open_study(path, study)
seed, checkpoints = pick_models(opened)
source = st.segmented_control("Film", SOURCES, default=SOURCES[0], required=True, key="demo_source")
if source == SOURCES[0]:
    show_test_film(path, str(study["dataset_id"]), opened, seed, checkpoints)
else:
    show_upload(checkpoints, opened.spec.image_size)
