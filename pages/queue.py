"""Jobs: every queued, running and finished study with live progress, its log, cancel and resume.

The list is a fragment that reruns itself every few seconds, so progress moves without
reloading the page (or losing what you scrolled to).
"""

from __future__ import annotations

from typing import Any, Literal

import streamlit as st

from jobs.services.page_store import StoreError
from pages.present.job_view import (
    ended_caption,
    progress,
    result_pages_for,
    running_numbers,
    runs_note,
    time_left_basis,
    value,
)
from pages.present.user_text import plain, said
from pages.widgets.job_clock import gpu_panel, job_parallel, job_time_left
from pages.widgets.job_controls import MESSAGE_KEY, job_action
from pages.widgets.manage_study import manage_study_section
from pages.widgets.pickers import request_study, show_study_card
from pages.widgets.reads import (
    cached_imported_card,
    cached_job_log,
    cached_jobs,
    store_path,
)
from pages.widgets.shell import link_to_page, page_title, run_inside_shell
from pages.widgets.sign_in import require_page
from pages.widgets.workers import alive_workers, show_no_worker

REFRESH_S = 2.0
# Session key: the result page a Results button asked to open (see `ask_to_open`).
OPEN_PAGE_KEY = "queue_open_page"
# st.badge takes one of Streamlit's named colours.
BadgeColour = Literal["gray", "blue", "green", "red", "orange"]
STATUS_BADGES: dict[str, tuple[str, BadgeColour, str | None]] = {
    "queued": ("queued", "gray", ":material/schedule:"),
    "running": ("running", "blue", ":material/sync:"),
    "succeeded": ("succeeded", "green", ":material/check_circle:"),
    "failed": ("failed", "red", ":material/error:"),
    "cancelled": ("cancelled", "orange", ":material/cancel:"),
}


def render_job(job: Any, *, workers_busy: bool = False) -> None:
    """One job: header, progress bar, live numbers, traceback, log and cancel."""
    status = str(job.status)
    bundle = None if status in ("queued", "running") else imported_card_of(job)
    with st.container(border=True):
        job_header(job)
        if bar := progress(job, workers_busy=workers_busy):
            st.progress(bar[0], text=bar[1])
        if status == "running":
            parallel = job_parallel(job)
            measured = job_time_left(job, parallel)
            st.markdown(running_numbers(job, measured))
            st.caption(time_left_basis(measured, parallel))
        elif status != "queued":
            st.caption(ended_caption(job, bundle))
            if note := runs_note(bundle, int(value(job, "runs_done") or 0)):
                st.caption(note)
        if status == "failed":
            st.error(
                "This job failed. Below: how many runs failed and why, or the traceback; every "
                "run that finished is kept, and Resume trains the failed runs again.",
                icon=":material/error:",
            )
            st.code(str(value(job, "error") or "(no traceback was recorded)"), language="text")
        elif status == "running" and bool(job.cancel_requested):
            st.caption("Cancel requested: it stops at the next epoch boundary.")
        if status in ("succeeded", "cancelled", "failed") and int(value(job, "runs_done") or 0) > 0:
            pages = result_pages_for(RESULT_PAGES, value(job, "study_spec"))
            result_links(job.job_id, job.study_id, pages=pages)
        elif status == "running" and int(value(job, "runs_done") or 0) > 0:
            result_links(job.job_id, job.study_id, pages=LIVE_RESULT_PAGES)
        show_study_card(
            str(store_path()), job.study_id, key=f"queue_card_{job.job_id}", notes=False
        )
        job_log(job.job_id, imported=bundle is not None)


def imported_card_of(job: Any) -> dict[str, Any] | None:
    """The bundle card of the job's study when it was imported (the reference study)."""
    return cached_imported_card(str(store_path()), job.study_id)


def job_header(job: Any) -> None:
    """The study's name, the job id, a status badge, and Cancel or Resume as fits."""
    status = str(job.status)
    head, action = st.columns([5, 1], vertical_alignment="center")
    label, colour, icon = STATUS_BADGES.get(status, (status, "gray", None))
    head.markdown(f"**{plain(job.study_name)}** · `{job.job_id}`")
    head.badge(label, color=colour, icon=icon)
    job_action(action, job, ACCOUNT)


def job_log(job_id: str, *, imported: bool = False) -> None:
    """The job's log lines in an expander, read only while it is open.

    An imported study's job (the reference study's) ran elsewhere and has no log lines
    here: no empty "Log" for it.
    """
    if imported and (lines := _log_lines(job_id)) is not None and lines.empty:
        return
    log = st.expander("Log", key=f"queue_log_{job_id}", on_change="rerun")
    if log.open:
        with log:
            try:
                lines = cached_job_log(str(store_path()), job_id)
            except StoreError as exc:
                st.warning(f"The log cannot be read right now: {said(exc)}")
            else:
                if lines.empty:
                    st.caption("No log lines yet.")
                else:
                    st.dataframe(lines, hide_index=True, width="stretch")


