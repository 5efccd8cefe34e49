"""Helpers shared by the pages: the store in use, cached reads, the sidebar.

Pages read through these cached wrappers (a few seconds' TTL) so that reruns do not hit the
store on every widget change, and never hold a DuckDB connection across reruns: a DuckDB
connection is not thread-safe, so none is kept in ``st.cache_resource``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import streamlit as st

from store import jobs as store_jobs
from store.db import StoreError, default_store_path, init_schema

WORKER_ALIVE_WITHIN_S = 30.0


def store_path() -> Path:
    """The store this app uses: ``$SOFTGRADE_HOME/softgrade.duckdb`` (created if missing)."""
    path = default_store_path()
    if not path.exists():
        init_schema(path)
    return path


@st.cache_data(ttl=3, show_spinner=False)
def cached_workers(path: str) -> pd.DataFrame:
    """Registered workers with their liveness."""
    return store_jobs.list_workers(alive_within_s=WORKER_ALIVE_WITHIN_S, path=path)


@st.cache_data(ttl=2, show_spinner=False)
def cached_jobs(path: str) -> pd.DataFrame:
    """Every job with its progress, newest first."""
    return store_jobs.list_jobs(path=path)


def alive_workers(path: Path) -> pd.DataFrame:
    """Only the workers that beat recently."""
    workers = cached_workers(str(path))
    return workers[workers["alive"]] if len(workers) else workers


def render_sidebar() -> None:
    """Store in use, worker health and the queue size, on every page."""
    path = store_path()
    with st.sidebar:
        st.caption(f"Store: `{path}`")
        try:
            workers = alive_workers(path)
            jobs = cached_jobs(str(path))
        except StoreError as exc:
            st.warning(f"The store cannot be read right now: {exc}")
            return
        if workers.empty:
            st.error("No worker is running: queued studies will wait. Start one with "
                     "`python -m jobs worker`.", icon=":material/power_off:")
        else:
            for _, w in workers.iterrows():
                devices = ", ".join(json.loads(w.devices))
                st.success(f"Worker alive · {w.slots} slot(s) on {devices} · last beat "
                           f"{w.seconds_since_beat:.0f} s ago", icon=":material/bolt:")
        queued = int((jobs["status"] == "queued").sum()) if len(jobs) else 0
        running = int((jobs["status"] == "running").sum()) if len(jobs) else 0
        st.metric("Jobs queued · running", f"{queued} · {running}")
