"""DuckDB connections, schema set-up and the one retry-on-lock policy.

Who writes: DuckDB lets one process hold a file read-write, or many hold it read-only, at a
time (duckdb docs, "Concurrency"). So every connection here is short-lived: open, do, close.
- The worker daemon (`jobs/`) is the only writer of results (runs, predictions, splits,
  datasets) and of job progress.
- The app writes only what a person asks for, one short transaction each: job requests and
  cancellations (`store.jobs.enqueue_job`, `store.jobs.request_cancel`), an import's
  registration (`jobs.services.importer.register_import`), crop review decisions
  (`store.reviews.record_review`, `clear_review`), people's edits of studies
  (`store.studies`), accounts, sessions (`store.users`) and the audit log: small, rare writes.
- Pages read through ``connect(read_only=True)`` and cache results for a few seconds.
Training processes never open the database.

When another process holds the file, opening it fails with an IO error about the lock; we
retry with exponential backoff and jitter up to a bounded total wait, then raise
`StoreLockedError` saying who to wait for. A writer that is kept waiting goes before readers
that arrive after it (see `writer_waiting_marker`). Inside one process, DuckDB also refuses a
read-only and a read-write connection to the same file at once, so connections of one process
take turns through a process-wide lock.

Versions: ``meta.schema_version`` says which schema wrote a store. `init_schema` upgrades an
older store in place, additively (new tables and columns, nothing dropped: schema.sql's
"Upgrades" section), so a lab's results survive a SoftGrade update. A newer or unknown
version, a truncated file or a file that is not a DuckDB database is refused with one
`StoreError` saying what to do, and nothing in the file is changed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

SCHEMA_VERSION = 6
# The oldest schema version `init_schema` can upgrade from.
OLDEST_UPGRADABLE_VERSION = 1
SCHEMA_FILE = resources.files("store").joinpath("schema.sql")

log = logging.getLogger(__name__)
_PROCESS_LOCK = threading.RLock()
# What DuckDB binds to a query's ``?`` (a sequence) or ``$name`` (a mapping) placeholders.
QueryParams = Sequence[object] | Mapping[str, object]

# How many connections this thread holds open: a connection opened inside another's block
# skips the missing-block check (the outer one was checked; a read-only check connection
# beside this process's read-write one would wait on itself).
_OPEN_HERE = threading.local()


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
    """Counts of lock retries in this process (reported by benchmarks and the sidebar).

    ``recent_waits_s`` holds the wait of each of the latest opens (0.0 when the file was
    free at once), for percentiles in `bench/soak.py`.
    """

    retries: int = 0
    waited_s: float = 0.0
    recent_waits_s: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))


LOCK_STATS = LockStats()


# The store's file name inside SOFTGRADE_HOME (unless SOFTGRADE_DB names another file).
STORE_FILE_NAME = "softgrade.duckdb"
# Names the store file on its own, apart from the data folder: on a cluster SOFTGRADE_HOME is
# shared over NFS (image caches, checkpoints) while the store stays on the worker's local
# disk, because DuckDB's file locks are not reliable on network filesystems.
STORE_ENV = "SOFTGRADE_DB"


def softgrade_home() -> Path:
    """The data folder: caches, checkpoints, imports, and the store unless ``$SOFTGRADE_DB``
    puts it elsewhere. ``$SOFTGRADE_HOME``, or ./data."""
    return Path(os.environ.get("SOFTGRADE_HOME", "data")).resolve()


def default_store_path() -> Path:
    """The store file: ``$SOFTGRADE_DB`` when set, else ``$SOFTGRADE_HOME/softgrade.duckdb``."""
    named = os.environ.get(STORE_ENV, "").strip()
    if named:
        return Path(named).expanduser().resolve()
    return softgrade_home() / STORE_FILE_NAME


def data_home_of(store: Path | str | None) -> Path:
    """The data folder that goes with ``store``: ``SOFTGRADE_HOME`` for the default store
    (which ``SOFTGRADE_DB`` may have put on another disk), else the folder of a store opened
    by its path (tests and benches keep a store and its data in one temporary folder)."""
    if store is None or Path(store).resolve() == default_store_path():
        return softgrade_home()
    return Path(store).resolve().parent


# DuckDB's words for "another process holds the file" ('Could not set lock on file ...:
# Conflicting lock is held') and for this process's other connection of another mode. A whole
# word, so a corrupt file's "block" errors are not taken for a lock and retried.
_LOCK_WORDS = re.compile(r"\block\b|different configuration", re.IGNORECASE)


# What DuckDB says when a file's blocks are missing or garbled (a truncated copy, a disk
# error): it may open such a file and fail only when a read reaches the damage.
_DAMAGE_WORDS = re.compile(
    r"could not read enough bytes|not a valid DuckDB database|checksum|corrupt", re.IGNORECASE
)


def _is_damage(exc: duckdb.Error) -> bool:
    return bool(_DAMAGE_WORDS.search(str(exc)))


def _is_lock_error(exc: duckdb.Error) -> bool:
    return bool(_LOCK_WORDS.search(str(exc)))


# A DuckDB file: a 4 KiB main header ("DUCK" at byte 8), two 4 KiB database headers (the one
# with the higher iteration is current), then whole blocks of `block_alloc_size` bytes.
_HEADER_BYTES = 4096
_DB_HEADER = struct.Struct("<QqqqQQ")  # checksum, iteration, meta, free list, blocks, block size


def _block_size(head: bytes) -> int | None:
    """The block size a DuckDB file's current header gives; None when it cannot be read (not
    DuckDB, or a storage version laid out otherwise: DuckDB then judges the file itself)."""
    if len(head) < 3 * _HEADER_BYTES or head[8:12] != b"DUCK":
        return None
    headers = [_DB_HEADER.unpack_from(head, at) for at in (_HEADER_BYTES, 2 * _HEADER_BYTES)]
    block_size = max(headers, key=lambda h: h[1])[5]
    if not (2**12 <= block_size <= 2**28 and block_size & (block_size - 1) == 0):
        return None
    return block_size


def _truncated(path: Path, size: int, expected: str) -> StoreError:
    return StoreError(
        f"the store {path} cannot be opened: it is truncated ({size:,} bytes; {expected}), "
        "e.g. an interrupted copy or a full disk. Nothing in it was changed. Restore a backup "
        "(`python -m jobs backup` writes one) in its place, or point SOFTGRADE_HOME at "
        "another folder to start a new store."
    )


def _read_head(path: Path) -> tuple[bytes, int] | None:
    """The store file's 12 KiB of headers and its size, or None when there is no file yet."""
    try:
        with open(path, "rb") as f:
            return f.read(3 * _HEADER_BYTES), os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"the store {path} cannot be read ({exc.strerror})") from exc