def _log_lines(job_id: str) -> Any:
    """The job's log lines, or None when the store cannot be read right now."""
    try:
        return cached_job_log(str(store_path()), job_id)
    except StoreError:
        return None


RESULT_PAGES = (
    ("pages/compare.py", "Compare methods", ":material/leaderboard:"),
    ("pages/explorer.py", "Search & learning curves", ":material/query_stats:"),
    ("pages/relationship.py", "KL × CPPD", ":material/grid_on:"),
    ("pages/attention.py", "Attention", ":material/visibility:"),
)

# A running job's finished runs: their searches and live learning curves.
LIVE_RESULT_PAGES = tuple(p for p in RESULT_PAGES if p[0] == "pages/explorer.py")


def result_links(
    job_id: str, study_id: str, pages: tuple[tuple[str, str, str], ...] = RESULT_PAGES
) -> None:
    """Buttons that open each result page on this job's study."""
    with st.container(horizontal=True, vertical_alignment="center", gap="medium"):
        st.markdown("**Results:**", width="content")
        for page, label, icon in pages:
            if st.button(label, key=f"queue_open_{page}_{job_id}", icon=icon, type="tertiary"):
                ask_to_open(page, study_id)


def ask_to_open(page: str, study_id: str) -> None:
    """Remember which result page to open and rerun the whole page, which opens it.

    `st.switch_page` called inside the auto-refreshing job list raced with the fragment's
    next timed rerun on a loaded machine and left the main area blank. So the fragment only
    records the request and asks for a full-app rerun; `open_requested_page`, at the top of
    the page's script and outside any fragment, switches pages.
    """
    request_study(study_id)
    st.session_state[OPEN_PAGE_KEY] = page
    st.rerun(scope="app")


def open_requested_page() -> None:
    """Open the result page a Results button asked for, from the page's full run."""
    if page := st.session_state.pop(OPEN_PAGE_KEY, None):
        st.switch_page(page)


def job_counts_caption(statuses: Any) -> str:
    """ "2 running · 5 succeeded", and how often the list refreshes while a job is queued or
    running (with every job finished the list still looks for new ones, but nothing on it
    changes, so it says nothing of refreshing)."""
    counts = statuses.value_counts()
    text = " · ".join(f"{counts.get(s, 0)} {s}" for s in STATUS_BADGES if counts.get(s, 0))
    if statuses.isin(["queued", "running"]).any():
        text += f" · refreshes every {REFRESH_S:.0f} s"
    return text


@st.fragment(run_every=REFRESH_S)
def render_jobs() -> None:
    """The live list; reruns alone every ``REFRESH_S`` seconds."""
    path = store_path()
    if message := st.session_state.pop(MESSAGE_KEY, None):
        kind, text = message
        (st.error if kind == "error" else st.info)(text)
    try:
        jobs = cached_jobs(str(path))
        workers = alive_workers(path)
    except StoreError as exc:
        st.error(f"The job list cannot be read right now: {said(exc)}")
        return
    gpu_panel(job_running=not jobs.empty and bool((jobs["status"] == "running").any()))
    if jobs.empty:
        st.info("No jobs yet. Queue a study on the Launch page and it appears here.")
        link_to_page("pages/launch.py", "Launch a study", ":material/rocket_launch:")
        return
    if workers.empty and jobs["status"].isin(["queued", "running"]).any():
        show_no_worker()
    st.caption(job_counts_caption(jobs["status"]))
    if st.session_state.get("queue_hide_finished"):
        jobs = jobs[jobs["status"].isin(["queued", "running"])]
        if jobs.empty:
            st.caption("Nothing is queued or running.")
    # Every live worker on a job while others wait: they wait behind it, not for a worker.
    busy = not workers.empty and int((jobs["status"] == "running").sum()) >= len(workers)
    for job in jobs.itertuples():
        render_job(job, workers_busy=busy)


run_inside_shell()
ACCOUNT = require_page(__file__)
open_requested_page()
page_title("Jobs")
st.caption(
    "Every study queued from this store, newest first, with live progress, and this "
    "machine's GPUs (use, memory, training images/s). Time left comes from the study's "
    "measured run costs once it has some, else from its pace so far. Latest run, epoch and "
    "val AMAE come from the last epoch any worker slot finished (a GPU trains several runs "
    "at once); val AMAE is the average mean absolute error over grades on the validation "
    "films (lower is better). Cancelling keeps the runs already finished."
)
manage_study_section(ACCOUNT, store_path())
st.toggle("Hide finished jobs", key="queue_hide_finished")
render_jobs()
