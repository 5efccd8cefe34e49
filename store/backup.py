"""A consistent copy of the store, taken while the worker keeps running.

The copy is made through one read-only connection (the store's retry policy waits for the
worker's current write to finish): DuckDB's ``COPY FROM DATABASE`` writes every table,
index and constraint into a new file attached beside it. A read-only connection sees one
snapshot and no process can write while it is open, so the copy is a state the store was
really in, never half a run. The worker's next write waits for the copy (a few seconds for
a large store; its retries are bounded by the same policy).

The copy is written under a temporary name, checked (row count of every table) and only
then given its name, so a file with the backup's name is always whole.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb

from store.db import (
    DEFAULT_RETRY,
    RetryPolicy,
    StoreError,
    connect,
    default_store_path,
    one_value,
    private_file,
    private_folder,
)
from store.outputs import OutputRefused, atomic_output, check_target

_ALIAS = "softgrade_backup"


@dataclass(frozen=True)
class Backup:
    """A finished backup: where it is and what it holds."""

    path: Path
    rows: dict[str, int]  # table -> rows copied
    size_bytes: int
    seconds: float


def default_backup_path(store: Path) -> Path:
    """``<store folder>/backups/softgrade-YYYYmmdd-HHMMSS.duckdb``."""
    return store.parent / "backups" / f"softgrade-{datetime.now():%Y%m%d-%H%M%S}.duckdb"


def backup_store(
    dest: Path | str | None = None,
    *,
    path: Path | str | None = None,
    force: bool = False,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> Backup:
    """Write a consistent copy of the store to ``dest`` (never through a link, and over an
    existing file only with ``force``), through `store.outputs.atomic_output`.

    Args:
        dest: The new file; `default_backup_path` when None.
        path: The store; `default_store_path` when None.
        force: Replace an existing file named ``dest`` (``backup --force``).
        retry: How long to wait for the worker's current write.

    Raises:
        StoreError: No store, ``dest`` is the store, a link or exists already (without
            ``force``), or the copy did not check out (then nothing is left under ``dest``'s
            name).
    """
    store = Path(path) if path is not None else default_store_path()
    if not store.exists():
        raise StoreError(f"no store at {store} to back up")
    dest = Path(dest) if dest is not None else default_backup_path(store)
    dest = dest.expanduser()
    if dest.resolve() == store.resolve():
        raise StoreError("the backup must be another file than the store itself")
    private_folder(dest.parent)
    started = time.monotonic()
    try:
        with atomic_output(dest, force=force, private=True) as partial:
            rows = _copy(store, partial, retry)
            private_file(partial)  # as secret as the store: readable by this user only
            _verify(partial, rows)
            Path(f"{partial}.wal").unlink(missing_ok=True)
    except OutputRefused as exc:
        raise StoreError(str(exc)) from exc
    made = check_target(dest)
    return Backup(made, rows, made.stat().st_size, time.monotonic() - started)


def _copy(store: Path, target: Path, retry: RetryPolicy) -> dict[str, int]:
    """Copy every table of ``store`` into the new file ``target``; return its row counts."""
    with connect(store, read_only=True, retry=retry) as con:
        catalog = one_value(con, "SELECT current_database()")
        quoted = str(target).replace("'", "''")
        con.execute(f"ATTACH '{quoted}' AS {_ALIAS} (READ_WRITE)")
        try:
            con.execute(f"COPY FROM DATABASE {_ident(catalog)} TO {_ALIAS}")
            return _row_counts(con, catalog)
        finally:
            con.execute(f"DETACH {_ALIAS}")


def _row_counts(con: duckdb.DuckDBPyConnection, catalog: str) -> dict[str, int]:
    tables = [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = ? ORDER BY 1",
            [catalog],
        ).fetchall()
    ]
    return {
        t: one_value(con, f"SELECT count(*) FROM {_ident(catalog)}.{_ident(t)}") for t in tables
    }


def _ident(name: str) -> str:
    """``name`` as a quoted SQL identifier (a backup named ``my"copy.duckdb`` is a catalog
    named ``my"copy``)."""
    return '"' + name.replace('"', '""') + '"'


def _verify(copy: Path, expected: dict[str, int]) -> None:
    """The copy opens and holds as many rows of every table as the store had (``meta``,
    with the schema version, included). The store's version is kept as it is: a backup taken
    before an upgrade is a copy of the old version."""
    with connect(copy, read_only=True) as con:
        catalog = one_value(con, "SELECT current_database()")
        found = _row_counts(con, catalog)
    if found != expected:
        differ = sorted(
            t for t in expected.keys() | found.keys() if expected.get(t) != found.get(t)
        )
        raise StoreError(f"the backup's row counts differ from the store's in {differ}")