def _refuse_cut(path: Path, size: int, block_size: int) -> int:
    """Refuse a store file that ends inside a block, before DuckDB opens it; its size
    otherwise (once settled).

    DuckDB opens a truncated file and, on the next write, extends it over the missing part:
    the damage would be written over. DuckDB only ever writes and trims whole blocks, so a
    file cut anywhere else is caught here, on every connection, from 12 KiB of header.
    `connect` also checks that every table's blocks are in the file (a cut that falls on a
    block boundary), once per file size (`_check_blocks`).

    A file that is being written ends inside a block for a moment too: the kernel grows it
    page by page while another process appends a block. So an odd size is looked at again
    until it has not changed for `_SETTLE_S`; only a file that stays cut is refused (a kill
    -9 test of the worker met a growing store called truncated).

    Raises:
        StoreError: The file is truncated; nothing in it was changed.
    """
    if not _inside_block(size, block_size):
        return size
    settled = _settled_size(path, size)
    if settled is not None and _inside_block(settled, block_size):
        raise _truncated(path, settled, f"it ends inside a block of {block_size:,} bytes")
    return size if settled is None else settled


#: How long a store's size must stay the same before an odd size counts as a cut.
_SETTLE_S = 0.3
_SETTLE_POLL_S = 0.02


def _inside_block(size: int, block_size: int) -> bool:
    return bool((size - 3 * _HEADER_BYTES) % block_size)


