"""Accounts, passwords, sessions and the audit lines they leave."""

from __future__ import annotations

from datetime import date, timedelta

import duckdb
import pandas as pd
import pytest
from argon2 import PasswordHasher

from store import sign_in as store_sign_in
from store import users
from store.audit import read_audit, record
from store.db import StoreError, connect
from store.users import Role, SignInError

PASSWORD = "correct horse"


def test_added_account_verifies_with_its_password_only(store):
    account = users.add_user("alice", "member", PASSWORD, by="root", path=store)
    assert account.name == "alice" and account.role is Role.MEMBER
    assert users.verify_password("alice", PASSWORD, path=store) == users.get_user(
        "alice", path=store
    )
    assert users.verify_password("alice", "wrong password", path=store) is None
    assert users.verify_password("nobody", PASSWORD, path=store) is None


def _stored_hash(store) -> str:
    with connect(store, read_only=True) as con:
        return con.execute("SELECT password_hash FROM users").fetchone()[0]


@pytest.mark.real_password_hash
def test_password_is_stored_only_as_an_argon2id_hash_at_the_librarys_default_cost(store):
    users.add_user("alice", "viewer", PASSWORD, path=store)
    hashed = _stored_hash(store)
    assert hashed.startswith("$argon2id$") and PASSWORD not in hashed
    defaults = PasswordHasher()
    params = f"m={defaults.memory_cost},t={defaults.time_cost},p={defaults.parallelism}$"
    assert params in hashed


def test_a_hash_made_at_a_lower_cost_is_upgraded_when_its_password_is_given(store, monkeypatch):
    users.add_user("alice", "viewer", PASSWORD, path=store)  # the tests' cheap hash
    cheap = _stored_hash(store)
    monkeypatch.setattr(users, "_HASHER", PasswordHasher())  # the store's own default
    assert users.verify_password("alice", "wrong password", path=store) is None
    assert _stored_hash(store) == cheap  # a wrong password changes nothing
    assert users.verify_password("alice", PASSWORD, path=store) is not None
    upgraded = _stored_hash(store)
    assert upgraded != cheap and not PasswordHasher().check_needs_rehash(upgraded)
    assert users.verify_password("alice", PASSWORD, path=store) is not None


@pytest.mark.parametrize(
    ("name", "role", "password", "message"),
    [
        ("al ice", "member", PASSWORD, "account name 'al ice' is not allowed"),
        ("alice", "owner", PASSWORD, "unknown role 'owner'; a role is one of viewer, member"),
        ("alice", "member", "short", "at least 8 characters"),
    ],
)
def test_bad_account_input_is_refused_with_what_is_allowed(store, name, role, password, message):
    with pytest.raises(ValueError, match=message):
        users.add_user(name, role, password, path=store)
    assert users.list_users(path=store).empty


def test_role_outside_the_schema_check_is_rejected_by_the_store(store):
    with pytest.raises(duckdb.ConstraintException), connect(store) as con:
        con.execute("INSERT INTO users (name, role, password_hash) VALUES ('x', 'root', 'h')")


def test_duplicate_name_is_refused(store):
    users.add_user("alice", "member", PASSWORD, path=store)
    with pytest.raises(StoreError, match="'alice' exists already"):
        users.add_user("alice", "admin", PASSWORD, path=store)


def test_has_accounts_counts_enabled_accounts_only(store, tmp_path):
    assert not users.has_accounts(path=tmp_path / "absent.duckdb")
    assert not users.has_accounts(path=store)
    users.add_user("alice", "member", PASSWORD, path=store)
    assert users.has_accounts(path=store)
    users.set_disabled("alice", True, path=store)
    assert not users.has_accounts(path=store)


def test_set_role_and_remove_change_the_account_and_are_audited(store):
    users.add_user("root", "admin", PASSWORD, path=store)
    users.add_user("alice", "viewer", PASSWORD, path=store)
    assert users.set_role("alice", "admin", by="root", path=store).role is Role.ADMIN
    users.remove_user("alice", by="root", path=store)
    assert users.list_users(path=store).name.tolist() == ["root"]
    log = read_audit(path=store)
    assert log.action.tolist()[:2] == ["user_remove", "user_set_role"]
    assert log.iloc[1].detail == "viewer -> admin" and log.iloc[0].actor == "root"


def test_the_last_admin_cannot_be_removed_demoted_or_disabled_while_others_remain(store):
    users.add_user("root", "admin", PASSWORD, path=store)
    users.add_user("alice", "member", PASSWORD, path=store)
    for call in (
        lambda: users.remove_user("root", path=store),
        lambda: users.set_role("root", "member", path=store),
        lambda: users.set_disabled("root", True, path=store),
    ):
        with pytest.raises(StoreError, match="last admin"):
            call()
    assert users.get_user("root", path=store).role is Role.ADMIN
    users.set_role("alice", "admin", path=store)
    users.set_role("root", "member", path=store)  # another admin now exists


