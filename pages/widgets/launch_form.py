"""The Launch page's form widgets and state: presets, the form instance id, the dataset
picker and the training settings (the methods: ``pages/widgets/launch_methods.py``). The
checking and counting behind them is in ``pages/present/study_form.py``.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from engine.analysis.paired import BASELINE
from engine.config import SpecError, StudySpec
from engine.study_settings import (
    FACTORIAL_SIZE,
    PHANTOM_SIZE,
    SEED_COUNT,
    TRAINING_NUMBERS,
    WholeSetting,
)
from jobs.services import lab
from jobs.services.access import AccessDenied
from jobs.services.page_store import StoreError
from jobs.services.review import REVIEW_PARAM, reviewed_spec
from pages.present.study_form import (
    DEVICES,
    FACTORIAL,
    FOLDER,
    INDEPENDENT,
    PHANTOM,
    PRESETS,
    PRUNER_CHOICES,
    PRUNING_HELP,
    SEED_DESIGNS,
    factorial_for,
    method_widget_values,
    preset_gpu_text,
    preset_values,
    pruner_label,
    pruning_budget_note,
    read_folder_labels,
)
from pages.widgets.import_form import import_dataset
from pages.widgets.inputs import labelled_choice
from pages.widgets.label_version_view import older_versions, pick_label_version, versions_of
from pages.widgets.reads import cached_datasets, cached_jobs, clear_job_caches, load_preset
from pages.widgets.sign_in import client_address, current_account

FORM_ID_KEY = "launch_form_id"
LAST_KEY = "launch_last"


# -- form state ------------------------------------------------------------------------------


def apply_preset(name: str) -> None:
    """Fill the form from ``engine/studies/<name>.yaml`` (a button callback)."""
    try:
        st.session_state.update(preset_values(load_preset(name)))
    except SpecError as exc:
        st.session_state["launch_preset_error"] = f"The {name!r} preset cannot be read: {exc}"


def init_form() -> None:
    """First visit: start from the quick preset (only keys not set yet)."""
    if "launch_name" in st.session_state:
        return
    try:
        values = preset_values(load_preset("quick"))
    except SpecError:
        values = {
            "launch_name": "study",
            "launch_tasks": ["KL"],
            **method_widget_values([BASELINE]),
        }
    for key, value in values.items():
        st.session_state.setdefault(key, value)


def form_id() -> str:
    """This form instance's id, from the session, else the URL (a refresh), else new."""
    fid = st.session_state.get(FORM_ID_KEY) or st.query_params.get("launch_form")
    if not fid:
        fid = uuid.uuid4().hex[:12]
    st.session_state[FORM_ID_KEY] = fid
    if st.query_params.get("launch_form") != fid:
        st.query_params["launch_form"] = fid
    return fid


def new_form() -> None:
    """Start a new form instance, so the same study may be queued once more."""
    st.session_state[FORM_ID_KEY] = uuid.uuid4().hex[:12]
    st.session_state.pop(LAST_KEY, None)


@st.cache_data(ttl=30, show_spinner=False, max_entries=8)
def folder_labels(folder: str, labels_csv: str) -> pd.DataFrame:
    """A folder's labels CSV, checked (cached: the page reruns on every keystroke)."""
    return read_folder_labels(folder, labels_csv)


def registered_datasets(path: Path) -> dict[str, Any]:
    """The store's datasets by id (rows of ``list_datasets``); none, with a warning, when the
    store cannot be read."""
    try:
        datasets = cached_datasets(str(path))
    except StoreError as exc:
        st.warning(f"Registered datasets cannot be read right now ({exc}); the phantom is offered.")
        datasets = pd.DataFrame(columns=["dataset_id", "kind", "spec_key", "params", "n_images"])
    return {row.dataset_id: row for row in datasets.itertuples()}


