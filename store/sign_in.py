"""Sign-in with a back-off against guessing: how failed tries slow down further ones.

Accounts, passwords and sessions are in `store.users`; this module checks a try against
the limits, verifies the password through it and opens the session.
Every check and its write happen in one transaction (`store.db.connect`), so concurrent tries
from threads or processes cannot all read the same count: see `_start_attempt`.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
from dataclasses import dataclass
from pathlib import Path

import duckdb

from store.audit import record_in
from store.db import connect
from store.users import (
    Account,
    SignInError,
    _digest,
    create_session,
    verify_password,
)


@dataclass(frozen=True)
class SignInLimits:
    """How failed sign-ins slow down further tries (counted in ``sign_in_attempts``).

    A browser where the account signed in before shows its known-client token
    (`known_client_token`); its tries are slowed by its own failures only: after
    ``per_account`` of them within ``window_s``. Every other try is slowed after
    ``per_account`` failures for the name from such strangers, or ``per_client`` failures from
    one address (any name), within ``window_s``. So anyone can slow down guessing at a
    name, but nobody can keep its owner out of a browser she has signed in from before.

    Each further try waits ``first_lock_s`` after the latest counted failure, doubling with
    every further failure up to ``max_lock_s``. A try made while waiting is refused without
    checking the password (the right one included) and does not count, so a wait runs out on
    time. A name's count (and a known client's) starts again at its successful sign-in; an
    address's does not (an attacker's own account must not clear the address they guess from).
    """

    per_account: int = 5
    per_client: int = 20
    window_s: float = 15 * 60.0
    first_lock_s: float = 30.0
    max_lock_s: float = 15 * 60.0

    def wait_s(self, failures: int, since_last_s: float, limit: int) -> float:
        """Seconds still to wait after ``failures`` failures, the latest ``since_last_s``
        ago (0: a try may be made now)."""
        if failures < limit:
            return 0.0
        lock = min(self.first_lock_s * 2 ** (failures - limit), self.max_lock_s)
        return max(0.0, lock - since_last_s)


SIGN_IN_LIMITS = SignInLimits()
#: The longest name kept in the log for a failed sign-in (anyone can type anything there).
_LOGGED_NAME_CHARS = 64
#: Attempts older than this are dropped (every window is far shorter).
_ATTEMPTS_KEPT_S = 24 * 3600.0


class SignInLockedError(SignInError):
    """Too many failed sign-ins for the name or from the address; the message says how
    long to wait."""


# -- known clients: browsers where an account signed in before -------------------------------


def _client_mac(password_hash: str, name: str, nonce: str) -> str:
    """The token's proof, keyed by the account's password hash: only the store can make it,
    and a new password (or a removed account) makes every earlier token worthless."""
    message = f"softgrade known client\n{name}\n{nonce}".encode()
    return hmac.new(password_hash.encode(), message, hashlib.sha256).hexdigest()[:32]


def known_client_token(name: str, *, path: Path | str | None = None) -> str | None:
    """A new known-client token for a browser ``name`` just signed in from (None: no such
    account). The browser keeps it; a try that shows it is slowed by its own failures only."""
    with connect(path, read_only=True) as con:
        row = con.execute("SELECT password_hash FROM users WHERE name = ?", [name]).fetchone()
    if row is None:
        return None
    nonce = secrets.token_urlsafe(16)
    return f"{nonce}.{_client_mac(row[0], name, nonce)}"


def _known_client(con: duckdb.DuckDBPyConnection, name: str, token: str | None) -> str | None:
    """The SHA-256 of ``token`` when it is a valid known-client token for ``name``, else None."""
    nonce, _, mac = (token or "").partition(".")
    if not nonce or not mac:
        return None
    row = con.execute("SELECT password_hash FROM users WHERE name = ?", [name]).fetchone()
    if row is None or not hmac.compare_digest(mac, _client_mac(row[0], name, nonce)):
        return None
    return _digest(str(token))


# -- the back-off ----------------------------------------------------------------------------

# Failed tries (and those still being checked) that ``{counted}`` selects, since the later of
# the window's start and the latest successful try that ``{scope}`` selects (when $reset);
# with the seconds since the latest counted one was checked (or started, while unchecked).
_FAILURES_SQL = """
    WITH since AS (
        SELECT greatest(
            now()::TIMESTAMP - to_microseconds(CAST($window_s * 1e6 AS BIGINT)),
            coalesce(max(started_at) FILTER (WHERE $reset AND outcome = 'ok'),
                     TIMESTAMP '-infinity')
        ) AS t
        FROM sign_in_attempts WHERE {scope}
    )
    SELECT count(*), epoch(now()::TIMESTAMP) - epoch(max(coalesce(checked_at, started_at)))
    FROM sign_in_attempts, since
    WHERE {counted} AND outcome <> 'ok' AND started_at > since.t