def _settled_size(path: Path, size: int, settle_s: float = _SETTLE_S) -> int | None:
    """The file's size once it has stayed the same for ``settle_s`` (a writer finishing its
    block); None if the file went away meanwhile."""
    steady_since = time.monotonic()
    while time.monotonic() - steady_since < settle_s:
        time.sleep(_SETTLE_POLL_S)
        try:
            now = path.stat().st_size
        except FileNotFoundError:
            return None
        if now != size:
            size, steady_since = now, time.monotonic()
    return size


#: (store, file size) pairs whose blocks were found in the file: checked again only when the
#: size changes (DuckDB grows and trims a file by whole blocks), not at every connection.
_BLOCKS_CHECKED: set[tuple[str, int]] = set()


def _check_blocks(con: duckdb.DuckDBPyConnection, path: Path, block_size: int) -> None:
    """Refuse a store whose tables use blocks past the end of the file (a cut that falls on a
    block boundary); remember the size as checked otherwise.

    The size is read here, with ``con`` open: DuckDB's file lock keeps every other process
    from writing meanwhile. Read before the open, it could be older than the tables the
    connection sees (another process grew the file in between), and a sound store would be
    called truncated.

    Raises:
        StoreError: The file is truncated.
    """
    size = path.stat().st_size
    blocks = (size - 3 * _HEADER_BYTES) // block_size
    last = _last_table_block(con)
    if last is not None and last[1] >= blocks:
        raise _truncated(path, size, f"table {last[0]} uses block {last[1]}, it holds {blocks}")
    _BLOCKS_CHECKED.add((str(path), size))


def _check_blocks_read_only(path: Path, due: int, retry: RetryPolicy) -> None:
    """`_check_blocks` over a read-only connection of its own, before a writer opens the file
    (DuckDB may write as soon as it opens a file read-write, e.g. to replay its WAL)."""
    with _PROCESS_LOCK:
        con = _open_with_retry(path, True, retry, record=False)
        try:
            _check_blocks(con, path, due)
        except duckdb.Error as exc:
            if _is_damage(exc):
                raise _unreadable(path, exc) from exc
            raise
        finally:
            con.close()


def _last_table_block(con: duckdb.DuckDBPyConnection) -> tuple[str, int] | None:
    """The table whose data reaches furthest into the file, and its last block id."""
    tables = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
    ).fetchall()
    if not tables:
        return None
    # One statement for every table, not one per table: a store opened after it grew is
    # checked again, and the ~30 statements cost more than the blocks they read. Ties go
    # to the first table listed.
    parts = []
    for position, (table,) in enumerate(tables):
        quoted = table.replace("'", "''")
        parts.append(
            f"SELECT {position} AS position, '{quoted}' AS name, max(block_id) AS block "
            f"FROM pragma_storage_info('{quoted}')"
        )
    # fetchall: a result left half-read (fetchone) blocks the caller's next con.sql().
    rows = con.execute(
        f"SELECT name, block FROM ({' UNION ALL '.join(parts)}) WHERE block IS NOT NULL "
        "ORDER BY block DESC, position LIMIT 1"
    ).fetchall()
    return (rows[0][0], int(rows[0][1])) if rows else None


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
    private_folder(path.parent)
    with _PROCESS_LOCK:
        due = _check_file(path) if not getattr(_OPEN_HERE, "depth", 0) else None
        if due is not None and not read_only:
            _check_blocks_read_only(path, due, retry)
            due = None
        new = not path.exists()
        con = _open_with_retry(path, read_only, retry)
        if new:
            private_file(path)
        _OPEN_HERE.depth = getattr(_OPEN_HERE, "depth", 0) + 1
        try:
            if due is not None:  # a reader checks over its own connection
                _check_blocks(con, path, due)
            if not read_only:
                con.execute("BEGIN TRANSACTION")
            yield con
            if not read_only:
                con.execute("COMMIT")
        except duckdb.Error as exc:
            if not read_only:
                _rollback_quietly(con)
            if _is_damage(exc):
                raise _unreadable(path, exc) from exc
            raise
        except BaseException:
            if not read_only:
                _rollback_quietly(con)
            raise
        finally:
            _OPEN_HERE.depth -= 1
            con.close()