def enqueue(spec: StudySpec, request_id: str, path: Path) -> None:
    """Enqueue the study (the store returns the job already made for this request id)."""
    try:
        clear_job_caches()
        known = set(cached_jobs(str(path))["job_id"])
        account = current_account()
        if account is None:
            raise AccessDenied("sign in again: the session has ended")
        # Through jobs.services.lab so the role is checked and the study records who launched it.
        job_id = lab.launch_study(
            account, spec.to_dict(), request_id=request_id, client=client_address(), path=path
        )
    except (StoreError, AccessDenied) as exc:
        st.error(f"The study could not be queued: {exc}")
        return
    clear_job_caches()
    st.session_state[LAST_KEY] = {
        "request_id": request_id,
        "job_id": job_id,
        "new": job_id not in known,
    }
    st.rerun()  # draw the page again: button disabled, job shown, sidebar counts updated


@st.cache_data(ttl=300, show_spinner=False)
def preset_time(name: str) -> str | None:
    """A GPU preset's rough time on one GPU, or None (a CPU preset, or it cannot be read:
    its button says why when pressed)."""
    try:
        return preset_gpu_text(load_preset(name))
    except SpecError:
        return None


# -- widgets ---------------------------------------------------------------------------------


def preset_buttons() -> None:
    """One button per preset study file, each filling the form."""
    st.subheader("Start from a preset", divider="gray")
    preset_cols = st.columns(len(PRESETS) + 1)
    for col, (name, (label, hint)) in zip(preset_cols, PRESETS.items(), strict=False):
        with col:
            st.button(
                label,
                key=f"launch_preset_{name}",
                on_click=apply_preset,
                args=(name,),
                icon=":material/tune:",
                help=f"Fill the form from engine/studies/{name}.yaml",
            )
            st.caption(hint)
            if gpu := preset_time(name):
                st.caption(f"Estimated GPU time: {gpu} (every run to its epoch cap).")
    if message := st.session_state.pop("launch_preset_error", None):
        st.error(message)


def dataset_inputs(
    registered: dict[str, Any], path: Path, report_area: Any
) -> tuple[str, dict[str, Any], dict[str, int], str | None]:
    """The dataset picker and its settings (an import's report goes to ``report_area``).

    A registered folder comes with its current crop review (`jobs.services.review.reviewed_spec`);
    datasets that are such reviewed versions are not listed themselves.

    Returns:
        The option picked (phantom, folder or a dataset id), the study's ``dataset`` mapping,
        the images graded per task (for the rough time), and why the study cannot be queued
        yet (None when nothing blocks it here; an import blocks until its films are
        registered).
    """
    registered = {
        k: row for k, row in registered.items() if REVIEW_PARAM not in json.loads(row.params)
    }
    older = older_versions(registered, path)  # picked below their folder's latest version

    def label(option: str) -> str:
        if option == PHANTOM:
            return "Synthetic knee phantom (set its size below)"
        if option == FOLDER:
            return "Import a folder of films (check it, then register its good films)"
        row = registered[option]
        versions = len(versions_of(row, path))
        several = f" · {versions} label versions" if versions > 1 else ""
        return (
            f"{row.spec_key} · {row.n_images} images ({row.n_kl} KL, {row.n_cppd} CPPD "
            f"grades){several}"
        )

    choice = st.selectbox(
        "Dataset",
        [PHANTOM, FOLDER, *(k for k in registered if k not in older)],
        format_func=label,
        key="launch_dataset",
        persist_state="session",
        help="The phantom is drawn from its settings the first time a study uses it; "
        "datasets already in the store are listed after it (see the Data page).",
    )
    if choice == PHANTOM:
        dataset, images = phantom_inputs()
        return choice, dataset, images, None
    if choice == FOLDER:
        return choice, *import_dataset(path, report_area)
    row = pick_label_version(registered[choice], registered, path)
    images = {"KL": int(row.n_kl), "CPPD": int(row.n_cppd)}
    return choice, registered_inputs(row, path), images, None


def registered_inputs(row: Any, path: Path) -> dict[str, Any]:
    """A registered dataset's mapping, with its crop review applied when it has one."""
    dataset = {"kind": row.kind, **json.loads(row.params)}
    try:
        reviewed = reviewed_spec(row.dataset_id, store_path=path)
    except (StoreError, SpecError) as exc:
        st.warning(f"Its crop review cannot be read ({exc}); the dataset is used as registered.")
        return dataset
    if reviewed.reviewed:
        st.caption(
            f"With its crop review (Review crops page): {reviewed.n_excluded} film(s) left "
            f"out, {reviewed.n_boxes} box(es) corrected."
        )
    return {"kind": reviewed.spec.kind, **reviewed.spec.params}