def test_session_token_signs_in_until_revoked(store):
    users.add_user("alice", "member", PASSWORD, path=store)
    account, token = store_sign_in.sign_in("alice", PASSWORD, client="10.0.0.7", path=store)
    assert account.name == "alice"
    assert users.validate_session(token, path=store).role is Role.MEMBER
    assert users.validate_session("forged", path=store) is None
    assert users.validate_session(None, path=store) is None
    users.sign_out(token, path=store)
    assert users.validate_session(token, path=store) is None
    assert read_audit(path=store).action.tolist()[:2] == ["sign_out", "sign_in"]


def test_session_token_itself_is_not_stored(store):
    users.add_user("alice", "member", PASSWORD, path=store)
    token = users.create_session("alice", path=store)
    with connect(store, read_only=True) as con:
        stored = con.execute("SELECT token_sha256 FROM sessions").fetchall()
    assert len(stored) == 1 and token not in stored[0][0]


def test_idle_session_expires(store):
    users.add_user("alice", "member", PASSWORD, path=store)
    token = users.create_session("alice", path=store)
    with connect(store) as con:
        con.execute("UPDATE sessions SET last_seen_at = last_seen_at - INTERVAL 2 HOUR")
    assert users.validate_session(token, idle_s=3600, path=store) is None
    assert users.validate_session(token, idle_s=3 * 3600, path=store) is not None


def test_using_a_session_refreshes_its_last_use(store):
    users.add_user("alice", "member", PASSWORD, path=store)
    token = users.create_session("alice", path=store)
    with connect(store) as con:
        con.execute("UPDATE sessions SET last_seen_at = last_seen_at - INTERVAL 50 MINUTE")
    assert users.validate_session(token, idle_s=3600, path=store) is not None
    with connect(store) as con:
        con.execute("UPDATE sessions SET last_seen_at = last_seen_at - INTERVAL 50 MINUTE")
    assert users.validate_session(token, idle_s=3600, path=store) is not None


def test_session_idle_hours_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("SOFTGRADE_SESSION_IDLE_H", "0.5")
    assert users.session_idle_s() == 1800
    monkeypatch.setenv("SOFTGRADE_SESSION_IDLE_H", "soon")
    with pytest.raises(ValueError, match="not a number of hours"):
        users.session_idle_s()


def test_new_role_applies_to_an_open_session_and_disabling_ends_it(store):
    users.add_user("root", "admin", PASSWORD, path=store)
    users.add_user("alice", "member", PASSWORD, path=store)
    token = users.create_session("alice", path=store)
    users.set_role("alice", "viewer", path=store)
    assert users.validate_session(token, path=store).role is Role.VIEWER
    users.set_disabled("alice", True, path=store)
    assert users.validate_session(token, path=store) is None
    users.set_disabled("alice", False, path=store)
    assert users.validate_session(token, path=store) is None  # sign in again


def test_wrong_password_and_disabled_account_fail_alike_and_are_audited(store):
    users.add_user("root", "admin", PASSWORD, path=store)
    users.add_user("alice", "member", PASSWORD, path=store)
    users.set_disabled("alice", True, path=store)
    messages = set()
    for name, password in (("root", "nope nope"), ("alice", PASSWORD), ("ghost", PASSWORD)):
        with pytest.raises(SignInError) as caught:
            store_sign_in.sign_in(name, password, path=store)
        messages.add(str(caught.value))
    assert len(messages) == 1
    failed = read_audit(action="sign_in_failed", path=store)
    assert sorted(failed.target) == ["alice", "ghost", "root"]


def test_new_password_ends_sessions_and_replaces_the_old_one(store):
    users.add_user("alice", "member", PASSWORD, path=store)
    token = users.create_session("alice", path=store)
    users.set_password("alice", "battery staple", path=store)
    assert users.validate_session(token, path=store) is None
    assert users.verify_password("alice", PASSWORD, path=store) is None
    assert users.verify_password("alice", "battery staple", path=store) is not None


def test_audit_refuses_unknown_actions_and_filters(store):
    record("import", actor="alice", target="/data/films", detail="40 films", path=store)
    record("launch", actor="bob", target="study-1", path=store)
    with pytest.raises(ValueError, match="unknown audit action 'imported'"):
        record("imported", actor="alice", path=store)
    assert read_audit(actor="alice", path=store).target.tolist() == ["/data/films"]
    assert read_audit(action="launch", path=store).actor.tolist() == ["bob"]
    assert len(read_audit(limit=1, path=store)) == 1


def test_accounts_list_their_last_sign_in_from_the_audit_log(store):
    users.add_user("ada", "admin", "correct horse", path=store)
    users.add_user("mo", "member", "correct horse", path=store)
    store_sign_in.sign_in("ada", "correct horse", path=store)
    with pytest.raises(users.SignInError):
        store_sign_in.sign_in("mo", "wrong password", path=store)  # a failed attempt is no sign-in
    listed = users.list_users(path=store).set_index("name")
    assert (
        listed.loc["ada", "last_sign_in"] == read_audit(action="sign_in", path=store).logged_at[0]
    )
    assert pd.isna(listed.loc["mo", "last_sign_in"])