def _check_file(path: Path) -> int | None:
    """Refuse a store file cut inside a block (`_refuse_cut`); return its block size when
    its blocks have not been checked at its present size in this process (None when checked
    already, new, or not a DuckDB file). Call only holding `_PROCESS_LOCK` with no
    connection of this thread open.

    The header is read through a descriptor of its own, and closing any descriptor of a
    file drops every lock this process holds on it (POSIX record locks, which DuckDB takes).
    Read while another thread of this process had the store open for writing, the header
    read let a second process open it for writing too (a sign-in burst from four processes
    checked six passwords against a limit of five). `_PROCESS_LOCK` is held for a
    connection's whole life, so holding it with no connection of this thread open, this
    process holds no lock on the file to drop.
    """
    read = _read_head(path)
    if read is None:
        return None
    head, size = read
    block_size = _block_size(head)
    if block_size is None:
        return None
    size = _refuse_cut(path, size, block_size)
    return None if (str(path), size) in _BLOCKS_CHECKED else block_size


def private_folder(folder: Path) -> None:
    """Create ``folder`` (and missing parents) readable by this user only (0700).

    The store holds password and session hashes and every result. A folder that exists
    already is left as it is (it may be shared, e.g. a home folder): docs/security.md says
    to ``chmod 700`` it.
    """
    missing = []
    for parent in [folder, *folder.parents]:
        if parent.exists():
            break
        missing.append(parent)
    for created in reversed(missing):
        created.mkdir(mode=0o700, exist_ok=True)


def private_file(path: Path) -> None:
    """Make a file this process just created readable and writable by this user only (0600)
    (DuckDB creates files as the umask allows, usually world-readable)."""
    with contextlib.suppress(FileNotFoundError):
        os.chmod(path, 0o600)


# Writer preference. DuckDB's file lock keeps no queue: while readers (open pages) hold the
# file one after another, a writer may find it busy at every retry (bench/soak.py measured
# writes waiting 20 s behind four readers). So a writer that finds the file locked says so in
# a marker file beside the store, refreshed at each retry, and readers that see a fresh marker
# hold back until the writer is in. A marker older than this (its writer died) is ignored.
WRITER_WAITING_FRESH_S = 2.0
_READER_YIELD_S = 0.02


def writer_waiting_marker(path: Path) -> Path:
    """The file a waiting writer keeps fresh: ``<store>.writer-waiting``."""
    return path.with_name(f"{path.name}.writer-waiting")


def _writer_waiting(marker: Path) -> bool:
    try:
        return time.time() - marker.stat().st_mtime < WRITER_WAITING_FRESH_S
    except OSError:
        return False


def _open_with_retry(
    path: Path, read_only: bool, retry: RetryPolicy, *, record: bool = True
) -> duckdb.DuckDBPyConnection:
    """Open ``path``, retrying while another process holds it; ``record`` the wait in
    `LOCK_STATS` (not for the truncation check's own connection)."""
    waited = 0.0
    delay = retry.first_delay_s
    marker = writer_waiting_marker(path)
    announced = False
    try:
        while True:
            if read_only and waited < retry.max_wait_s and _writer_waiting(marker):
                time.sleep(_READER_YIELD_S)  # let the waiting writer in first
                waited += _READER_YIELD_S
                LOCK_STATS.waited_s += _READER_YIELD_S
                continue
            try:
                con = duckdb.connect(str(path), read_only=read_only)
                if record:
                    LOCK_STATS.recent_waits_s.append(waited)
                return con
            except duckdb.Error as exc:
                # A damaged header or first block is a bare duckdb.Error ("Corrupt database
                # file"), not an IOException: every refusal but a lock is one message.
                if not _is_lock_error(exc):
                    raise _unreadable(path, exc) from exc
                if waited >= retry.max_wait_s:
                    raise StoreLockedError(
                        f"the store {path} stayed locked by another process for {waited:.0f} "
                        "s. Another SoftGrade process (worker or app) is holding it open; if "
                        "none is running, a crashed process may still hold the lock."
                    ) from exc
                if not read_only:
                    announced = _announce(marker) or announced
                pause = min(random.uniform(0, delay), retry.max_wait_s - waited)
                time.sleep(pause)
                waited += pause
                delay = min(delay * 2, retry.max_delay_s)
                LOCK_STATS.retries += 1
                LOCK_STATS.waited_s += pause
    finally:
        if announced:
            marker.unlink(missing_ok=True)


