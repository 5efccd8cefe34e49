"""The Jobs page's clock: each GPU's use, memory and images/s now, and a running job's time
left from its measured run costs (formatting in `pages.present.gpu_view` and `job_view`)."""

from __future__ import annotations

import socket
from typing import Any

import pandas as pd
import streamlit as st

from engine.config import SpecError
from jobs.services.gpu_probe import read_gpus
from jobs.services.page_store import (
    StoreError,
    get_study,
    live_device_rates,
    study_run_costs,
    train_image_counts,
)
from jobs.services.run_costs import TimeLeft, time_left, with_train_images
from pages.present.gpu_view import (
    NO_GPU_TEXT,
    gpu_table,
    idle_gpus,
    idle_text,
    rates_by_index,
)
from pages.present.job_view import parallel_units, planned_runs, value
from pages.widgets.reads import store_path
from pages.widgets.workers import alive_workers


@st.cache_data(ttl=2, show_spinner=False)
def cached_device_rates(path: str) -> pd.DataFrame:
    """Live training images/s per worker device."""
    return live_device_rates(path=path)


@st.cache_data(ttl=5, show_spinner=False)
def cached_study_run_costs(path: str, study_id: str) -> pd.DataFrame:
    """A study's stored runs with their measured costs."""
    return study_run_costs(study_id, path=path)


@st.cache_data(ttl=300, show_spinner=False)
def cached_planned_runs(path: str, study_id: str) -> pd.DataFrame:
    """A study's planned runs (its spec does not change)."""
    return planned_runs(get_study(study_id, path=path).spec, study_id)


@st.cache_data(ttl=60, show_spinner=False)
def cached_train_image_counts(path: str, study_id: str) -> pd.DataFrame:
    """A study's training images per (split seed, task), once its splits are stored."""
    return train_image_counts(study_id, path=path)


def job_parallel(job: Any) -> int:
    """Devices the job's worker trains on at once (1 when its worker is not known)."""
    try:
        workers = alive_workers(store_path())
    except StoreError:
        return 1
    mine = workers[workers["worker_id"] == value(job, "worker_id")]
    return parallel_units(mine["devices"].iloc[0]) if len(mine) else 1


def job_time_left(job: Any, parallel: int) -> TimeLeft | None:
    """A running job's time left from its study's measured runs; None when there are none
    (or the store is busy): the page then uses the job's pace."""
    path = str(store_path())
    try:
        runs = cached_study_run_costs(path, job.study_id)
        planned = cached_planned_runs(path, job.study_id)
        counts = cached_train_image_counts(path, job.study_id)
    except (StoreError, SpecError, ValueError):
        return None
    if counts.empty:  # its splits are not stored yet: ask again next time, not in 60 s
        cached_train_image_counts.clear()
    return time_left(runs, with_train_images(planned, counts), parallel)


def gpu_panel(*, job_running: bool) -> None:
    """This machine's GPUs (use, memory, images/s) with an idle badge, or one sentence when
    it has none. Drawn inside the page's auto-refreshing fragment, so it is live."""
    readings = read_gpus()
    if not readings:
        st.caption(NO_GPU_TEXT)
        return
    try:
        rates = rates_by_index(cached_device_rates(str(store_path())), socket.gethostname())
    except StoreError:
        rates = {}
    st.dataframe(gpu_table(readings, rates), hide_index=True, width="stretch")
    if idle := idle_gpus(readings, job_running=job_running):
        st.badge("idle", color="orange", icon=":material/hourglass_empty:")
        st.caption(idle_text(idle, readings))