def test_audit_lines_filter_by_day(store):
    record("backup", actor="root", target="b.duckdb", path=store)
    today = date.today()
    assert read_audit(since=today, until=today, path=store).action.tolist() == ["backup"]
    assert read_audit(since=today + timedelta(days=1), path=store).empty
    assert read_audit(until=today - timedelta(days=1), path=store).empty


def test_lab_account_sign_ins_count_only_identity_provider_sign_ins_per_person(store):
    from store.audit import OIDC_SIGN_IN_DETAIL, lab_account_sign_ins

    users.add_user("ada", "admin", "a long enough password", path=store)
    store_sign_in.sign_in(
        "ada", "a long enough password", path=store
    )  # a password sign-in: not listed
    for email in ("kim@lab.org", "lee@lab.org", "kim@lab.org"):
        record("sign_in", actor=email, target=email, detail=OIDC_SIGN_IN_DETAIL, path=store)
    seen = lab_account_sign_ins(path=store)
    assert seen["name"].tolist() == ["kim@lab.org", "lee@lab.org"]  # latest sign-in first
    assert seen["sign_ins"].tolist() == [2, 1]
    assert (seen["first_sign_in"] <= seen["last_sign_in"]).all()


@pytest.mark.parametrize(
    ("password", "why"),
    [
        ("password", "most common passwords"),
        ("12345678", "most common passwords"),
        ("PassWord1", "most common passwords"),
        (" " * 8, "too short"),
        ("  short  ", "too short"),
        ("aaaaaaaaaaaa", "too few different characters"),
        ("Alice.Smith", "the account's name"),
    ],
)
def test_weak_passwords_are_refused_when_added_or_changed(store, password, why):
    with pytest.raises(ValueError, match=why):
        users.add_user("alice.smith", "member", password, path=store)
    users.add_user("alice.smith", "member", PASSWORD, path=store)
    with pytest.raises(ValueError, match=why):
        users.set_password("alice.smith", password, path=store)
    assert users.verify_password("alice.smith", PASSWORD, path=store) is not None


def test_the_common_password_list_is_shipped_and_large():
    common = users.common_passwords()
    assert len(common) > 10_000 and {"password", "12345678", "iloveyou"} <= common
    assert all(len(p) >= users.MIN_PASSWORD_CHARS for p in common)


def _fail(store, name: str, times: int, client: str | None = None, **kw) -> None:
    for _ in range(times):
        with pytest.raises(SignInError, match="wrong name or password"):
            store_sign_in.sign_in(name, "wrong password", client=client, path=store, **kw)


def test_five_wrong_passwords_lock_the_account_even_against_the_right_one(store):
    users.add_user("alice", "member", PASSWORD, path=store)
    _fail(store, "alice", store_sign_in.SIGN_IN_LIMITS.per_account)
    with pytest.raises(store_sign_in.SignInLockedError, match=r"try again in (2\d|30) s"):
        store_sign_in.sign_in("alice", PASSWORD, path=store)
    log = read_audit(path=store)
    assert (log.action == "sign_in_failed").sum() == 5
    assert (log.action == "sign_in_locked").sum() == 1 and (log.action == "sign_in").sum() == 0


def test_a_lock_runs_out_doubles_with_each_further_failure_and_success_clears_it(store):
    import time

    limits = store_sign_in.SignInLimits(per_account=2, first_lock_s=1.0, max_lock_s=60.0)
    users.add_user("alice", "member", PASSWORD, path=store)
    _fail(store, "alice", 2, limits=limits)
    with pytest.raises(store_sign_in.SignInLockedError):
        store_sign_in.sign_in("alice", PASSWORD, limits=limits, path=store)
    time.sleep(1.1)
    _fail(store, "alice", 1, limits=limits)  # the third failure: 2 s now
    time.sleep(1.1)
    with pytest.raises(store_sign_in.SignInLockedError, match="try again in 1 s"):
        store_sign_in.sign_in("alice", PASSWORD, limits=limits, path=store)
    time.sleep(1.0)
    account, _ = store_sign_in.sign_in("alice", PASSWORD, limits=limits, path=store)
    assert account.name == "alice"
    _fail(store, "alice", 1, limits=limits)  # counted afresh after the success
    assert store_sign_in.sign_in("alice", PASSWORD, limits=limits, path=store)[0].name == "alice"


def test_one_address_guessing_many_names_is_slowed_for_every_name(store):
    limits = store_sign_in.SignInLimits(per_client=3)
    users.add_user("alice", "member", PASSWORD, path=store)
    for name in ("root", "admin", "ada"):
        _fail(store, name, 1, client="10.0.0.9", limits=limits)
    with pytest.raises(store_sign_in.SignInLockedError, match="from this address"):
        store_sign_in.sign_in("alice", PASSWORD, client="10.0.0.9", limits=limits, path=store)
    account, _ = store_sign_in.sign_in(
        "alice", PASSWORD, client="10.0.0.7", limits=limits, path=store
    )
    assert account.name == "alice"


def test_a_failed_sign_in_keeps_at_most_64_characters_of_the_typed_name(store):
    with pytest.raises(SignInError):
        store_sign_in.sign_in("=HYPERLINK(" + "x" * 500, "wrong password", path=store)
    assert read_audit(path=store).actor.str.len().max() == 64