def _announce(marker: Path) -> bool:
    """Create or refresh the writer-waiting marker; False where the folder is read-only."""
    try:
        marker.touch()
    except OSError:
        return False
    return True


def _unreadable(path: Path, exc: duckdb.Error) -> StoreError:
    """The error for a file DuckDB cannot open: truncated, damaged or not a database."""
    reason = str(exc).removeprefix("IO Error: ")
    return StoreError(
        f"the store {path} cannot be opened ({reason}). It is truncated, damaged or not a "
        "DuckDB file. Nothing in it was changed. Restore a backup (`python -m jobs backup` "
        "writes one) in its place, or point SOFTGRADE_HOME at another folder to start a new "
        "store."
    )


def _rollback_quietly(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:
        log.debug("rollback after error failed", exc_info=True)


def one_row(con: duckdb.DuckDBPyConnection, sql: str, params: QueryParams = ()) -> tuple[Any, ...]:
    """The row of a query that always returns exactly one (an aggregate, a catalog lookup).

    Raises:
        StoreError: the query returned no row, which such a query cannot do.
    """
    row = con.execute(sql, params).fetchone()
    if row is None:
        raise StoreError(f"the store returned no row for: {sql}")
    return row


def one_value(con: duckdb.DuckDBPyConnection, sql: str, params: QueryParams = ()) -> Any:
    """The single value of a one-row, one-column query, e.g. ``SELECT count(*) ...``."""
    return one_row(con, sql, params)[0]


def init_schema(path: Path | str | None = None) -> None:
    """Create every table if missing, upgrade an older store, record the version (idempotent).

    An older store (version `OLDEST_UPGRADABLE_VERSION` or later) is upgraded in place in
    the same transaction: schema.sql's upgrade statements add tables and columns, and
    `_rebuild_runs_without_method_list` lifts the old five-method CHECK of ``runs``.

    Raises:
        SchemaVersionError: The store holds a newer or unknown schema version.
        StoreError: The file is not a SoftGrade store (or not a DuckDB file at all), or it
            is truncated (`connect` checks).
    """
    with connect(path) as con:
        found = _stored_version(con, path)
        if found is not None and found != SCHEMA_VERSION:
            _check_upgradable(found, path)
        moved = _rebuild_runs_without_method_list(con)
        con.execute(SCHEMA_FILE.read_text())
        if moved:
            # By name: columns added since (version 5's ``pruned``, ``split_seed``, ``init_seed``)
            # take their defaults.
            con.execute(f"INSERT INTO runs BY NAME SELECT * FROM {moved}")
            con.execute(f"DROP TABLE {moved}")
        con.execute(
            "INSERT INTO meta VALUES ('schema_version', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [str(SCHEMA_VERSION)],
        )
    if found is not None and found != SCHEMA_VERSION:
        log.info("store %s upgraded from schema version %s to %s", path, found, SCHEMA_VERSION)


# Stores this process has set up or upgraded (`init_schema_once`), and the lock that makes a
# second caller wait for a first one's set-up rather than repeat it.
_SET_UP: set[str] = set()
_SET_UP_LOCK = threading.Lock()


def init_schema_once(path: Path | str | None = None) -> Path:
    """`init_schema` once per process for ``path`` (default `default_store_path`); return it.

    For a long-lived process that opens the store often (the app): set-up takes the write
    lock the worker needs, and a process's first DuckDB open of the store costs 0.2-0.5 s on
    a 2-core machine, which the app's start pays ahead of the first visitor
    (`jobs.services.import_warmup`). A failure is raised each time, never remembered.
    """
    store = Path(path) if path is not None else default_store_path()
    with _SET_UP_LOCK:
        if str(store) not in _SET_UP:
            init_schema(store)
            _SET_UP.add(str(store))
    return store


# The name the old runs table takes while init_schema rebuilds it (inside one transaction).
_RUNS_BEFORE_V3 = "runs_before_v3"


def _rebuild_runs_without_method_list(con: duckdb.DuckDBPyConnection) -> str | None:
    """Move a runs table that still limits ``method`` to the paper's five out of the way.

    Schema versions 1 and 2 had ``CHECK (method IN (...five))``, which DuckDB cannot alter or
    drop. The table is renamed here; schema.sql then creates the new one, and `init_schema`
    copies every row across and drops the old table, all in the caller's transaction, so a
    failure leaves the store as it was. Returns the old table's temporary name, or None when
    there is nothing to rebuild (a new store, or one upgraded already).
    """
    limited = one_value(
        con,
        "SELECT count(*) FROM duckdb_constraints() WHERE table_name = 'runs' "
        "AND constraint_type = 'CHECK' AND constraint_text LIKE '%IN (''nominal''%'",
    )
    if not limited:
        return None
    con.execute(f"ALTER TABLE runs RENAME TO {_RUNS_BEFORE_V3}")
    return _RUNS_BEFORE_V3


def check_schema(path: Path | str | None = None) -> None:
    """Fail with a remedy unless the store exists and holds this code's schema version."""
    with connect(path, read_only=True) as con:
        found = _stored_version(con, path)
    if found is None:
        raise SchemaVersionError(
            f"the store {_where(path)} is empty; start the worker or `python -m jobs up` to "
            "set it up"
        )
    if found != SCHEMA_VERSION:
        _check_upgradable(found, path)
        raise SchemaVersionError(
            f"the store {_where(path)} has schema version {found}, this SoftGrade uses "
            f"{SCHEMA_VERSION}. Starting the worker or `python -m jobs up` upgrades it in "
            "place (new tables and columns only; every result is kept)."
        )


def _where(path: Path | str | None) -> Path:
    return Path(path) if path is not None else default_store_path()


def _stored_version(con: duckdb.DuckDBPyConnection, path: Path | str | None) -> int | None:
    """The store's schema version; None for an empty database (a new store).

    Raises:
        StoreError: Tables but no ``meta``: some other program's DuckDB file.
        SchemaVersionError: ``meta`` holds no readable version.
    """
    tables = {
        r[0]
        for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
        ).fetchall()
    }
    if "meta" not in tables:
        if tables:
            raise StoreError(
                f"{_where(path)} is a DuckDB file but not a SoftGrade store (it has tables "
                f"{', '.join(sorted(tables)[:5])}, and no meta table). Nothing in it was "
                "changed; point SOFTGRADE_HOME at another folder."
            )
        return None
    row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    found = row[0] if row else None
    if found is None or not str(found).isdigit():
        raise SchemaVersionError(
            f"the store {_where(path)} records no readable schema version ({found!r}). "
            "Nothing in it was changed. Keep a backup of that file, then point SOFTGRADE_HOME "
            "at an empty folder to start a new store."
        )
    return int(found)


def _check_upgradable(found: int, path: Path | str | None) -> None:
    """Refuse a version this code cannot upgrade: newer, or older than the oldest known."""
    where = _where(path)
    if found > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the store {where} has schema version {found}, written by a newer SoftGrade; "
            f"this one reads versions up to {SCHEMA_VERSION}. Nothing in it was changed. Update "
            "SoftGrade, or keep a backup of that file and point SOFTGRADE_HOME at an empty "
            "folder to start a new store."
        )
    if found < OLDEST_UPGRADABLE_VERSION:
        raise SchemaVersionError(
            f"the store {where} has schema version {found}, older than this SoftGrade can "
            f"upgrade (from {OLDEST_UPGRADABLE_VERSION}). Nothing in it was changed; run the "
            f"SoftGrade release that wrote version {found}, or keep a backup and start a new "
            "store."
        )
