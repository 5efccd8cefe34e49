"""DuckDB connections, schema set-up and the one retry-on-lock policy.

Who writes: DuckDB lets one process hold a file read-write, or many hold it read-only, at a
time (duckdb docs, "Concurrency"). So every connection here is short-lived: open, do, close.
- The worker daemon (`jobs/`) is the only writer of results (runs, predictions, splits,
  datasets) and of job progress.
- The app writes only what a person asks for, one short transaction each: job requests and
  cancellations (`store.jobs.enqueue_job`, `store.jobs.request_cancel`), an import's
  registration (`jobs.importer.register_import`) and crop review decisions
  (`store.reviews.record_review`, `clear_review`).
- Pages read through ``connect(read_only=True)`` and cache results for a few seconds.
Training processes never open the database.

When another process holds the file, opening it fails with an IO error about the lock; we
retry with exponential backoff and jitter up to a bounded total wait, then raise
`StoreLockedError` saying who to wait for. Inside one process, DuckDB also refuses a
read-only and a read-write connection to the same file at once, so connections of one process
take turns through a process-wide lock.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb

SCHEMA_VERSION = 1
SCHEMA_FILE = Path(__file__).with_name("schema.sql")

log = logging.getLogger(__name__)
_PROCESS_LOCK = threading.RLock()


class StoreError(RuntimeError):
    """A store operation failed for a reason the user can act on."""


class StoreLockedError(StoreError):
    """The store stayed locked by another process for longer than the retry bound."""


class SchemaVersionError(StoreError):
    """The store was written by another schema version."""


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, bounded by ``max_wait_s`` in total."""

    first_delay_s: float = 0.02
    max_delay_s: float = 1.0
    max_wait_s: float = 30.0


DEFAULT_RETRY = RetryPolicy()


@dataclass
class LockStats:
    """Counts of lock retries in this process (reported by benchmarks and the sidebar)."""

    retries: int = 0
    waited_s: float = 0.0


LOCK_STATS = LockStats()


def softgrade_home() -> Path:
    """The folder holding the store, caches and checkpoints: ``$SOFTGRADE_HOME`` or ./data."""
    return Path(os.environ.get("SOFTGRADE_HOME", "data")).resolve()


def default_store_path() -> Path:
    """``$SOFTGRADE_HOME/softgrade.duckdb``."""
    return softgrade_home() / "softgrade.duckdb"


def _is_lock_error(exc: duckdb.Error) -> bool:
    text = str(exc)
    return "lock" in text.lower() or "different configuration" in text


@contextmanager
def connect(
    path: Path | str | None = None,
    *,
    read_only: bool = False,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the store, run the block in one transaction, commit (or roll back) and close.

    Args:
        path: Store file; defaults to `default_store_path()`.
        read_only: Readers pass True so several processes can read at once.
        retry: How long to keep trying while another process holds the file.

    Raises:
        StoreLockedError: The file stayed locked past ``retry.max_wait_s``.
        StoreError: A read-only open of a store that does not exist yet.
    """
    path = Path(path) if path is not None else default_store_path()
    if read_only and not path.exists():
        raise StoreError(f"no store at {path} yet; start the worker or run a study first")
    path.parent.mkdir(parents=True, exist_ok=True)
    with _PROCESS_LOCK:
        con = _open_with_retry(path, read_only, retry)
        try:
            if not read_only:
                con.execute("BEGIN TRANSACTION")
            yield con
            if not read_only:
                con.execute("COMMIT")
        except BaseException:
            if not read_only:
                _rollback_quietly(con)
            raise
        finally:
            con.close()


def _open_with_retry(path: Path, read_only: bool, retry: RetryPolicy) -> duckdb.DuckDBPyConnection:
    waited = 0.0
    delay = retry.first_delay_s
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except (duckdb.IOException, duckdb.ConnectionException) as exc:
            if not _is_lock_error(exc):
                raise
            if waited >= retry.max_wait_s:
                raise StoreLockedError(
                    f"the store {path} stayed locked by another process for {waited:.0f} s. "
                    "Another SoftGrade process (worker or app) is holding it open; if none "
                    "is running, a crashed process may still hold the lock."
                ) from exc
            pause = min(random.uniform(0, delay), retry.max_wait_s - waited)
            time.sleep(pause)
            waited += pause
            delay = min(delay * 2, retry.max_delay_s)
            LOCK_STATS.retries += 1
            LOCK_STATS.waited_s += pause


def _rollback_quietly(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:
        log.debug("rollback after error failed", exc_info=True)


def init_schema(path: Path | str | None = None) -> None:
    """Create every table if missing and record the schema version (idempotent).

    Raises:
        SchemaVersionError: The store holds another schema version.
    """
    with connect(path) as con:
        has_meta = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'"
        ).fetchone()[0]
        if has_meta:
            _check_version(con, path)
        con.execute(SCHEMA_FILE.read_text())
        con.execute(
            "INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT (key) DO NOTHING",
            [str(SCHEMA_VERSION)],
        )


def check_schema(path: Path | str | None = None) -> None:
    """Fail with a remedy unless the store exists and holds this code's schema version."""
    with connect(path, read_only=True) as con:
        _check_version(con, path)


def _check_version(con: duckdb.DuckDBPyConnection, path: Path | str | None) -> None:
    row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    found = row[0] if row else "unknown"
    if found != str(SCHEMA_VERSION):
        where = path or default_store_path()
        raise SchemaVersionError(
            f"the store {where} has schema version {found}, this SoftGrade needs "
            f"{SCHEMA_VERSION}. Keep a backup of that file, then point SOFTGRADE_HOME at an "
            "empty folder (or move the file away) to start a new store; or run the SoftGrade "
            f"release that wrote version {found}."
        )
