"""The Jobs page's "Manage a study" section: rename, tags, notes, archive, delete.

Shared widgets (streamlit). Each change goes through `jobs.services.lab`, which checks the role
again
and writes the audit line: members rename and annotate the studies they launched, admins any
study; only admins archive, bring back and delete (after typing the study's exact name).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit as st

from jobs.services import lab
from jobs.services.access import AccessDenied, Action, can
from jobs.services.page_store import Account, StoreError, Study, get_study
from pages.present.user_text import plain, said
from pages.widgets.pickers import cached_study_card, forget, picker_labels
from pages.widgets.reads import cached_studies, clear_job_caches, forget_studies, store_path
from pages.widgets.sign_in import current_account

PICK_KEY = "manage_study"
MESSAGE_KEY = "manage_message"


def say(kind: str, text: str) -> None:
    """Keep a message for the section's next run."""
    st.session_state[MESSAGE_KEY] = (kind, text)


def _forget_caches() -> None:
    forget_studies()
    cached_study_card.clear()
    clear_job_caches()


def _as_signed_in(verb: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
    """Run a `jobs.services.lab` verb as whoever is signed in now; say what went wrong."""
    account = current_account()
    try:
        if account is None:
            raise AccessDenied("sign in again: the session has ended")
        call(account, *args, path=store_path(), **kwargs)
    except (AccessDenied, ValueError, StoreError) as exc:
        say("error", f"Could not {verb}: {said(exc)}")
        return False
    finally:
        _forget_caches()
    return True


def save_edits(study: Study) -> None:
    """Form callback: store what changed of the name, tags and notes."""
    state = st.session_state
    sid = study.study_id
    name = " ".join(str(state.get(f"manage_name_{sid}", study.name)).split())
    tags = [t for t in str(state.get(f"manage_tags_{sid}", "")).split(",") if t.strip()]
    notes = str(state.get(f"manage_notes_{sid}", study.notes or "")).strip()
    done = []
    if name != study.name:
        if not _as_signed_in("rename the study", lab.rename_study, sid, name):
            return
        done.append(f"renamed to {name!r}")
    if tuple(" ".join(t.split()) for t in tags) != study.tags:
        if not _as_signed_in("set the tags", lab.set_tags, sid, tags):
            return
        done.append("tags saved")
    if notes != (study.notes or ""):
        if not _as_signed_in("save the notes", lab.set_notes, sid, notes):
            return
        done.append("notes saved")
    say("success", ("; ".join(done) or "nothing changed") + ".")


def set_archived(study: Study, archived: bool) -> None:
    """Button callback: archive the study or bring it back."""
    verb = "archive" if archived else "bring back"
    if _as_signed_in(f"{verb} the study", lab.archive_study, study.study_id, archived=archived):
        say(
            "success",
            f"{plain(study.name)} is archived: hidden from the result pages' pickers (their "
            "'Show archived studies' brings it back), every run kept."
            if archived
            else f"{plain(study.name)} is back in the result pages' pickers.",
        )


def delete(study: Study) -> None:
    """Button callback: delete the study for good once its exact name was typed."""
    typed = str(st.session_state.get(f"manage_delete_name_{study.study_id}", ""))
    account = current_account()
    try:
        if account is None:
            raise AccessDenied("sign in again: the session has ended")
        gone = lab.delete_study(account, study.study_id, confirm_name=typed, path=store_path())
    except (AccessDenied, ValueError, StoreError) as exc:
        say("error", f"Could not delete the study: {said(exc)}")
        return
    finally:
        _forget_caches()
    forget(PICK_KEY)
    rows = sum(gone.rows.values())
    left = f"; left in place: {', '.join(gone.files_left)}" if gone.files_left else ""
    say(
        "success",
        f"Deleted {plain(gone.name)}: {rows} rows and {len(gone.files_removed)} checkpoint file(s)"
        f"{left}. The audit log keeps the deletion.",
    )


def show_edit_form(account: Account, study: Study) -> None:
    """Name, tags and notes, editable by whoever `jobs.services.access` allows."""
    sid = study.study_id
    allowed = can(account, Action.EDIT_OWN_STUDY, owner=study.launched_by)
    if not allowed:
        st.caption(
            f"Launched by {plain(study.launched_by or 'someone else')}: only they or an admin may "
            "rename or annotate it."
        )
    with st.form(f"manage_form_{sid}", border=False):
        st.text_input("Name", value=study.name, key=f"manage_name_{sid}", disabled=not allowed)
        st.text_input(
            "Tags (separated by commas)",
            value=", ".join(study.tags),
            key=f"manage_tags_{sid}",
            disabled=not allowed,
        )
        st.text_area(
            "Notes (markdown; shown under the result pages' study picker)",
            value=study.notes or "",
            key=f"manage_notes_{sid}",
            disabled=not allowed,
        )
        st.form_submit_button(
            "Save", on_click=save_edits, args=(study,), disabled=not allowed, key="manage_save"
        )


def show_admin_actions(account: Account, study: Study) -> None:
    """Archive or bring back; delete after typing the name (admins only)."""
    if can(account, Action.ARCHIVE):
        st.button(
            "Bring back" if study.archived else "Archive",
            key="manage_archive",
            on_click=set_archived,
            args=(study, not study.archived),
            icon=":material/unarchive:" if study.archived else ":material/archive:",
            help="Archived studies are hidden from the result pages' pickers, kept in full.",
        )
    if not can(account, Action.DELETE):
        return
    typed = st.text_input(
        f"To delete it for good, type its name: {plain(study.name)}",
        key=f"manage_delete_name_{study.study_id}",
        help="Its runs, predictions, learning curves, checkpoints and jobs go; datasets and "
        "other studies stay. A backup (`python -m jobs backup`) is the only way back.",
    )
    st.button(
        "Delete the study",
        key="manage_delete",
        type="primary",
        icon=":material/delete_forever:",
        on_click=delete,
        args=(study,),
        disabled=typed.strip() != study.name,
    )


def keep_pick_valid(options: list[str]) -> None:
    """Set the picker to the first study when its value is gone (deleted) or was never set.

    Only dropping the value let the browser keep drawing the deleted study's name while the
    form below edited another study (Archive or Save would act on a study the picker did
    not name). Setting it explicitly makes the browser draw the study the form acts on.
    """
    if st.session_state.get(PICK_KEY) not in options:
        st.session_state[PICK_KEY] = options[0]


def manage_study_section(account: Account, path: Path) -> None:
    """The "Manage a study" expander: pick any study (archived ones too), then edit it."""
    with st.expander(
        "Manage a study: name, tags, notes, archive, delete", icon=":material/edit_note:"
    ):
        if message := st.session_state.pop(MESSAGE_KEY, None):
            (st.error if message[0] == "error" else st.success)(message[1])
        try:
            studies = cached_studies(str(path), include_archived=True)
        except StoreError as exc:
            st.warning(f"The studies cannot be read right now: {said(exc)}")
            return
        if studies.empty:
            st.caption("No studies yet.")
            return
        labels = picker_labels(studies)
        keep_pick_valid(list(labels))
        study_id = st.selectbox("Study", list(labels), format_func=labels.__getitem__, key=PICK_KEY)
        try:
            study = get_study(study_id, path=path)
        except StoreError as exc:
            st.warning(f"This study cannot be read right now: {said(exc)}")
            return
        show_edit_form(account, study)
        show_admin_actions(account, study)
