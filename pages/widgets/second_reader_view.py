"""The Second reader page's sections: the study, task and method pickers, the ranked list,
one film with every seed's grade, its range and where the model looked, and the form that
records a second reading (`jobs.services.second_reader`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from engine import gradcam
from engine.config import SpecError, StudySpec
from engine.datasets import cache_dir_for
from engine.demo_models import default_method, seed_checkpoints
from engine.methods import order_methods
from engine.vocab import TASK_CLASSES, TASKS
from jobs.services import second_reader
from jobs.services.access import AccessDenied
from jobs.services.page_store import Account, StoreError, list_readings, softgrade_home
from pages.present import second_look_view as view
from pages.present.tables import method_title
from pages.present.user_text import plain, said
from pages.widgets.models import cached_crops, cached_dataset, cached_selected_runs, maps_of
from pages.widgets.reads import RESULTS_TTL_S

#: Said where a study names no dataset (results imported from another tool).
NO_DATASET = (
    "This study names no dataset of films (its results were imported), so a second reading "
    "has no film to stand beside; the list above still ranks its films."
)


@st.cache_data(ttl=RESULTS_TTL_S, show_spinner="Ranking the films…")
def cached_ranked(path: str, study_id: str, task: str, method: str) -> pd.DataFrame:
    """`second_reader.ranked_films` of one study, task and method."""
    return second_reader.ranked_films(study_id, task, method, path=path)


def pick_task_and_method(path: str, study_id: str) -> tuple[str, str, pd.DataFrame]:
    """The task and method to rank (the study's best method on validation first)."""
    runs = cached_selected_runs(path, study_id)
    if runs.empty:
        st.info("This study has no finished runs yet.")
        st.stop()
    tasks = [t for t in TASKS if t in set(runs["task"])]
    methods = order_methods(runs["method"])
    best = default_method(runs)
    left, right = st.columns(2)
    task = str(left.selectbox("Task", tasks, key="second_task"))
    method = str(
        right.selectbox(
            "Method",
            methods,
            index=methods.index(best),
            key="second_method",
            format_func=lambda m: method_title(m) + (" (the study's best)" if m == best else ""),
        )
    )
    return task, method, runs


def film_crop(study: pd.Series, image_id: str) -> np.ndarray | None:
    """The film's knee crop from the study's prepared images, or None when they are not on
    this machine (imported results, or a cache not built here)."""
    try:
        spec = StudySpec.from_dict(json.loads(study["spec"]))
        cache_dir = cache_dir_for(spec.dataset, spec.image_size, softgrade_home() / "cache")
        meta, _ = cached_dataset(str(cache_dir))
    except (SpecError, ValueError, KeyError, TypeError):
        return None
    rows = np.flatnonzero(meta["image_id"].astype(str).to_numpy() == image_id)
    if rows.size == 0:
        return None
    return cached_crops(str(cache_dir), (int(rows[0]),))[0][0]


def show_film(row: pd.Series, crop: np.ndarray | None, checkpoint: str | None, task: str) -> None:
    """One film: its crop and where the model looked, the seeds' grades and the range."""
    left, middle, right = st.columns([1, 1, 2])
    if crop is None:
        left.caption("This film's image is not on this machine.")
    else:
        left.image(crop, caption="knee crop", width="stretch")
        if checkpoint is not None:
            try:
                cams = maps_of(checkpoint, crop[None]).cams[0]
                middle.image(gradcam.overlay(crop, cams), caption="where the model looked")
            except (OSError, RuntimeError, ValueError):
                middle.caption("Where the model looked cannot be drawn here.")
    right.markdown(f"**Recorded:** {task} {int(row['label'])}")
    right.markdown(f"**Models' grade:** {task} {int(row['consensus'])}")
    right.markdown(
        f"**Likely range (90 %):** {view.range_text(row['range_lo'], row['range_hi'], task)}"
    )
    right.text(view.seed_grades_text(row["seed_grades"], task))  # plain text


def reading_form(
    path: Path,
    account: Account | None,
    study: pd.Series,
    task: str,
    row: pd.Series,
) -> None:
    """Record a second reading of the film (stored beside its label, audit-logged)."""
    if pd.isna(study["dataset_id"]):
        st.info(NO_DATASET)
        return
    with st.form("second_reading_form", clear_on_submit=True):
        grade = st.radio(
            f"Your {task} grade",
            list(range(TASK_CLASSES[task])),
            format_func=lambda g: f"{task} {g}",
            horizontal=True,
            key="second_grade",
        )
        note = st.text_input("Note (optional)", key="second_note", max_chars=500)
        if not st.form_submit_button("Record second reading"):
            return
    try:
        second_reader.record_second_reading(
            account,
            str(study["dataset_id"]),
            str(row["image_id"]),
            task,
            int(grade),
            recorded=int(row["label"]),
            study_id=str(study.name),
            note=note,
            path=path,
        )
    except (AccessDenied, ValueError, StoreError) as exc:
        st.error(said(exc))
        return
    st.success(f"Recorded: {task} {int(grade)} for film {plain(row['image_id'])}.")


def readings_section(path: Path, dataset_id: object) -> None:
    """The dataset's readings so far, and their export."""
    if pd.isna(dataset_id):
        return
    dataset_id = str(dataset_id)
    readings = list_readings(dataset_id, path=path)
    st.subheader("Second readings of this dataset")
    if readings.empty:
        st.caption("None yet.")
        return
    st.dataframe(readings, hide_index=True)
    try:
        export = second_reader.readings_export(dataset_id, path=path)
    except (ValueError, OSError) as exc:
        st.error(f"The readings cannot be exported: {said(exc)}")
        return
    st.caption(plain(export.note))
    st.download_button(
        "Readings as CSV", export.text, export.file_name, "text/csv", key="second_download"
    )


def best_checkpoint(runs: pd.DataFrame, task: str, method: str) -> str | None:
    """A selected model of the task and method with weights here (the lowest seed), or None."""
    by_seed = seed_checkpoints(runs, method, [task]).get(task, {})
    return by_seed[min(by_seed)] if by_seed else None