DEVICE_LABELS: dict[str, str] = {
    "auto": "auto (GPU if the worker has one)",
    "cpu": "cpu",
    "cuda": "cuda (GPU)",
}


def whole_numbers(settings: tuple[WholeSetting, ...], columns: int) -> dict[str, int]:
    """One number box per setting (its label, meaning and step from `engine.study_settings`),
    laid left to right over a row of ``columns`` columns; each value by the setting's field.
    A box's widget is ``launch_<field>``, kept for the session."""
    row = st.columns(columns)
    return {
        s.field: int(
            row[i % columns].number_input(
                s.label,
                step=s.step,
                key=f"launch_{s.field}",
                persist_state="session",
                help=s.meaning,
            )
        )
        for i, s in enumerate(settings)
    }


def phantom_inputs() -> tuple[dict[str, Any], dict[str, int]]:
    """The phantom's size and seed; its dataset mapping and images per task."""
    size = whole_numbers(PHANTOM_SIZE, 3)
    numbers = {s.key: size[s.field] for s in PHANTOM_SIZE}
    return {"kind": PHANTOM, **numbers}, {"KL": numbers["n_joint"], "CPPD": numbers["n_images"]}


def seeds_inputs() -> int | dict[str, int]:
    """How the seeds draw the study's randomness: independent seeds (a count), or a
    factorial design of splits × inits (`engine.seeds`); the value of the study's
    ``seeds``."""
    design = labelled_choice(
        st.radio,
        "Seeds",
        SEED_DESIGNS,
        "launch_seed_design",
        horizontal=True,
        on_change=_carry_seed_count,
        help="Independent: each seed draws a new split and a new initialisation together "
        "(the paper's way). Splits × inits: every split is trained from every "
        "initialisation, so the Statistics tab can separate the variance the data make "
        "from the variance the training makes (at least 2 of each).",
    )
    if design == INDEPENDENT:
        return whole_numbers((SEED_COUNT,), 2)[SEED_COUNT.field]
    design_size = whole_numbers(FACTORIAL_SIZE, 2)
    st.caption(
        f"{design_size['splits'] * design_size['inits']} seeds: every split trained from "
        "every init."
    )
    return design_size


def training_inputs() -> dict[str, Any]:
    """Seeds, search budget, epochs, patience, image and batch size, and device."""
    seeds = seeds_inputs()
    numbers = whole_numbers(TRAINING_NUMBERS, 2)
    device = st.selectbox(
        "Device",
        DEVICES,
        key="launch_device",
        persist_state="session",
        format_func=DEVICE_LABELS.__getitem__,
    )
    return {"seeds": seeds, **numbers, "device": device, **search_inputs(numbers["budget"])}


def search_inputs(budget: int) -> dict[str, Any]:
    """The pruned-search switch (off: the paper's full search) and, when on, its pruner,
    with a word when the search ``budget`` leaves nothing to prune."""
    prune = st.toggle(
        "Stop configurations that have already lost (pruned search)",
        key="launch_prune",
        persist_state="session",
        help=PRUNING_HELP,
    )
    if not prune:
        return {}
    pruner = st.selectbox(
        "Pruner",
        PRUNER_CHOICES,
        key="launch_pruner",
        persist_state="session",
        format_func=pruner_label,
        help="asha keeps the best third of the configurations at epochs 10, 30 and 90 of "
        "100; median stops one worse than the median of finished ones; hyperband runs several "
        "asha brackets, some judging later. All are Optuna's.",
    )
    st.caption(PRUNING_HELP)
    if note := pruning_budget_note(budget):
        st.warning(note, icon=":material/info:")
    return {"search": {"pruner": pruner}}


def _carry_seed_count() -> None:
    """Switching to splits × inits starts from the independent seed count (at least 2 × 2),
    not a preset's 10 × 2 (issue 39: 2 seeds became 20 silently)."""
    if st.session_state.get("launch_seed_design") == FACTORIAL:
        seeds = int(st.session_state.get("launch_seeds") or 0)
        splits, inits = factorial_for(seeds)
        st.session_state["launch_splits"], st.session_state["launch_inits"] = splits, inits
