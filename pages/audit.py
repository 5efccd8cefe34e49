"""Audit log (admins only): who signed in, launched, cancelled, imported, archived, deleted
and changed accounts, and when; filtered by person, action and days, and downloadable."""

from __future__ import annotations

import streamlit as st

from jobs.services import lab
from jobs.services.page_store import AUDIT_ACTIONS, StoreError, audit_actors
from pages.present.admin_tables import audit_csv, audit_table
from pages.present.user_text import said
from pages.widgets.reads import cached_studies, store_path
from pages.widgets.shell import page_title, run_inside_shell
from pages.widgets.sign_in import require_page

ANY = "(anyone)"


def study_names(path: str) -> dict[str, str]:
    """Study id -> name of every study in the store (archived too), for the Target column."""
    try:
        studies = cached_studies(path, include_archived=True)
    except StoreError:
        return {}
    return dict(zip(studies["study_id"], studies["name"].astype(str), strict=True))


ANY_ACTION = "(any action)"

run_inside_shell()
ACCOUNT = require_page(__file__)
page_title("Audit log")
st.caption(
    "Every sign-in, launch, cancel, import, rename, note, archive, delete, backup and account "
    "change, newest first. 'local' is the command line or single-user mode; a backup names "
    "the operating system's user who ran it."
)
path = store_path()
try:
    people = audit_actors(path=path)
except StoreError as exc:
    st.error(f"The audit log cannot be read right now: {said(exc)}")
    st.stop()
who_column, action_column, since_column, until_column, limit_column = st.columns(5)
who = who_column.selectbox("Person", [ANY, *people], key="audit_actor")
action = action_column.selectbox("Action", [ANY_ACTION, *sorted(AUDIT_ACTIONS)], key="audit_action")
since = since_column.date_input("From", value=None, key="audit_since")
until = until_column.date_input("To", value=None, key="audit_until")
limit = limit_column.number_input("Lines", 10, 100_000, 500, step=100, key="audit_limit")
if since and until and since > until:
    st.error("'From' is after 'To': pick a 'From' day on or before the 'To' day.")
    st.stop()
log = lab.audit_log(
    ACCOUNT,
    actor=None if who == ANY else who,
    action=None if action == ANY_ACTION else action,
    since=since,
    until=until,
    limit=int(limit),
    path=path,
)
if log.empty:
    st.info("No audit lines match these filters.")
    st.stop()
st.caption(
    f"{len(log)} line(s)" + (" (the newest; raise 'Lines' for more)" if len(log) == limit else "")
)
names = study_names(str(path))
st.dataframe(audit_table(log, names), hide_index=True, width="stretch")
st.download_button(
    "Download as CSV",
    audit_csv(log, names),
    file_name="softgrade-audit.csv",
    mime="text/csv",
    key="audit_csv",
    icon=":material/download:",
)
