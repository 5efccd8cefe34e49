"""Launch: fill in a study (or start from a preset), check it, and queue it as one job.

Exactly-once submit: every form instance has an id, kept in the session and in the URL (so a
refresh keeps it). The request id sent with the job is that form id plus a hash of the
study, so a double click, a rerun, a refresh mid-submit or a duplicated tab sending the same
study get the job already created; a changed study is a new request. "Queue the same study
again" starts a new form instance, which is the only way to ask twice for the same study.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from engine.config import TASK_CLASSES, SpecError, StudySpec
from jobs.services.page_store import StoreError
from pages.present.study_form import (
    FOLDER,
    TASK_LABELS,
    check_study,
    configurations_text,
    hours_per_seed,
    measured_time_text,
    pruning_text,
    request_id_for,
    rough_time_text,
    seeds_text,
    study_size,
)
from pages.present.user_text import plain, said
from pages.widgets.inputs import labelled_choice
from pages.widgets.launch_form import (
    LAST_KEY,
    dataset_inputs,
    enqueue,
    folder_labels,
    form_id,
    init_form,
    new_form,
    preset_buttons,
    registered_datasets,
    training_inputs,
)
from pages.widgets.launch_methods import method_inputs
from pages.widgets.reads import cached_jobs, cached_run_costs, store_path
from pages.widgets.seed_planner import how_many_seeds
from pages.widgets.shell import link_to_page, page_title, run_inside_shell
from pages.widgets.sign_in import require_page
from pages.widgets.workers import show_queue_wait, warn_if_no_worker, worker_has_gpu


def study_inputs(path: Path) -> tuple[dict[str, Any], str, dict[str, int], str | None]:
    """Name, dataset, tasks and training settings: the study (without methods), the dataset
    option picked, the images graded per task, and why it cannot be queued yet (or None)."""
    registered = registered_datasets(path)
    st.subheader("Study", divider="gray")
    left, right = st.columns(2, gap="large")
    report_area = st.container()  # an import's report, full width below the two columns
    with left:
        name = st.text_input("Study name", key="launch_name", persist_state="session")
        choice, dataset, images_per_task, blocker = dataset_inputs(registered, path, report_area)
        tasks = labelled_choice(
            st.multiselect,
            "Tasks",
            {task: TASK_LABELS[task] for task in TASK_CLASSES},
            "launch_tasks",
            help="KL: Kellgren–Lawrence osteoarthritis grade 0–4. CPPD: calcium pyrophosphate "
            "deposition (chondrocalcinosis) grade 0–3. Each task trains its own models; with "
            "both, the KL × CPPD page compares their predictions on the same films.",
        )
    with right:
        training = training_inputs()
    raw = {"name": name, "dataset": dataset, "tasks": tasks, **training}
    return raw, choice, images_per_task, blocker


def show_check(
    raw: dict[str, Any],
    choice: str,
    images_per_task: dict[str, int],
    *,
    gpu_missing: bool,
    blocker: str | None = None,
) -> StudySpec | None:
    """The study checked: its size and rough time, or the one reason it cannot be queued."""
    st.subheader("Check and queue", divider="gray")
    if blocker is not None:
        st.error(f"**Can't queue this study yet:** {said(blocker)}", icon=":material/block:")
        return None
    try:
        spec = check_study(raw, importing=choice == FOLDER, read_folder=folder_labels)
    except SpecError as exc:
        st.error(f"**Can't queue this study yet.** {said(exc)}", icon=":material/block:")
        return None
    n_runs, runs_per_task = study_size(spec)
    st.markdown(
        f"This study makes **{n_runs} runs**: {len(spec.tasks)} task(s) × "
        f"{len(spec.methods)} method(s) × {seeds_text(spec)}, searching "
        f"{configurations_text(spec)} (at most the budget; a smaller grid is searched whole); "
        f"every run at most {spec.max_epochs} epochs."
    )
    pruned = pruning_text(spec)
    if pruned is not None:
        st.markdown(pruned)
    measured = measured_time_text(spec, images_per_task, cached_run_costs(str(store_path())))
    if measured is not None:
        st.caption(
            f"Expected time, from the runs measured on this lab's devices (median cost per "
            f"task and method family, the epochs such runs stopped at): {measured}. More GPUs "
            "or CPU slots share the work, and a new phantom is drawn once before its first run."
        )
    else:
        when = rough_time_text(spec, runs_per_task, images_per_task)
        st.caption(
            f"Rough time if every run used all its epochs: {when} (a guess from benchmarks: "
            "no run has been measured on this kind of device here yet). Early stopping "
            "usually ends runs sooner, more CPU slots or GPUs share the work, and a new "
            "phantom is drawn once before its first run."
        )
    if gpu_missing and spec.device != "cpu":
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
    return spec


def show_queue(
    spec: StudySpec | None, fid: str, name: str, path: Path, *, worker_alive: bool
) -> None:
    """The queue button (once per form and study), then the job it made."""
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
        enqueue(spec, request_id, path)
    if already and last is not None:
        show_queued(last, name, path, worker_alive=worker_alive)
        return
    if last is not None:
        st.caption(
            f"The study you queued last from this form is job `{last['job_id']}` (Jobs page); "
            "the settings above differ from it, so queuing them makes a new job."
        )
    if not worker_alive and spec is not None:
        show_queue_wait(caption=True)


def show_queued(last: dict[str, Any], name: str, path: Path, *, worker_alive: bool) -> None:
    """The job this form queued, its status, and a way to queue the same study again."""
    try:
        jobs = cached_jobs(str(path))
        match = jobs[jobs["job_id"] == last["job_id"]]
        status = str(match["status"].iloc[0]) if len(match) else "queued"
    except StoreError:
        status = "queued"
    with st.container(border=True):
        if last["new"]:
            st.success(
                f"Queued **{plain(name)}** as job `{last['job_id']}`; status: **{status}**.",
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
            show_queue_wait()
        st.button(
            "Queue the same study again",
            key="launch_again",
            on_click=new_form,
            help="Only if you really want a second, identical job. Changing any setting "
            "above also makes a new study.",
        )


run_inside_shell()
ACCOUNT = require_page(__file__)
page_title("Launch a study")
st.caption(
    "Choose the data, the grading tasks and the ordinal methods to compare. SoftGrade "
    "queues the study as one job; a background worker trains every run and the results "
    "appear on the result pages. You can close the browser while it runs."
)
path = store_path()
worker_alive = warn_if_no_worker(path)
init_form()
fid = form_id()
preset_buttons()
raw, choice, images_per_task, blocker = study_inputs(path)
raw["methods"] = method_inputs()
gpu_missing = worker_alive and not worker_has_gpu(path)
spec = show_check(raw, choice, images_per_task, gpu_missing=gpu_missing, blocker=blocker)
how_many_seeds(path, hours_per_seed(spec, study_size(spec)[1], images_per_task) if spec else None)
show_queue(spec, fid, raw["name"], path, worker_alive=worker_alive)
