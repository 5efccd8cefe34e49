"""Schema set-up, version checks and the lock-retry policy."""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
from pathlib import Path

import duckdb
import pytest

from store.db import (
    LOCK_STATS,
    RetryPolicy,
    SchemaVersionError,
    StoreError,
    StoreLockedError,
    check_schema,
    connect,
    init_schema,
)
from tests.helpers.stores import schema_text

SNAPSHOT = Path(__file__).parent / "snapshots" / "schema.txt"


def test_init_schema_is_idempotent_and_matches_snapshot(tmp_path):
    path = tmp_path / "s.duckdb"
    for _ in range(3):
        init_schema(path)
    assert schema_text(path) == SNAPSHOT.read_text()


def test_store_of_another_version_fails_with_a_remedy(store):
    with connect(store) as con:
        con.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    with pytest.raises(SchemaVersionError, match="schema version 999.*backup"):
        check_schema(store)
    with pytest.raises(SchemaVersionError):
        init_schema(store)


def test_unknown_job_status_is_rejected_by_the_schema(store):
    with pytest.raises(duckdb.ConstraintException), connect(store) as con:
        con.execute("INSERT INTO jobs (job_id, study_id, status) VALUES ('j', 's', 'exploded')")


def test_failed_block_rolls_back_everything(store):
    with pytest.raises(RuntimeError), connect(store) as con:
        con.execute("INSERT INTO meta VALUES ('x', '1')")
        raise RuntimeError("boom")
    with connect(store, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM meta WHERE key = 'x'").fetchone()[0] == 0


def _hold_lock(path: str, ready, release) -> None:
    con = duckdb.connect(path)
    ready.set()
    release.wait(240)
    con.close()


@pytest.mark.slow  # starts a process (tests/helpers/tier_guard.py)
def test_connect_retries_while_another_process_holds_the_file(store):
    ctx = mp.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(str(store), ready, release))
    holder.start()
    try:
        # A spawned child imports duckdb first: on a loaded machine that alone can take tens
        # of seconds, so the wait is generous and says what it saw when it gives up.
        assert ready.wait(180), f"the lock holder never opened it (alive: {holder.is_alive()})"
        locked = pytest.raises(StoreLockedError, match="locked by another process")
        with locked, connect(store, retry=RetryPolicy(max_wait_s=0.3)):
            pass
        before = LOCK_STATS.retries
        release.set()
        with connect(store, retry=RetryPolicy(max_wait_s=20)) as con:
            assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        assert LOCK_STATS.retries >= before
    finally:
        release.set()
        holder.join(10)


def test_a_connection_inside_another_is_not_held_up_by_the_truncation_check(store):
    import time

    from store import db

    started = time.monotonic()
    with connect(store) as outer:
        outer.execute("CREATE TABLE grown AS SELECT range AS i FROM range(2000000)")
        db._BLOCKS_CHECKED.clear()  # as when the file grew since the last check
        with connect(store) as inner:
            assert inner.execute("SELECT count(*) FROM meta").fetchone()[0] >= 1
    assert time.monotonic() - started < 10


def test_a_store_another_process_grows_just_before_the_open_is_not_called_truncated(
    store, monkeypatch
):
    """The block check reads the file's size after the open: a write landing between a size
    read and the open (another process's, as under a busy worker) is not a truncation."""
    import duckdb

    from store import db

    real_open = db._open_with_retry

    def a_write_lands_first(path, read_only, retry, **kwargs):
        monkeypatch.setattr(db, "_open_with_retry", real_open)
        grower = duckdb.connect(str(path))
        grower.execute("CREATE TABLE grown AS SELECT range AS i FROM range(300000)")
        grower.close()
        return real_open(path, read_only, retry, **kwargs)

    db._BLOCKS_CHECKED.clear()  # as in a process that has not checked this store yet
    monkeypatch.setattr(db, "_open_with_retry", a_write_lands_first)
    with connect(store, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM grown").fetchone()[0] == 300000


def test_init_schema_once_sets_a_store_up_once_per_process_and_never_remembers_a_failure(
    tmp_path, monkeypatch
):
    from store import db

    calls: list[Path] = []
    set_up = db.init_schema

    def counted(path: Path) -> None:
        calls.append(path)
        set_up(path)

    monkeypatch.setattr(db, "init_schema", counted)
    store = tmp_path / "softgrade.duckdb"
    assert db.init_schema_once(store) == store and store.exists()
    db.init_schema_once(store)
    assert calls == [store]
    broken = tmp_path / "not-a-store.duckdb"
    broken.write_bytes(b"name,grade\nknee1,2\n" * 50)
    for _ in range(2):  # refused each time, with its reason, not remembered as set up
        with pytest.raises(db.StoreError, match="not a DuckDB file"):
            db.init_schema_once(broken)
    assert calls == [store, broken, broken]


def test_a_store_caught_in_the_middle_of_growing_a_block_is_not_called_truncated(store):
    """The kernel grows a file page by page while a writer appends a block: a size read then
    ends inside a block for a moment (a kill -9 test met it from the worker's own heartbeat).
    Once the writer is done the file is whole, and the store opens."""
    whole = store.read_bytes()
    store.write_bytes(whole[:-1000])  # a writer half-way through the last block

    def finish_the_block() -> None:
        time.sleep(0.1)
        store.write_bytes(whole)

    writer = threading.Thread(target=finish_the_block)
    writer.start()
    try:
        with connect(store, read_only=True) as con:
            assert con.execute("SELECT count(*) FROM meta").fetchone()[0] >= 1
    finally:
        writer.join()


def test_a_store_that_stays_cut_inside_a_block_is_still_refused(store):
    store.write_bytes(store.read_bytes()[:-1000])
    with pytest.raises(StoreError, match="truncated"):
        connect(store, read_only=True).__enter__()


_OPEN_FOR_WRITING = """
import sys, duckdb
try:
    duckdb.connect(sys.argv[1]).close()
    print("opened")
except duckdb.IOException as exc:
    print("refused", exc)
"""


def _other_process_opens_for_writing(store: Path) -> str:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", _OPEN_FOR_WRITING, str(store)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result.stdout.strip()


@pytest.mark.slow  # starts a process (tests/helpers/tier_guard.py)
def test_another_thread_opening_the_store_keeps_this_process_s_write_lock(store):
    # Closing any descriptor of a file drops every POSIX lock the process holds on it, and
    # DuckDB locks the store that way: a header read by a second thread must not let another
    # process open the store for writing while the first thread writes.
    holding, release = threading.Event(), threading.Event()

    def write() -> None:
        with connect(store) as con:
            con.execute("CREATE TABLE IF NOT EXISTS held (i INTEGER)")
            holding.set()
            release.wait(60)

    writer = threading.Thread(target=write)
    writer.start()
    reader = None
    try:
        assert holding.wait(30), "the writing thread never opened the store"
        assert _other_process_opens_for_writing(store).startswith("refused")

        def read() -> None:
            with connect(store, read_only=True) as con:
                con.execute("SELECT count(*) FROM meta").fetchall()

        reader = threading.Thread(target=read)
        reader.start()
        time.sleep(1.0)  # the reader's checks ran, or it waits for the writing thread

        seen = _other_process_opens_for_writing(store)
        assert seen.startswith("refused"), f"another process could write beside us: {seen}"
    finally:
        release.set()
        writer.join(30)
        if reader is not None:
            reader.join(30)
