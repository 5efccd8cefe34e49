"""Accounts (admins only): who may sign in, with which role; add, change, disable, remove.

Every change goes through `jobs.services.lab` (role-checked again, and logged in the audit log under
the admin's name). The last enabled admin cannot remove, demote or disable themself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from jobs.services import lab
from jobs.services.access import LOCAL_ACCOUNT, AccessDenied
from jobs.services.page_store import PASSWORD_RULE, Role, StoreError
from pages.present.admin_tables import (
    accounts_table,
    lab_accounts_table,
    new_account_problems,
    role_mapping_table,
)
from pages.present.user_text import plain, said
from pages.widgets.reads import store_path
from pages.widgets.shell import page_title, run_inside_shell
from pages.widgets.sign_in import current_account, oidc_configured, oidc_role_mapping, require_page

MESSAGE_KEY = "accounts_message"
ROLES = [r.value for r in Role]


def say(kind: str, text: str) -> None:
    """Keep a message for the next run of the page (callbacks run before it)."""
    st.session_state[MESSAGE_KEY] = (kind, text)


def act(verb: str, call: Callable[..., Any], *args: Any) -> bool:
    """Button callback: run a `jobs.services.lab` account verb as the signed-in admin, and say how
    it
    went; True when it was done."""
    account = current_account()
    try:
        if account is None:
            raise AccessDenied("sign in again: the session has ended")
        call(account, *args, path=store_path())
    except (AccessDenied, ValueError, StoreError) as exc:
        say("error", f"Could not {verb}: {said(exc)}")
        return False
    say("success", f"Done: {verb}.")
    return True


def act_on_click(verb: str, call: Callable[..., Any], *args: Any) -> None:
    """`act` as a button's callback (Streamlit wants one that returns nothing; the page says
    how it went)."""
    act(verb, call, *args)


def add_account(first: bool) -> None:
    """Form callback: check the form, then add the account."""
    state = st.session_state
    name = str(state.get("accounts_new_name", "")).strip()
    role = "admin" if first else str(state.get("accounts_new_role", ""))
    password, again = state.get("accounts_new_password", ""), state.get("accounts_new_again", "")
    if problems := new_account_problems(name, role, password, again):
        say("error", "The account was not added: " + "; ".join(problems) + ".")
        return
    if not act(f"add {name} ({role})", lab.add_account, name, role, password):
        return
    for key in ("accounts_new_name", "accounts_new_password", "accounts_new_again"):
        state[key] = ""


def show_add_form(first: bool) -> None:
    """Name, role and the password typed twice."""
    with st.form("accounts_add", border=True):
        st.markdown("**Add an account**")
        st.text_input("Name", key="accounts_new_name", help="Letters, digits, . _ @ -")
        if first:
            st.caption(
                "The first account must be an admin. Once it exists, SoftGrade asks everyone "
                "to sign in, this browser included."
            )
        else:
            st.selectbox("Role", ROLES, key="accounts_new_role")
        st.text_input("Password", type="password", key="accounts_new_password")
        st.text_input("The same password again", type="password", key="accounts_new_again")
        st.caption(f"A password needs {PASSWORD_RULE}.")
        st.form_submit_button("Add the account", on_click=add_account, args=(first,))


def show_changes(names: list[str], roles: dict[str, str], disabled: dict[str, bool]) -> None:
    """Pick an account; set its role, disable or enable it, or remove it."""
    st.markdown("**Change an account**")
    name = st.selectbox("Account", names, key="accounts_pick")
    role_column, state_column, remove_column = st.columns(3, vertical_alignment="bottom")
    role = role_column.selectbox(
        "Role", ROLES, index=ROLES.index(roles[name]), key=f"accounts_role_{name}"
    )
    role_column.button(
        "Set role",
        key="accounts_set_role",
        on_click=act_on_click,
        args=(f"make {name} {role}", lab.set_account_role, name, role),
        disabled=role == roles[name],
    )
    is_disabled = disabled[name]
    state_column.button(
        "Enable" if is_disabled else "Disable",
        key="accounts_toggle_disabled",
        on_click=act_on_click,
        args=(
            f"{'enable' if is_disabled else 'disable'} {name}",
            lab.set_account_disabled,
            name,
            not is_disabled,
        ),
        help="A disabled account cannot sign in; its open sessions end.",
    )
    sure = remove_column.checkbox(f"Yes, remove {plain(name)}", key=f"accounts_sure_{name}")
    remove_column.button(
        "Remove",
        key="accounts_remove",
        on_click=act_on_click,
        args=(f"remove {name}", lab.remove_account, name),
        disabled=not sure,
        help="Studies they launched keep their name.",
    )


def show_lab_accounts(sign_ins: Any) -> None:
    """People who sign in through the lab's identity provider: the e-mail mapping that gives
    them a role, and everyone who has signed in that way."""
    st.subheader("Lab accounts (the identity provider)")
    st.caption(
        "These people sign in with the lab's own account, so they have no row above: the "
        "role comes from the e-mail mapping (`[softgrade.roles]` in .streamlit/secrets.toml, "
        "or the file named by SOFTGRADE_OIDC_ROLES; docs/security.md). Change a role there; "
        "it applies from their next page."
    )
    try:
        mapping = oidc_role_mapping()
    except ValueError as exc:
        st.error(f"The e-mail mapping is misconfigured, so nobody gets in that way: {said(exc)}")
        mapping = {}
    if mapping:
        st.markdown("**Who may sign in, by e-mail or domain**")
        st.dataframe(role_mapping_table(mapping), hide_index=True, width="content")
    elif oidc_configured():
        st.warning("The e-mail mapping is empty: nobody can sign in with a lab account yet.")
    if sign_ins.empty:
        st.caption("Nobody has signed in with a lab account yet.")
    else:
        st.markdown("**Who has signed in that way**")
        st.dataframe(lab_accounts_table(sign_ins, mapping), hide_index=True, width="content")


run_inside_shell()
ACCOUNT = require_page(__file__)
page_title("Accounts")
st.caption(
    "Who may sign in, and what each role may do: viewers read results and grade films; "
    "members also launch studies, import films and cancel their own jobs; admins also "
    "cancel any job, archive and delete studies, and manage accounts. Every change is in the "
    "audit log. `python -m jobs users ...` does the same from a terminal."
)
if message := st.session_state.pop(MESSAGE_KEY, None):
    (st.error if message[0] == "error" else st.success)(message[1])
try:
    accounts = lab.list_accounts(ACCOUNT, path=store_path())
    lab_sign_ins = lab.list_lab_account_sign_ins(ACCOUNT, path=store_path())
except StoreError as exc:
    st.error(f"The accounts cannot be read right now: {said(exc)}")
    st.stop()
if accounts.empty:
    st.info(
        "No accounts yet: SoftGrade runs in single-user mode on 127.0.0.1. Add an admin to "
        "serve it to the lab (`python -m jobs up --host 0.0.0.0` needs one).",
        icon=":material/person_off:",
    )
else:
    st.dataframe(accounts_table(accounts), hide_index=True, width="content")
if ACCOUNT is LOCAL_ACCOUNT and not accounts.empty:
    st.caption("Signed in as the local admin (single-user mode): no account is enabled.")
show_add_form(first=accounts.empty)
if not accounts.empty:
    show_changes(
        accounts["name"].tolist(),
        dict(zip(accounts["name"], accounts["role"], strict=True)),
        dict(zip(accounts["name"], accounts["disabled"].astype(bool), strict=True)),
    )
if oidc_configured() or not lab_sign_ins.empty:
    show_lab_accounts(lab_sign_ins)
