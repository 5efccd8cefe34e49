"""The audit log: who did what, when (sign-in, launch, cancel, import, archive, delete,
account changes).

Store verbs that change something on a person's behalf write their line in their own
transaction (`record_in`), so an action and its audit line are stored together or not at all.
Callers outside the store (the import form, sign-in) use `record`.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from pathlib import Path

import duckdb
import pandas as pd

from store.db import connect

# Who acted when nobody signed in: single-user mode on 127.0.0.1, and the command line.
LOCAL_ACTOR = "local"
# The detail of a sign-in through the lab's identity provider (OIDC): such people are not
# rows of `users`, so their sign-in lines are how the Accounts page knows them.
OIDC_SIGN_IN_DETAIL = "lab account (OIDC)"

# Every action the log knows. Not a CHECK in the schema, so a new action needs no migration;
# `record` refuses anything else so a typo cannot hide an action from an admin's filter.
AUDIT_ACTIONS = frozenset(
    {
        "sign_in",
        "sign_in_failed",
        "sign_in_locked",
        "sign_out",
        "launch",
        "cancel",
        "resume",
        "import",
        "rename",
        "notes",
        "tags",
        "archive",
        "unarchive",
        "delete",
        "user_add",
        "user_remove",
        "user_set_role",
        "user_disable",
        "user_enable",
        "user_password",
        "backup",
        "train_detector",
        "second_reading",
    }
)


def record(
    action: str,
    *,
    actor: str,
    target: str | None = None,
    detail: str | None = None,
    path: Path | str | None = None,
) -> None:
    """Append one line to the audit log in a transaction of its own.

    Args:
        action: One of `AUDIT_ACTIONS`, e.g. ``"import"``.
        actor: The signed-in user's name, or `LOCAL_ACTOR`.
        target: What it acted on: a study id, job id, user name, folder.
        detail: Free text for the admin reading the log.

    Raises:
        ValueError: An action the log does not know.
    """
    with connect(path) as con:
        record_in(con, action, actor=actor, target=target, detail=detail)


def record_in(
    con: duckdb.DuckDBPyConnection,
    action: str,
    *,
    actor: str,
    target: str | None = None,
    detail: str | None = None,
) -> None:
    """Append one line inside the caller's transaction (store verbs use this)."""
    if action not in AUDIT_ACTIONS:
        raise ValueError(
            f"unknown audit action {action!r}; known: {', '.join(sorted(AUDIT_ACTIONS))}"
        )
    con.execute(
        "INSERT INTO audit_log (actor, action, target, detail) VALUES (?, ?, ?, ?)",
        [actor or LOCAL_ACTOR, action, target, detail],
    )


def read_audit(
    *,
    actor: str | None = None,
    action: str | None = None,
    target: str | None = None,
    since: date | datetime | None = None,
    until: date | datetime | None = None,
    limit: int = 500,
    path: Path | str | None = None,
) -> pd.DataFrame:
    """The latest audit lines, newest first, optionally of one actor, action or target.

    Args:
        since: Keep lines logged on or after this day (a date) or moment.
        until: Keep lines logged on or before this day (a date: the whole day) or moment.

    Returns:
        Columns logged_at, actor, action, target, detail; at most ``limit`` rows.
    """
    if isinstance(until, date) and not isinstance(until, datetime):
        until = datetime.combine(until + timedelta(days=1), time.min)  # the whole day
        until_op = "<"
    else:
        until_op = "<="
    if isinstance(since, date) and not isinstance(since, datetime):
        since = datetime.combine(since, time.min)
    with connect(path, read_only=True) as con:
        return con.execute(
            f"""
            SELECT logged_at, actor, action, target, detail FROM audit_log
            WHERE (? IS NULL OR actor = ?) AND (? IS NULL OR action = ?)
              AND (? IS NULL OR target = ?)
              AND (?::TIMESTAMP IS NULL OR logged_at >= ?::TIMESTAMP)
              AND (?::TIMESTAMP IS NULL OR logged_at {until_op} ?::TIMESTAMP)
            ORDER BY logged_at DESC, rowid DESC LIMIT ?
            """,
            [actor, actor, action, action, target, target, since, since, until, until, limit],
        ).df()


def audit_actors(*, path: Path | str | None = None) -> list[str]:
    """Everyone who appears in the audit log, by name (the Audit page's filter)."""
    with connect(path, read_only=True) as con:
        return [
            r[0] for r in con.execute("SELECT DISTINCT actor FROM audit_log ORDER BY 1").fetchall()
        ]


def lab_account_sign_ins(*, path: Path | str | None = None) -> pd.DataFrame:
    """Everyone who signed in through the lab's identity provider, latest first.

    Returns:
        Columns name (their e-mail), first_sign_in, last_sign_in, sign_ins.
    """
    with connect(path, read_only=True) as con:
        return con.execute(
            """
            SELECT actor AS name, min(logged_at) AS first_sign_in,
                   max(logged_at) AS last_sign_in, count(*) AS sign_ins
            FROM audit_log WHERE action = 'sign_in' AND detail = ?
            GROUP BY actor ORDER BY last_sign_in DESC, name
            """,
            [OIDC_SIGN_IN_DETAIL],
        ).df()
