"""The app's shell around every page: running inside ``app.py``, links between pages, and the
sidebar's store, worker health and queue size."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import streamlit as st
from streamlit.errors import StreamlitAPIException

from jobs.services.access import Action, can
from jobs.services.describe import format_devices
from jobs.services.page_store import Account, StoreError
from pages.present.user_text import code, said
from pages.widgets.reads import cached_jobs, store_path
from pages.widgets.workers import alive_workers, show_no_worker

SIDEBAR_REFRESH_S = 5.0

# The sidebar's worker and queue status waits here (its slot and the store) from
# `render_sidebar` until the page's heading is drawn (`page_title`): its two store reads then
# come after the heading, not before it. Script runs are one per thread.
_PENDING_STATUS = threading.local()


def run_inside_shell() -> None:
    """Rerun through ``app.py`` when Streamlit ran this page file on its own.

    Until ``st.navigation`` has run once in a server process, Streamlit treats a folder named
    ``pages/`` next to the entrypoint as its legacy multipage layout. So when the first
    session of a fresh server opens a sub-page URL (a bookmark, or a tab reconnecting after a
    restart), the page file runs alone: no sidebar, no page config, and a menu listing every
    page file in ``pages/``. Turning the legacy mode off and rerunning makes Streamlit run
    ``app.py``, whose navigation opens the same page (both name it by its URL path). Every
    page calls this first; it does nothing once the shell is in charge.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if getattr(PagesManager, "uses_pages_directory", False):
        PagesManager.uses_pages_directory = False
        st.rerun()


def link_to_page(page: str, label: str, icon: str | None = None) -> None:
    """A link to another page of the app; plain text where the page is not in the menu.

    AppTest renders one page file alone, without ``app.py``'s navigation, so a page link
    there has no target; the text fallback keeps the page usable in both cases.
    """
    try:
        st.page_link(page, label=label, icon=icon)
    except StreamlitAPIException:
        st.caption(f"{label}: open it from the menu on the left.")


def render_sidebar(account: Account) -> None:
    """Store in use, worker health and the queue size, on every page.

    Only an admin is shown where the store lies on the server's disk; everyone else sees its
    name (a folder path tells a stranger about the server's layout and users). The worker
    and queue status reads the store, so it is drawn in its place after the page's heading
    (`page_title`), or by `finish_sidebar` after a page without one.
    """
    path = store_path()
    with st.sidebar:
        shown = path if can(account, Action.MANAGE_ACCOUNTS) else path.name
        st.caption(f"Store: {code(shown)}")
        _PENDING_STATUS.value = (st.container(), str(path))


def forget_sidebar() -> None:
    """Drop a status left pending by an earlier run on this thread (``app.py`` calls this
    first, so that a run without the sidebar never draws into an old run's slot)."""
    _PENDING_STATUS.value = None


def finish_sidebar() -> None:
    """Draw the sidebar's worker and queue status if this run has not drawn it yet."""
    pending = getattr(_PENDING_STATUS, "value", None)
    if pending is None:
        return
    _PENDING_STATUS.value = None
    slot, path = pending
    with slot:
        _sidebar_status(path)


def page_title(title: str) -> None:
    """The page's heading, then the sidebar's status: a new visitor sees the heading
    before the sidebar's store reads (and without it when the page runs alone)."""
    st.title(title)
    finish_sidebar()


@st.fragment(run_every=SIDEBAR_REFRESH_S)
def _sidebar_status(path: str) -> None:
    """Worker health and queue counts; reruns alone so they stay current on every page."""
    try:
        workers = alive_workers(Path(path))
        jobs = cached_jobs(path)
    except StoreError as exc:
        st.warning(f"The store cannot be read right now: {said(exc)}")
        return
    if workers.empty:
        show_no_worker(bold=False)
    else:
        for _, w in workers.iterrows():
            devices = format_devices(json.loads(w.devices))
            st.success(
                f"Worker alive · {w.slots} slot(s) on {devices} · last beat "
                f"{w.seconds_since_beat:.0f} s ago",
                icon=":material/bolt:",
            )
    queued = int((jobs["status"] == "queued").sum()) if len(jobs) else 0
    running = int((jobs["status"] == "running").sum()) if len(jobs) else 0
    st.metric("Jobs queued · running", f"{queued} · {running}")
