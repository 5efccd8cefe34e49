"""Local accounts and signed-in sessions of a served lab.

Passwords are hashed with argon2id (``argon2-cffi``, the Password Hashing Competition's
winner, with its library defaults: 3 passes over 64 MiB). Verifying goes through argon2's own
comparison, and an unknown name is checked against a dummy hash, so the time taken does not
tell whether a name exists.

A session is a random token held by the browser (the page keeps it in
``st.session_state``); the store keeps only its SHA-256. It ends after
``SOFTGRADE_SESSION_IDLE_H`` hours without use (default 12) or `SESSION_MAX_AGE_H` hours after
sign-in, on sign-out, and when its user is removed, disabled or gets a new password. The role
is read afresh on every check, so a new role applies at the next page load.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from importlib import resources
from pathlib import Path

import duckdb
import pandas as pd
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from store.audit import LOCAL_ACTOR, record_in
from store.db import StoreError, connect, default_store_path, one_row, one_value
from store.passwords import MIN_ONE_CLASS_CHARS, strength_problem

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
MIN_PASSWORD_CHARS = 8
DEFAULT_SESSION_IDLE_H = 12.0
SESSION_MAX_AGE_H = 7 * 24.0
# A check refreshes ``last_seen_at`` only when it is older than this, so page reloads read
# the store and rarely write it (a write waits for the worker's lock).
SESSION_TOUCH_S = 300.0

_HASHER = PasswordHasher()


@functools.cache
def _dummy_hash() -> str:
    """Verified against when the name is unknown, so that answer takes as long as a wrong
    password. Made on first use: hashing costs ~0.1 s, too much for every import."""
    return _HASHER.hash(secrets.token_hex(16))


class Role(StrEnum):
    """What a person may do; the CHECK on ``users.role`` lists the same values.

    viewer: result pages and Grade a film. member: also Launch, Jobs (cancel their own jobs)
    and importing films. admin: also cancel any job, archive and delete studies, manage
    accounts and read the audit log. `jobs.services.access` maps roles to pages and actions.
    """

    VIEWER = "viewer"
    MEMBER = "member"
    ADMIN = "admin"


@dataclass(frozen=True)
class Account:
    """One person's account (never the password or its hash)."""

    name: str
    role: Role
    created_at: datetime | None = None
    disabled: bool = False


class SignInError(StoreError):
    """Wrong name or password (one message for both), or a disabled account."""


def parse_role(role: str) -> Role:
    """The `Role` named ``role``; ValueError listing the roles otherwise."""
    try:
        return Role(role)
    except ValueError:
        allowed = ", ".join(r.value for r in Role)
        raise ValueError(f"unknown role {role!r}; a role is one of {allowed}") from None


def check_name(name: str) -> str:
    """``name`` if it is a valid account name; ValueError saying what is allowed otherwise."""
    if not NAME_PATTERN.fullmatch(name or ""):
        raise ValueError(
            f"account name {name!r} is not allowed: 1-64 letters, digits, '.', '_', '@' or "
            "'-', starting with a letter or digit"
        )
    return name


#: Common passwords refused (zxcvbn's list, MIT; see the file's header).
COMMON_PASSWORDS_FILE = resources.files("store").joinpath("common_passwords.txt")
#: A password needs at least this many different characters ('aaaaaaaa' is refused).
MIN_DISTINCT_CHARS = 4


@functools.cache
def common_passwords() -> frozenset[str]:
    """The refused common passwords, lower case (read once)."""
    lines = COMMON_PASSWORDS_FILE.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


#: The rule a new password follows, as the forms and the command line state it.
PASSWORD_RULE = (
    f"at least {MIN_PASSWORD_CHARS} characters ({MIN_ONE_CLASS_CHARS} if they are all of one "
    "kind: lower-case letters, capitals, digits or symbols), and hard to guess: not built "
    "from an account's name, common words or passwords, years, runs such as abcd or 1234, or "
    "repeated characters. A few unrelated words make a good one"
)


