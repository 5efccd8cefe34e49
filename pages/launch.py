"""Launch: fill in a study (or start from a preset), check it, and queue it as one job.

Exactly-once submit: every form instance has an id, kept in the session and in the URL (so a
refresh keeps it). The request id sent with the job is that form id plus a hash of the
study, so a double click, a rerun, a refresh mid-submit or a duplicated tab sending the same
study get the job already created; a changed study is a new request. "Queue the same study
again" starts a new form instance, which is the only way to ask twice for the same study.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from engine.config import TASK_CLASSES, SpecError, StudySpec
from engine.soft_labels import MethodParams, soft_label_matrix
from engine.study import plan_runs
from engine.vocab import METHOD_DESCRIPTIONS, METHODS, TRAIN_FRACTION
from pages._charts import soft_label_frame, soft_label_heatmap
from pages._estimates import rough_study_seconds
from pages._format import format_duration
from pages._ui import (
    NO_WORKER_HOW,
    cached_datasets,
    cached_jobs,
    clear_job_caches,
    link_to_page,
    load_preset,
    run_inside_shell,
    store_path,
    warn_if_no_worker,
    worker_has_gpu,
)
from store import jobs as store_jobs
from store.db import StoreError

PHANTOM = "phantom"
FOLDER = "folder"
DEVICES = ("auto", "cpu", "cuda")
TASK_LABELS = {"KL": "KL (grades 0–4)", "CPPD": "CPPD (grades 0–3)"}
PRESETS = {
    "quick": ("Quick look", "CPU, a few minutes: small phantom, 32 px, few epochs"),
    "paper": ("Paper protocol", "GPU, hours: 20 seeds, budget 15, 100 epochs, 224 px"),
}
# Matrices shown with these parameters; the search also tries eta 0.8 (20 % one-hot).
SHOWN_PARAMS = MethodParams(lr=1e-3, eta=1.0, alpha2=0.05, p=1.0)
FORM_ID_KEY = "launch_form_id"
LAST_KEY = "launch_last"


# -- form state ------------------------------------------------------------------------------


def preset_values(study: dict[str, Any]) -> dict[str, Any]:
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


def apply_preset(name: str) -> None:
    """Fill the form from ``studies/<name>.yaml`` (a button callback)."""
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
        values = {"launch_name": "study", "launch_tasks": ["KL"], "launch_methods": ["nominal"]}
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


def request_id_for(fid: str, study: dict[str, Any]) -> str:
    """Same form and same study → same request id → the same job."""
    digest = hashlib.sha1(json.dumps(study, sort_keys=True).encode()).hexdigest()[:12]
    return f"launch-{fid}-{digest}"


@st.cache_data(ttl=30, show_spinner=False, max_entries=8)
def folder_labels(folder: str, labels_csv: str) -> pd.DataFrame:
    """A folder's labels CSV, after checking every row and that every listed film exists
    (ValueError names the first problem)."""
    from engine.importing import read_labels

    return read_labels(Path(folder).expanduser(), Path(labels_csv).expanduser())


def folder_grades(folder: str, labels_csv: str) -> tuple[int, int]:
    """Films with a KL and with a CPPD grade in a folder's labels CSV."""
    table = folder_labels(folder, labels_csv)
    return int(table["kl"].notna().sum()), int(table["cppd"].notna().sum())


def check_study(raw: dict[str, Any], *, importing: bool = False) -> StudySpec:
    """Validate a study mapping; SpecError says which value is refused and why.

    ``importing``: the dataset is a folder typed into the form, so its labels CSV and films
    are checked too (a registered dataset was checked when it was first prepared).
    """
    dataset = raw.get("dataset")
    if importing:
        for field, what in (("path", "the folder of films"), ("labels_csv", "the labels CSV")):
            if not str(dataset.get(field) or "").strip():
                raise SpecError(f"dataset.{field}: give the path of {what} on this machine")
    spec = StudySpec.from_dict(raw)
    if importing:
        from engine.data import check_split_sizes  # imports torch: only when importing

        try:
            table = folder_labels(
                str(spec.dataset.params["path"]), str(spec.dataset.params["labels_csv"])
            )
            check_split_sizes(table, spec.seeds, spec.tasks)
        except ValueError as exc:
            raise SpecError(str(exc)) from exc
    if spec.dataset.kind == PHANTOM:
        try:
            from engine.phantom import PhantomSpec
        except ImportError:  # the phantom module is optional for validation
            return spec
        try:
            PhantomSpec(**spec.dataset.params)
        except (TypeError, ValueError) as exc:
            raise SpecError(f"dataset (phantom): {exc}") from exc
    return spec


