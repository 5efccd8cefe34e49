"""The Jobs page's controls on one job: Cancel while it may still run, Resume once cancelled
or failed (its failed runs are trained again).

Both go through the role-checked verbs of `jobs.services.lab` (`cancel_job`, `resume_job`;
``python -m jobs cancel`` and ``resume`` do the same), so a stale button cannot act on another
person's job. Whoever may cancel a job may resume it: members their own, admins any; a viewer
gets no button at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from jobs.services import lab
from jobs.services.access import ACTIONS_BY_ROLE, AccessDenied, Action, can
from jobs.services.page_store import Account, StoreError
from pages.present.job_view import cancel_text, resume_text, value
from pages.widgets.reads import clear_job_caches, store_path
from pages.widgets.sign_in import current_account

MESSAGE_KEY = "queue_message"  # (kind, text) the Jobs page shows once after a click


def _act(verb: str, job_id: str) -> None:
    """Button callback: ``verb`` ("cancel" or "resume") the job as the signed-in person and
    leave what happened for the page to say."""
    do: Callable[..., str] = lab.cancel_job if verb == "cancel" else lab.resume_job
    said = cancel_text if verb == "cancel" else resume_text
    account = current_account()
    try:
        if account is None:
            raise AccessDenied("sign in again: the session has ended")
        status = do(account, job_id, path=store_path())
    except (StoreError, AccessDenied) as exc:
        st.session_state[MESSAGE_KEY] = ("error", f"Could not {verb} {job_id}: {exc}")
        return
    finally:
        clear_job_caches()
    st.session_state[MESSAGE_KEY] = ("info", said(job_id, str(status)))


def job_action(column: Any, job: Any, account: Account) -> None:
    """Cancel (queued or running) or Resume (cancelled or failed) in ``column``, disabled
    with the reason for a job another member launched; nothing for a viewer or a job that
    succeeded."""
    status = str(job.status)
    if status not in ("queued", "running", "cancelled", "failed"):
        return
    owner = value(job, "launched_by")
    allowed = can(account, Action.CANCEL_OWN, owner=owner)
    if not allowed and Action.CANCEL_OWN not in ACTIONS_BY_ROLE[account.role]:
        return  # a viewer cancels and resumes nothing: no button at all
    someone = owner or "someone else"
    if status in ("cancelled", "failed"):
        column.button(
            "Resume",
            key=f"queue_resume_{job.job_id}",
            on_click=_act,
            args=("resume", job.job_id),
            icon=":material/play_circle:",
            disabled=not allowed,
            help="Queue it again: a worker goes on from its first unfinished run, keeps the "
            "runs it finished and trains any failed run again."
            if allowed
            else f"Launched by {someone}: only they or an admin may resume it.",
        )
        return
    asked = bool(job.cancel_requested) and status == "running"
    column.button(
        "Stopping…" if asked else "Cancel",
        key=f"queue_cancel_{job.job_id}",
        on_click=_act,
        args=("cancel", job.job_id),
        icon=":material/stop_circle:",
        disabled=asked or not allowed,
        help="A queued job is dropped; a running one stops at its next epoch boundary and "
        "keeps the runs it finished."
        if allowed
        else f"Launched by {someone}: only they or an admin may cancel it.",
    )