def password_problem(
    password: str, name: str | None = None, other_names: Iterable[str] = ()
) -> str | None:
    """Why ``password`` may not be an account's password, or None when it may.

    At least `MIN_PASSWORD_CHARS` characters besides leading and trailing spaces, at least
    `MIN_DISTINCT_CHARS` different ones, not the account's name, not one of the
    `common_passwords` (whatever the case), and hard enough to guess by
    `store.passwords.strength_problem` (built from no account's name, ``name`` or
    ``other_names``, common words, years, runs or repeats).
    """
    rule = f"a password needs {PASSWORD_RULE}"
    if len(password.strip()) < MIN_PASSWORD_CHARS:
        return f"too short: {rule}"
    if len(set(password)) < MIN_DISTINCT_CHARS:
        return f"too few different characters: {rule}"
    if name and password.strip().lower() == name.strip().lower():
        return f"it is the account's name: {rule}"
    if password.strip().lower() in common_passwords():
        return f"it is one of the most common passwords, tried first by anyone guessing: {rule}"
    names = [n for n in (name, *other_names) if n]
    if problem := strength_problem(password, names):
        return f"{problem}: {rule}"
    return None


def check_password(password: str, name: str | None = None, other_names: Iterable[str] = ()) -> str:
    """``password`` if `password_problem` finds none; ValueError saying why otherwise."""
    problem = password_problem(password, name, other_names)
    if problem:
        raise ValueError(problem)
    return password


def account_names(*, path: Path | str | None = None) -> list[str]:
    """Every account's name (none when the store does not exist yet)."""
    store = Path(path) if path is not None else default_store_path()
    if not store.exists():
        return []
    with connect(store, read_only=True) as con:
        return [row[0] for row in con.execute("SELECT name FROM users ORDER BY name").fetchall()]


# -- accounts ---------------------------------------------------------------------------------


def add_user(
    name: str,
    role: Role | str,
    password: str,
    *,
    by: str = LOCAL_ACTOR,
    path: Path | str | None = None,
) -> Account:
    """Create an account.

    Raises:
        ValueError: Bad name, role or password (the message says what is allowed).
        StoreError: The name is taken.
    """
    role = parse_role(str(role))
    hashed = _HASHER.hash(check_password(password, name, account_names(path=path)))
    with connect(path) as con:
        try:
            con.execute(
                "INSERT INTO users (name, role, password_hash) VALUES (?, ?, ?)",
                [check_name(name), role.value, hashed],
            )
        except duckdb.ConstraintException as exc:
            raise StoreError(f"an account named {name!r} exists already") from exc
        record_in(con, "user_add", actor=by, target=name, detail=f"role {role.value}")
        return _account(con, name)


def list_users(*, path: Path | str | None = None) -> pd.DataFrame:
    """Every account: name, role, created_at, disabled, last_sign_in (no hashes), by name.

    ``last_sign_in`` is the latest ``sign_in`` line of the audit log (NaT: never signed in).
    """
    with connect(path, read_only=True) as con:
        return con.execute(
            """
            SELECT u.name, u.role, u.created_at, u.disabled, max(a.logged_at) AS last_sign_in
            FROM users u
            LEFT JOIN audit_log a ON a.actor = u.name AND a.action = 'sign_in'
            GROUP BY ALL ORDER BY u.name
            """
        ).df()


def other_enabled_admins(name: str, *, path: Path | str | None = None) -> int:
    """How many enabled admin accounts there are besides ``name``."""
    with connect(path, read_only=True) as con:
        return int(
            one_value(
                con,
                "SELECT count(*) FROM users WHERE role = 'admin' AND NOT disabled AND name <> ?",
                [name],
            )
        )


def get_user(name: str, *, path: Path | str | None = None) -> Account:
    """One account; StoreError naming it if there is none."""
    with connect(path, read_only=True) as con:
        return _account(con, name)