# -- page ------------------------------------------------------------------------------------

run_inside_shell()
st.title("Launch a study")
st.caption(
    "Choose the data, the grading tasks and the soft-label methods to compare. SoftGrade "
    "queues the study as one job; a background worker trains every run and the results "
    "appear on the result pages. You can close the browser while it runs."
)

path = store_path()
worker_alive = warn_if_no_worker(path)
init_form()
fid = form_id()

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
            help=f"Fill the form from studies/{name}.yaml",
        )
        st.caption(hint)
if message := st.session_state.pop("launch_preset_error", None):
    st.error(message)

try:
    datasets = cached_datasets(str(path))
except StoreError as exc:
    st.warning(f"Registered datasets cannot be read right now ({exc}); the phantom is offered.")
    datasets = pd.DataFrame(columns=["dataset_id", "kind", "spec_key", "params", "n_images"])
registered = {row.dataset_id: row for row in datasets.itertuples()}


def dataset_label(option: str) -> str:
    """How a dataset option reads in the picker."""
    if option == PHANTOM:
        return "Synthetic knee phantom (set its size below)"
    if option == FOLDER:
        return "Import a folder of films with a labels CSV"
    row = registered[option]
    return f"{row.spec_key} · {row.n_images} images ({row.n_kl} KL, {row.n_cppd} CPPD grades)"


st.subheader("Study", divider="gray")
left, right = st.columns(2, gap="large")
with left:
    name = st.text_input("Study name", key="launch_name", persist_state="session")
    dataset_choice = st.selectbox(
        "Dataset",
        [PHANTOM, FOLDER, *registered],
        format_func=dataset_label,
        key="launch_dataset",
        persist_state="session",
        help="The phantom is drawn from its settings the first time a study uses it; "
        "datasets already in the store are listed after it (see the Data page).",
    )
    if dataset_choice == PHANTOM:
        c1, c2, c3 = st.columns(3)
        n_images = c1.number_input(
            "Films",
            step=1,
            key="launch_n_images",
            persist_state="session",
            help="Films in the phantom; every film has a CPPD grade.",
        )
        n_joint = c2.number_input(
            "KL-graded films",
            step=1,
            key="launch_n_joint",
            persist_state="session",
            help="How many of those films also have a KL grade; the KL task trains on these only.",
        )
        phantom_seed = c3.number_input(
            "Phantom seed",
            step=1,
            key="launch_phantom_seed",
            persist_state="session",
            help="The same seed and sizes always draw the same films.",
        )
        dataset: dict[str, Any] = {
            "kind": PHANTOM,
            "n_images": int(n_images),
            "n_joint": int(n_joint),
            "seed": int(phantom_seed),
        }
        images_per_task = {"KL": int(n_joint), "CPPD": int(n_images)}
    elif dataset_choice == FOLDER:
        folder = st.text_input(
            "Film folder",
            key="launch_folder",
            persist_state="session",
            placeholder="/data/knees",
            help="A folder on this machine (the worker's) holding the films: DICOM, PNG, "
            "JPEG or TIFF. Films are cropped to the knee and cached once per image size.",
        )
        labels_csv = st.text_input(
            "Labels CSV",
            key="launch_labels_csv",
            persist_state="session",
            placeholder="/data/knees/labels.csv",
            help="One row per film: image (its file name in the folder), patient_id, optional "
            "side (L/R), kl 0–4 and/or cppd 0–3 (empty where not graded). Both knees of a "
            "patient always land in the same split.",
        )
        dataset = {"kind": FOLDER, "path": folder.strip(), "labels_csv": labels_csv.strip()}
        try:
            n_kl, n_cppd = folder_grades(folder.strip(), labels_csv.strip())
        except ValueError:
            n_kl = n_cppd = 0  # the check below says what is wrong
        images_per_task = {"KL": n_kl, "CPPD": n_cppd}
    else:
        row = registered[dataset_choice]
        dataset = {"kind": row.kind, **json.loads(row.params)}
        images_per_task = {"KL": int(row.n_kl), "CPPD": int(row.n_cppd)}
    tasks = st.multiselect(
        "Tasks",
        list(TASK_CLASSES),
        format_func=TASK_LABELS.get,
        key="launch_tasks",
        persist_state="session",
        help="KL: Kellgren–Lawrence osteoarthritis grade 0–4. CPPD: calcium pyrophosphate "
        "deposition (chondrocalcinosis) grade 0–3. Each task trains its own models; with both, "
        "the KL × CPPD page compares their predictions on the same films.",
    )

