"""The admin pages: Accounts (add, set role, disable, remove) and the Audit log (filters,
CSV); and the store checked before any page reads it."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from pages.present.admin_tables import (
    accounts_table,
    audit_csv,
    lab_accounts_table,
    new_account_problems,
    role_mapping_table,
    upload_size_problem,
)
from pages.widgets.reads import STORE_UNUSABLE_TITLE
from pages.widgets.sign_in import TOKEN_KEY
from store import jobs as store_jobs
from store import sign_in as store_sign_in
from store import users as store_users
from store.audit import OIDC_SIGN_IN_DETAIL, read_audit, record
from store.db import default_store_path
from store.users import PASSWORD_RULE, Role
from tests.helpers.pages import PASSWORD, ROOT, signed_in


def _add(at: AppTest, name: str, role: str, password: str, again: str) -> AppTest:
    at.text_input(key="accounts_new_name").input(name)
    at.selectbox(key="accounts_new_role").set_value(role)
    at.text_input(key="accounts_new_password").input(password)
    at.text_input(key="accounts_new_again").input(again)
    return next(b for b in at.button if b.label == "Add the account").click().run()


def test_an_admin_adds_an_account_only_with_the_password_typed_twice_alike(path):
    at = signed_in("accounts", "ada", "admin", path).run()
    assert not at.exception
    _add(at, "mo", "member", PASSWORD, "something else")
    assert "the two passwords differ" in at.error[0].value
    assert store_users.list_users(path=path).name.tolist() == ["ada"]
    _add(at, "mo", "member", PASSWORD, PASSWORD)
    assert not at.exception and at.success[0].value == "Done: add mo (member)."
    assert store_users.get_user("mo", path=path).role == "member"
    shown = at.dataframe[0].value
    assert shown["Name"].tolist() == ["ada", "mo"]
    assert shown["Last sign-in"].tolist()[1] == "never"
    assert read_audit(action="user_add", path=path).actor.tolist()[0] == "ada"


def test_an_admin_sets_a_role_disables_and_removes_an_account(path):
    store_users.add_user("mo", "member", PASSWORD, path=path)
    at = signed_in("accounts", "ada", "admin", path).run()
    at.selectbox(key="accounts_pick").set_value("mo").run()
    at.selectbox(key="accounts_role_mo").set_value("viewer").run()
    at.button(key="accounts_set_role").click().run()
    assert store_users.get_user("mo", path=path).role == "viewer"
    at.button(key="accounts_toggle_disabled").click().run()
    assert store_users.get_user("mo", path=path).disabled
    assert at.button(key="accounts_remove").disabled  # not until "Yes, remove" is ticked
    at.checkbox(key="accounts_sure_mo").check().run()
    at.button(key="accounts_remove").click().run()
    assert not at.exception
    assert store_users.list_users(path=path).name.tolist() == ["ada"]
    actions = read_audit(actor="ada", path=path).action.tolist()
    assert actions[:3] == ["user_remove", "user_disable", "user_set_role"]


def test_the_last_admin_cannot_demote_disable_or_remove_themself(path):
    store_users.add_user("mo", "member", PASSWORD, path=path)
    at = signed_in("accounts", "ada", "admin", path).run()
    at.selectbox(key="accounts_pick").set_value("ada").run()
    at.selectbox(key="accounts_role_ada").set_value("member").run()
    at.button(key="accounts_set_role").click().run()
    assert "you are the last admin" in at.error[0].value
    at.button(key="accounts_toggle_disabled").click().run()
    assert "cannot disable your own account" in at.error[0].value
    at.checkbox(key="accounts_sure_ada").check().run()
    at.button(key="accounts_remove").click().run()
    assert "cannot remove your own account" in at.error[0].value
    account = store_users.get_user("ada", path=path)
    assert (account.role, account.disabled) == ("admin", False)


def test_the_first_account_added_in_single_user_mode_is_an_admin(path):
    at = AppTest.from_file(str(ROOT / "pages" / "accounts.py"), default_timeout=30).run()
    assert not at.exception
    assert "No accounts yet" in at.info[0].value
    assert not at.selectbox  # no role to pick: the first account is an admin
    at.text_input(key="accounts_new_name").input("ada")
    at.text_input(key="accounts_new_password").input(PASSWORD)
    at.text_input(key="accounts_new_again").input(PASSWORD)
    next(b for b in at.button if b.label == "Add the account").click().run()
    assert store_users.get_user("ada", path=path).role == "admin"
    assert read_audit(action="user_add", path=path).actor.tolist() == ["local"]


def test_the_audit_page_lists_lines_and_filters_by_person_action_and_day(path):
    store_users.add_user("mo", "member", PASSWORD, path=path)
    store_sign_in.sign_in("mo", PASSWORD, path=path)
    at = signed_in("audit", "ada", "admin", path).run()
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table.columns) == ["When", "Who", "Action", "Target", "Details"]
    assert {"sign_in", "user_add"} <= set(table["Action"])
    assert at.get("download_button")
    at.selectbox(key="audit_actor").set_value("mo").run()
    assert set(at.dataframe[0].value["Who"]) == {"mo"}
    at.selectbox(key="audit_action").set_value("user_add").run()
    assert at.info[0].value == "No audit lines match these filters."
    at.selectbox(key="audit_actor").set_value("(anyone)").run()
    assert at.dataframe[0].value["Target"].tolist() == ["ada", "mo"]  # newest first
    tomorrow = date.today() + timedelta(days=1)
    at.date_input(key="audit_since").set_value(tomorrow).run()
    assert at.info[0].value == "No audit lines match these filters."
    at.date_input(key="audit_until").set_value(date.today()).run()
    assert "'From' is after 'To'" in at.error[0].value


def test_audit_csv_and_accounts_table_read_as_shown():
    log = pd.DataFrame(
        {
            "logged_at": pd.to_datetime(["2026-11-26 10:00:01"]),
            "actor": ["ada"],
            "action": ["delete"],
            "target": ["study-1"],
            "detail": ["'doomed': 2 runs"],
        }
    )
    assert audit_csv(log).splitlines() == [
        "When,Who,Action,Target,Details",
        "2026-11-26T10:00:01,ada,delete,study-1,'doomed': 2 runs",
    ]
    accounts = pd.DataFrame(
        {
            "name": ["ada"],
            "role": ["admin"],
            "created_at": pd.to_datetime(["2026-11-01"]),
            "disabled": [False],
            "last_sign_in": [pd.NaT],
        }
    )
    assert accounts_table(accounts).iloc[0].to_dict() == {
        "Name": "ada",
        "Role": "admin",
        "Disabled": False,
        "Last sign-in": "never",
        "Added": "2026-11-01",
    }


def test_lab_accounts_show_the_role_their_mapping_gives_now():
    mapping = {"kim@lab.org": Role.ADMIN, "@lab.org": Role.VIEWER}
    sign_ins = pd.DataFrame(
        {
            "name": ["kim@lab.org", "lee@lab.org", "max@gone.org"],
            "first_sign_in": pd.to_datetime(["2026-11-01 09:00"] * 3),
            "last_sign_in": pd.to_datetime(
                ["2026-11-26 10:00", "2026-11-25 08:30", "2026-11-02 07:00"]
            ),
            "sign_ins": [3, 1, 1],
        }
    )
    table = lab_accounts_table(sign_ins, mapping)
    assert table["Role now"].tolist() == ["admin", "viewer", "no access (not in the mapping)"]
    assert table["Last sign-in"].tolist()[1] == "2026-11-25 08:30"
    assert table["Sign-ins"].tolist() == [3, 1, 1]
    rows = role_mapping_table(mapping)
    assert rows.values.tolist() == [["kim@lab.org", "admin"], ["@lab.org", "viewer"]]


def test_the_accounts_page_lists_people_who_signed_in_with_a_lab_account(
    path, tmp_path, monkeypatch
):
    roles = tmp_path / "roles.txt"
    roles.write_text("kim@lab.org member\n@lab.org viewer\n")
    monkeypatch.setenv("SOFTGRADE_OIDC_ROLES", str(roles))
    record(
        "sign_in", actor="kim@lab.org", target="kim@lab.org", detail=OIDC_SIGN_IN_DETAIL, path=path
    )
    at = signed_in("accounts", "ada", "admin", path).run()
    assert not at.exception
    assert "Lab accounts (the identity provider)" in [h.value for h in at.subheader]
    frames = [d.value for d in at.dataframe]
    mapping = next(f for f in frames if "E-mail or domain" in f)
    assert mapping.values.tolist() == [["kim@lab.org", "member"], ["@lab.org", "viewer"]]
    seen = next(f for f in frames if "E-mail" in f and "Role now" in f)
    assert seen[["E-mail", "Role now", "Sign-ins"]].values.tolist() == [
        ["kim@lab.org", "member", 1]
    ]


def test_the_accounts_page_has_no_lab_accounts_section_without_an_identity_provider(path):
    at = signed_in("accounts", "ada", "admin", path).run()
    assert not at.exception
    assert "Lab accounts (the identity provider)" not in [h.value for h in at.subheader]


def test_a_new_accounts_problems_are_all_listed():
    assert new_account_problems("mo", "member", PASSWORD, PASSWORD) == []
    assert (
        "most common passwords" in new_account_problems("mo", "member", "password", "password")[0]
    )
    assert new_account_problems(" bad name", "boss", "short", "shorter") == [
        "a name is 1 to 64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit",
        "the role must be one of viewer, member, admin",
        f"too short: a password needs {PASSWORD_RULE}",
        "the two passwords differ",
    ]


def test_upload_size_is_checked_against_the_limit():
    assert upload_size_problem("knee.png", 2**20, 1) is None
    assert upload_size_problem("knee.dcm", 3 * 2**20, 2) == (
        "knee.dcm is 3.0 MB; Grade a film takes films up to 2 MB (`python -m jobs up "
        "--max-upload-mb N` sets the limit)."
    )


# -- a store the app cannot use: one message on every page, nothing changed --------------------


def _broken_store(home: Path, content: bytes) -> Path:
    store = default_store_path()
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_bytes(content)
    return store


def _healthy_store_bytes(tmp_path: Path) -> bytes:
    from store.db import init_schema

    good = tmp_path / "good.duckdb"
    init_schema(good)
    store_users.add_user("ada", "admin", PASSWORD, path=good)
    return good.read_bytes()


def _assert_one_message_and_untouched(store: Path, before: bytes, page: str) -> None:
    at = AppTest.from_file(str(ROOT / page), default_timeout=30)
    at.session_state[TOKEN_KEY] = "whatever"
    at.run()
    assert not at.exception
    assert len(at.error) == 1 and at.error[0].value.startswith(f"**{STORE_UNUSABLE_TITLE}.**")
    assert "Nothing in it was changed" in at.error[0].value
    assert store.read_bytes() == before
    assert not Path(f"{store}.wal").exists()


def test_a_file_that_is_not_duckdb_gives_one_message_on_every_page(home):
    before = b"name,grade\nknee1,2\n" * 50
    store = _broken_store(home, before)
    for page in ("app.py", "pages/compare.py", "pages/queue.py", "pages/accounts.py"):
        _assert_one_message_and_untouched(store, before, page)


def test_a_truncated_store_gives_one_message_and_is_left_alone(home, tmp_path):
    data = _healthy_store_bytes(tmp_path)
    before = data[: len(data) // 2]
    store = _broken_store(home, before)
    for page in ("app.py", "pages/demo.py"):
        _assert_one_message_and_untouched(store, before, page)


def test_the_audit_log_names_studies_and_leaves_missing_details_blank(path):
    study_id = store_jobs.enqueue_job({"name": "knees"}, path=path)
    study_id = store_jobs.get_job(study_id, path=path).study_id
    record("archive", actor="ada", target=study_id, path=path)  # no details
    record("delete", actor="ada", target="study-gone", detail="'old' deleted", path=path)
    at = signed_in("audit", "ada", "admin", path).run()
    assert not at.exception
    table = at.dataframe[0].value
    archive = table[table["Action"] == "archive"].iloc[0]
    assert archive["Target"] == f"knees ({study_id})"
    assert archive["Details"] == ""
    assert "None" not in set(table["Details"]) and "None" not in set(table["Target"])
    gone = table[table["Action"] == "delete"].iloc[0]
    assert gone["Target"] == "study-gone"  # a deleted study keeps its id