def remove_user(name: str, *, by: str = LOCAL_ACTOR, path: Path | str | None = None) -> None:
    """Delete an account and end its sessions. Studies it launched keep its name.

    Raises:
        StoreError: No such account, or it is the last admin while other accounts remain.
    """
    with connect(path) as con:
        account = _account(con, name)
        if account.role is Role.ADMIN:
            _keep_an_admin(con, name, "remove")
        con.execute("DELETE FROM sessions WHERE user_name = ?", [name])
        con.execute("DELETE FROM users WHERE name = ?", [name])
        record_in(con, "user_remove", actor=by, target=name, detail=f"was {account.role.value}")


def set_role(
    name: str, role: Role | str, *, by: str = LOCAL_ACTOR, path: Path | str | None = None
) -> Account:
    """Give an account another role (effective at its next page load).

    Raises:
        ValueError: Unknown role.
        StoreError: No such account, or it is the last admin while other accounts remain.
    """
    role = parse_role(str(role))
    with connect(path) as con:
        account = _account(con, name)
        if account.role is Role.ADMIN and role is not Role.ADMIN:
            _keep_an_admin(con, name, "demote")
        con.execute("UPDATE users SET role = ? WHERE name = ?", [role.value, name])
        record_in(
            con,
            "user_set_role",
            actor=by,
            target=name,
            detail=f"{account.role.value} -> {role.value}",
        )
        return _account(con, name)


def set_disabled(
    name: str, disabled: bool, *, by: str = LOCAL_ACTOR, path: Path | str | None = None
) -> Account:
    """Disable an account (it cannot sign in; its sessions end) or enable it again."""
    with connect(path) as con:
        account = _account(con, name)
        if disabled and account.role is Role.ADMIN:
            _keep_an_admin(con, name, "disable")
        con.execute("UPDATE users SET disabled = ? WHERE name = ?", [disabled, name])
        if disabled:
            con.execute("DELETE FROM sessions WHERE user_name = ?", [name])
        record_in(con, "user_disable" if disabled else "user_enable", actor=by, target=name)
        return _account(con, name)


def set_password(
    name: str, password: str, *, by: str = LOCAL_ACTOR, path: Path | str | None = None
) -> None:
    """Replace an account's password; its sessions end.

    Raises:
        ValueError: The password breaks `password_problem`'s rules.
    """
    hashed = _HASHER.hash(check_password(password, name, account_names(path=path)))
    with connect(path) as con:
        _account(con, name)
        con.execute("UPDATE users SET password_hash = ? WHERE name = ?", [hashed, name])
        con.execute("DELETE FROM sessions WHERE user_name = ?", [name])
        record_in(con, "user_password", actor=by, target=name)


def has_accounts(*, path: Path | str | None = None) -> bool:
    """Whether any enabled account exists (none: single-user mode, loopback only)."""
    store = Path(path) if path is not None else default_store_path()
    if not store.exists():
        return False
    with connect(store, read_only=True) as con:
        return bool(one_value(con, "SELECT count(*) FROM users WHERE NOT disabled"))


def verify_password(name: str, password: str, *, path: Path | str | None = None) -> Account | None:
    """The account if ``password`` is its password and it is enabled, else None.

    Takes as long for an unknown name as for a wrong password (argon2 runs either way).
    A hash made with weaker parameters than today's is replaced on success.
    """
    with connect(path, read_only=True) as con:
        row = con.execute(
            "SELECT password_hash, disabled FROM users WHERE name = ?", [name]
        ).fetchone()
    stored = row[0] if row else _dummy_hash()
    try:
        _HASHER.verify(stored, password)
    except (VerificationError, InvalidHashError):
        return None
    if row is None or row[1]:
        return None
    if _HASHER.check_needs_rehash(stored):
        with connect(path) as con:
            con.execute(
                "UPDATE users SET password_hash = ? WHERE name = ?",
                [_HASHER.hash(password), name],
            )
    return get_user(name, path=path)


def _account(con: duckdb.DuckDBPyConnection, name: str) -> Account:
    row = con.execute(
        "SELECT name, role, created_at, disabled FROM users WHERE name = ?", [name]
    ).fetchone()
    if row is None:
        raise StoreError(f"no account named {name!r}; `python -m jobs users list` lists them")
    return Account(name=row[0], role=Role(row[1]), created_at=row[2], disabled=bool(row[3]))


