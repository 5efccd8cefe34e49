"""A writer gets the store even while readers keep it open one after another."""

from __future__ import annotations

import multiprocessing as mp
import os
import time

import pytest

from store.db import LOCK_STATS, RetryPolicy, connect, writer_waiting_marker


def _read_forever(path: str, ready, stop) -> None:
    """A reader process: read-only connections back to back, each held ~30 ms (an open page)."""
    from store.db import RetryPolicy as Policy
    from store.db import connect as store_connect

    ready.set()
    while not stop.is_set():
        with store_connect(path, read_only=True, retry=Policy(max_wait_s=60)) as con:
            con.execute("SELECT count(*) FROM jobs").fetchone()
            time.sleep(0.03)


@pytest.mark.slow  # starts a process (tests/helpers/tier_guard.py)
def test_writer_is_not_starved_by_overlapping_readers(store):
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    readers = []
    for _ in range(4):
        ready = ctx.Event()
        proc = ctx.Process(target=_read_forever, args=(str(store), ready, stop))
        proc.start()
        readers.append((proc, ready))
    try:
        assert all(ready.wait(60) for _, ready in readers)
        time.sleep(2.0)  # readers overlapping
        # Without writer preference, writes here waited up to 21 s behind the readers.
        for _ in range(5):
            with connect(store, retry=RetryPolicy(max_wait_s=10)) as con:
                con.execute("INSERT INTO meta VALUES (uuid()::VARCHAR, 'written')")
            time.sleep(0.3)
        assert all(proc.is_alive() for proc, _ in readers)
    finally:
        stop.set()
        for proc, _ in readers:
            proc.join(30)
    with connect(store, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM meta WHERE value = 'written'").fetchone()[0] == 5
    assert not list(store.parent.glob("*.writer-waiting"))


def test_marker_of_a_writer_that_died_does_not_hold_readers_back(store):
    marker = writer_waiting_marker(store)
    marker.touch()
    an_hour_ago = time.time() - 3600
    os.utime(marker, (an_hour_ago, an_hour_ago))
    with connect(store, read_only=True) as con:
        con.execute("SELECT 1").fetchone()
    assert LOCK_STATS.recent_waits_s[-1] == 0.0


def test_reader_holds_back_while_a_writer_waits(store):
    writer_waiting_marker(store).touch()  # a writer announced itself just now
    with connect(store, read_only=True) as con:
        con.execute("SELECT 1").fetchone()
    assert LOCK_STATS.recent_waits_s[-1] > 0.0  # yielded until the marker went stale