with right:
    c1, c2 = st.columns(2)
    seeds = c1.number_input(
        "Seeds",
        step=1,
        key="launch_seeds",
        persist_state="session",
        help="Repetitions with different data splits and initialisations (seeds 0, 1, …). "
        "The paper uses 20; statistics need several.",
    )
    budget = c2.number_input(
        "Search budget",
        step=1,
        key="launch_budget",
        persist_state="session",
        help="Hyper-parameter configurations tried per task, method and seed (at most 15, "
        "as in the paper; nominal has only 3). The one with the best validation AMAE is kept.",
    )
    max_epochs = c1.number_input(
        "Max epochs",
        step=1,
        key="launch_max_epochs",
        persist_state="session",
        help="Upper limit of training epochs per run.",
    )
    patience = c2.number_input(
        "Patience (epochs)",
        step=1,
        key="launch_patience",
        persist_state="session",
        help="Stop a run early after this many epochs without a lower validation loss.",
    )
    image_size = c1.number_input(
        "Image size (px)",
        step=16,
        key="launch_image_size",
        persist_state="session",
        help="Side of the square knee crop fed to the network (224 in the paper).",
    )
    batch_size = c2.number_input(
        "Batch size",
        step=1,
        key="launch_batch_size",
        persist_state="session",
    )
    device = st.selectbox(
        "Device",
        DEVICES,
        key="launch_device",
        persist_state="session",
        format_func={
            "auto": "auto (GPU if the worker has one)",
            "cpu": "cpu",
            "cuda": "cuda (GPU)",
        }.get,
    )

st.subheader("Methods", divider="gray")
methods = st.multiselect(
    "Soft-label methods to compare",
    METHODS,
    key="launch_methods",
    persist_state="session",
    help="Nominal is the usual one-hot baseline; the others spread the target over "
    "neighbouring grades.",
)
if methods:
    shown_task = st.radio(
        "Show target matrices for",
        list(TASK_CLASSES),
        format_func=lambda t: f"{t} ({TASK_CLASSES[t]} grades)",
        horizontal=True,
        key="launch_matrix_task",
        persist_state="session",
    )
    st.caption(
        "Each matrix is the target the network learns for a film: row = the film's true "
        "grade, column = each grade it could predict, shade = the share of probability it "
        "is taught to give that grade (as in the paper's Fig. 4). Drawn with η = 1, "
        "α₂ = 0.05 (triangular) and p = 1 (exponential); the search also tries η = 0.8, which "
        "mixes 20 % of the one-hot target back in."
    )
    for col, method in zip(st.columns(len(methods)), methods, strict=True):
        with col:
            st.markdown(f"**{method}**")
            matrix = soft_label_matrix(method, TASK_CLASSES[shown_task], SHOWN_PARAMS)
            chart = soft_label_heatmap(soft_label_frame(matrix), size=140)
            st.altair_chart(chart, width="content")
            st.caption(METHOD_DESCRIPTIONS[method])
else:
    for method in METHODS:
        st.markdown(f"- **{method}**: {METHOD_DESCRIPTIONS[method]}")

raw = {
    "name": name,
    "dataset": dataset,
    "tasks": tasks,
    "methods": methods,
    "seeds": int(seeds),
    "budget": int(budget),
    "max_epochs": int(max_epochs),
    "patience": int(patience),
    "image_size": int(image_size),
    "batch_size": int(batch_size),
    "device": device,
}