"""
# (scope, counted) of each count. A known client's own failures, reset by its own success; a
# name's failures from strangers (no valid known-client token), reset by the name's success
# from anywhere; an address's failures from strangers, never reset.
_BY_KNOWN_CLIENT = ("name = $name AND known_client = $known",) * 2
_BY_NAME = ("name = $name", "name = $name AND known_client IS NULL")
_BY_ADDRESS = ("client = $client AND known_client IS NULL",) * 2


def _failures(
    con: duckdb.DuckDBPyConnection,
    by: tuple[str, str],
    window_s: float,
    *,
    reset: bool,
    **values: object,
) -> tuple[int, float]:
    """(failed or unfinished tries counted ``by``, seconds since the latest of them)."""
    sql = _FAILURES_SQL.format(scope=by[0], counted=by[1])
    row = con.execute(sql, {"window_s": window_s, "reset": reset, **values}).fetchone()
    count, since_last = row if row is not None else (0, None)
    return int(count), float(since_last if since_last is not None else 0.0)


def _wait_in(
    con: duckdb.DuckDBPyConnection,
    name: str,
    client: str | None,
    known: str | None,
    limits: SignInLimits,
) -> float:
    """Seconds before this try may be checked (0: now), read in the caller's transaction."""
    if known is not None:
        failures = _failures(
            con, _BY_KNOWN_CLIENT, limits.window_s, reset=True, name=name, known=known
        )
        return limits.wait_s(*failures, limits.per_account)
    failures = _failures(con, _BY_NAME, limits.window_s, reset=True, name=name)
    waits = [limits.wait_s(*failures, limits.per_account)]
    if client:
        failures = _failures(con, _BY_ADDRESS, limits.window_s, reset=False, client=client)
        waits.append(limits.wait_s(*failures, limits.per_client))
    return max(waits)


def sign_in_wait_s(
    name: str,
    client: str | None,
    *,
    known_client: str | None = None,
    limits: SignInLimits = SIGN_IN_LIMITS,
    path: Path | str | None = None,
) -> float:
    """Seconds before ``name`` (from ``client``, showing ``known_client``) may try again."""
    with connect(path, read_only=True) as con:
        known = _known_client(con, name, known_client)
        return _wait_in(con, name, client, known, limits)


def _detail(client: str | None, known: str | None) -> str | None:
    """The audit line's detail: where the try came from."""
    parts = ([f"from {client}"] if client else []) + (["a known browser"] if known else [])
    return ", ".join(parts) or None


def _start_attempt(
    name: str,
    client: str | None,
    known_client: str | None,
    limits: SignInLimits,
    path: Path | str | None,
) -> tuple[str | None, str | None, float]:
    """Check the limits and, when they allow a try, write it as 'checking', in one
    transaction: `store.db.connect` holds this process's lock and DuckDB's file lock for the
    whole block, so no other try (thread or process) reads the counts between the check and
    the write. Returns (attempt id or None when refused, known-client digest, wait)."""
    with connect(path) as con:
        known = _known_client(con, name, known_client)
        wait = _wait_in(con, name, client, known, limits)
        if wait > 0:
            detail = _detail(client, known)
            record_in(con, "sign_in_locked", actor=name, target=name, detail=detail)
            return None, known, wait
        attempt_id = secrets.token_hex(16)
        con.execute(
            "INSERT INTO sign_in_attempts (attempt_id, name, client, known_client) "
            "VALUES (?, ?, ?, ?)",
            [attempt_id, name, client, known],
        )
        con.execute(
            "DELETE FROM sign_in_attempts "
            "WHERE started_at < now()::TIMESTAMP - to_microseconds(CAST(? * 1e6 AS BIGINT))",
            [_ATTEMPTS_KEPT_S],
        )
        return attempt_id, known, 0.0


def _end_attempt(
    attempt_id: str,
    ok: bool,
    name: str,
    detail: str | None,
    path: Path | str | None,
) -> None:
    """Record a checked try's outcome and its audit line together."""
    with connect(path) as con:
        con.execute(
            "UPDATE sign_in_attempts SET outcome = ?, checked_at = now()::TIMESTAMP "
            "WHERE attempt_id = ?",
            ["ok" if ok else "failed", attempt_id],
        )
        record_in(
            con, "sign_in" if ok else "sign_in_failed", actor=name, target=name, detail=detail
        )


def sign_in(
    name: str,
    password: str,
    *,
    client: str | None = None,
    known_client: str | None = None,
    limits: SignInLimits = SIGN_IN_LIMITS,
    path: Path | str | None = None,
) -> tuple[Account, str]:
    """Check a name and password, open a session and log the attempt either way.

    Args:
        client: Where the browser is (its address), kept on the session and in the log; the
            failures from one address are limited as one name's are.
        known_client: The known-client token the browser keeps from an earlier sign-in
            (`known_client_token`), if any; valid for ``name``, the try is slowed by that
            browser's own failures only.
        limits: How failed tries slow down further ones.

    Returns:
        The account and the session token for the browser to keep.

    Raises:
        SignInLockedError: Too many recent failures for the name or from the client; the
            password was not checked.
        SignInError: Wrong name or password, or a disabled account (one message for all, so
            the form does not tell which names exist).
    """
    name = name[:_LOGGED_NAME_CHARS]
    attempt_id, known, wait = _start_attempt(name, client, known_client, limits, path)
    if attempt_id is None:
        whose = "this browser" if known else "this name or from this address"
        raise SignInLockedError(
            f"too many failed sign-ins for {whose}; try again in {math.ceil(wait)} s"
        )
    account = None
    try:
        account = verify_password(name, password, path=path)
    finally:  # a try whose check failed to finish stays counted as a failure
        _end_attempt(attempt_id, account is not None, name, _detail(client, known), path)
    if account is None:
        raise SignInError("wrong name or password, or the account is disabled")
    return account, create_session(name, client=client, path=path)