def _keep_an_admin(con: duckdb.DuckDBPyConnection, name: str, verb: str) -> None:
    """Refuse to leave accounts with no enabled admin to manage them."""
    admins, others = one_row(
        con,
        "SELECT count(*) FILTER (WHERE role = 'admin' AND NOT disabled AND name <> ?), "
        "count(*) FILTER (WHERE name <> ?) FROM users",
        [name, name],
    )
    if admins == 0 and others > 0:
        raise StoreError(
            f"{name!r} is the last admin; make another account admin first "
            f"(`python -m jobs users set-role NAME admin`), then {verb} this one"
        )


# -- sessions ---------------------------------------------------------------------------------


def session_idle_s() -> float:
    """How long a session lasts unused: ``SOFTGRADE_SESSION_IDLE_H`` hours (default 12)."""
    raw = os.environ.get("SOFTGRADE_SESSION_IDLE_H", "")
    try:
        hours = float(raw) if raw else DEFAULT_SESSION_IDLE_H
    except ValueError:
        raise ValueError(
            f"SOFTGRADE_SESSION_IDLE_H={raw!r} is not a number of hours (e.g. 12 or 0.5)"
        ) from None
    if hours <= 0:
        raise ValueError(f"SOFTGRADE_SESSION_IDLE_H={raw!r} must be more than 0 hours")
    return hours * 3600


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_session(name: str, *, client: str | None = None, path: Path | str | None = None) -> str:
    """Open a session for an (already verified) account; return its token for the browser."""
    token = secrets.token_urlsafe(32)
    with connect(path) as con:
        _account(con, name)
        con.execute(
            "INSERT INTO sessions (token_sha256, user_name, client) VALUES (?, ?, ?)",
            [_digest(token), name, client],
        )
        # Ended sessions are dropped here rather than by a janitor process.
        _drop_expired(con)
    return token


def validate_session(
    token: str | None, *, idle_s: float | None = None, path: Path | str | None = None
) -> Account | None:
    """The signed-in account of ``token``, or None if it is unknown, ended or disabled.

    A read on most calls; it refreshes the session's last use at most every
    `SESSION_TOUCH_S` seconds.
    """
    if not token:
        return None
    idle_s = session_idle_s() if idle_s is None else idle_s
    with connect(path, read_only=True) as con:
        row = con.execute(
            """
            SELECT u.name, u.role, u.created_at, u.disabled,
                   epoch(current_timestamp::TIMESTAMP - s.last_seen_at) AS idle_s,
                   epoch(current_timestamp::TIMESTAMP - s.created_at) AS age_s
            FROM sessions s JOIN users u ON u.name = s.user_name
            WHERE s.token_sha256 = ?
            """,
            [_digest(token)],
        ).fetchone()
    if row is None or row[3] or row[4] > idle_s or row[5] > SESSION_MAX_AGE_H * 3600:
        return None
    if row[4] > SESSION_TOUCH_S:
        with connect(path) as con:
            con.execute(
                "UPDATE sessions SET last_seen_at = current_timestamp WHERE token_sha256 = ?",
                [_digest(token)],
            )
    return Account(name=row[0], role=Role(row[1]), created_at=row[2], disabled=False)


def sign_out(token: str, *, path: Path | str | None = None) -> None:
    """End the session of ``token`` and log it."""
    with connect(path) as con:
        row = con.execute(
            "DELETE FROM sessions WHERE token_sha256 = ? RETURNING user_name", [_digest(token)]
        ).fetchone()
        if row:
            record_in(con, "sign_out", actor=row[0], target=row[0])


def _drop_expired(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        """
        DELETE FROM sessions
        WHERE last_seen_at < current_timestamp - to_microseconds(CAST(? * 1e6 AS BIGINT))
           OR created_at < current_timestamp - to_microseconds(CAST(? * 1e6 AS BIGINT))
        """,
        [session_idle_s(), SESSION_MAX_AGE_H * 3600],
    )