st.subheader("Check and queue", divider="gray")
try:
    spec: StudySpec | None = check_study(raw, importing=dataset_choice == FOLDER)
    problem = None
except SpecError as exc:
    spec, problem = None, str(exc)

if spec is not None:
    plan = plan_runs(spec, "preview", "cpu")
    runs_per_task = {task: sum(r.task == task for r in plan) for task in spec.tasks}
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
    when = {
        "cpu": f"about {format_duration(guesses['cpu'])} on one CPU slot",
        "cuda": f"about {format_duration(guesses['cuda'])} on one GPU",
        "auto": f"about {format_duration(guesses['cuda'])} on a GPU, "
        f"{format_duration(guesses['cpu'])} on a CPU",
    }[spec.device]
    st.markdown(
        f"This study makes **{len(plan)} runs**: {len(spec.tasks)} task(s) × "
        f"{len(spec.methods)} method(s) × {len(spec.seeds)} seed(s) × up to {spec.budget} "
        f"configuration(s) each, every run at most {spec.max_epochs} epochs."
    )
    st.caption(
        f"Rough time if every run used all its epochs: {when}. Early stopping usually ends "
        "runs sooner, more CPU slots or GPUs share the work, and a new phantom is drawn once "
        "before its first run."
    )
    if worker_alive and spec.device != "cpu" and not worker_has_gpu(path):
        st.warning(
            f"The running worker has no GPU, so this study (device **{spec.device}**) "
            + (
                "would run on its CPU: see the CPU time above."
                if spec.device == "auto"
                else "cannot run there. Choose device cpu or auto, or start a worker on a "
                "machine with a GPU."
            ),
            icon=":material/memory:",
        )
else:
    st.error(f"**Can't queue this study yet.** {problem}", icon=":material/block:")

request_id = request_id_for(fid, spec.to_dict()) if spec is not None else None
last = st.session_state.get(LAST_KEY)
already = last is not None and last["request_id"] == request_id

submitted = st.button(
    "Queued: see below" if already else "Queue this study",
    key="launch_submit",
    type="primary",
    icon=":material/rocket_launch:",
    disabled=spec is None or already,
)
if submitted and spec is not None and request_id is not None:
    try:
        clear_job_caches()
        known = set(cached_jobs(str(path))["job_id"])
        job_id = store_jobs.enqueue_job(spec.to_dict(), request_id=request_id, path=path)
    except StoreError as exc:
        st.error(f"The study could not be queued: {exc}")
    else:
        clear_job_caches()
        st.session_state[LAST_KEY] = {
            "request_id": request_id,
            "job_id": job_id,
            "new": job_id not in known,
        }
        st.rerun()  # draw the page again: button disabled, job shown, sidebar counts updated

if already and last is not None:
    try:
        jobs = cached_jobs(str(path))
        match = jobs[jobs["job_id"] == last["job_id"]]
        status = str(match["status"].iloc[0]) if len(match) else "queued"
    except StoreError:
        status = "queued"
    with st.container(border=True):
        if last["new"]:
            st.success(
                f"Queued **{name}** as job `{last['job_id']}`; status: **{status}**.",
                icon=":material/check_circle:",
            )
        else:
            st.info(
                f"This exact study was already queued from this form as job "
                f"`{last['job_id']}` (status: **{status}**); nothing new was queued.",
                icon=":material/info:",
            )
        link_to_page(
            "pages/queue.py", "Follow its progress on the Jobs page", ":material/list_alt:"
        )
        if not worker_alive:
            st.warning(f"It will wait in the queue until a worker starts. {NO_WORKER_HOW}")
        st.button(
            "Queue the same study again",
            key="launch_again",
            on_click=new_form,
            help="Only if you really want a second, identical job. Changing any setting "
            "above also makes a new study.",
        )
else:
    if last is not None:
        st.caption(
            f"The study you queued last from this form is job `{last['job_id']}` (Jobs page); "
            "the settings above differ from it, so queuing them makes a new job."
        )
    if not worker_alive and spec is not None:
        st.caption("No worker is running, so the study will wait in the queue until one starts.")
