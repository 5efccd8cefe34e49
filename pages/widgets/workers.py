"""Worker health as the pages show it: who is alive, whether any has a GPU, the "no worker"
warning with how to start one."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import streamlit as st

from jobs.services.page_store import StoreError
from jobs.services.page_store import alive_workers as store_alive_workers
from jobs.services.up_worker import worker_starting
from pages.present.user_text import said

WORKER_ALIVE_WITHIN_S = 30.0
#: How often the page's 'no worker' message looks again (the reads are cached for 3 s).
WORKER_RECHECK_S = 4

NO_WORKER_TITLE = "No worker is running: queued studies will wait."

NO_WORKER_HOW = (
    "Start one in a terminal, in the SoftGrade folder: `python -m jobs worker` "
    "(or `python -m jobs up` starts the app and a worker together)."
)

WORKER_STARTING = (
    "A worker is starting: `python -m jobs up` starts one a few seconds after the app. "
    "Queued studies begin once it is up."
)


def queue_wait_text(starting: bool) -> str:
    """Why a study queued now waits, while no worker beats: the worker ``up`` is starting,
    or none runs (with how to start one)."""
    if starting:
        return "The worker is still starting; the study begins once it is up."
    return f"The study will wait in the queue until a worker starts. {NO_WORKER_HOW}"


def show_queue_wait(*, caption: bool = False) -> None:
    """While no worker beats: why a study queued now waits (a caption under the form, or
    under a study just queued an info while `up` starts its worker, else a warning)."""
    starting = worker_starting(time.time())
    say = st.caption if caption else st.info if starting else st.warning
    say(queue_wait_text(starting))


def show_no_worker(*, bold: bool = True) -> None:
    """What a page says while no worker beats: right after `python -m jobs up`, that its
    worker is starting; otherwise that none runs, and how to start one."""
    if worker_starting(time.time()):
        st.info(WORKER_STARTING, icon=":material/hourglass_top:")
        return
    title = f"**{NO_WORKER_TITLE}**" if bold else NO_WORKER_TITLE
    st.error(f"{title} {NO_WORKER_HOW}", icon=":material/power_off:")


@st.cache_data(ttl=3, show_spinner=False)
def cached_alive_workers(path: str) -> pd.DataFrame:
    """The workers that beat recently."""
    return store_alive_workers(alive_within_s=WORKER_ALIVE_WITHIN_S, path=path)


def alive_workers(path: Path) -> pd.DataFrame:
    """The workers that beat recently (cached for a few seconds)."""
    return cached_alive_workers(str(path))


def worker_has_gpu(path: Path) -> bool:
    """Whether any live worker reports a CUDA device."""
    try:
        workers = alive_workers(path)
    except StoreError:
        return False
    devices = [d for listed in workers["devices"] for d in json.loads(listed)]
    return any(d.startswith("cuda") for d in devices)


def warn_if_no_worker(path: Path) -> bool:
    """Show a prominent 'no worker' message with how to start one; return whether one is alive.

    The message looks again every few seconds on its own (as the sidebar does): right after
    `python -m jobs up` the page can open before its worker's first beat, and a message
    that stayed would contradict the sidebar's "Worker alive" a moment later.
    """
    try:
        alive = not alive_workers(path).empty
    except StoreError as exc:
        st.warning(f"Worker health cannot be read right now: {said(exc)}")
        return False
    _no_worker_message(str(path))
    return alive


@st.fragment(run_every=WORKER_RECHECK_S)
def _no_worker_message(path: str) -> None:
    """The 'no worker' message while no worker beats; nothing once one does."""
    try:
        alive = not alive_workers(Path(path)).empty
    except StoreError:
        return  # a busy store: the page's first reading already said what it could
    if not alive:
        show_no_worker()
