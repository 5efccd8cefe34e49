"""`backup_store`: a consistent copy of the store taken while another process writes."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest

from store.backup import backup_store
from store.db import StoreError, check_schema, connect
from tests.helpers.stores import schema_text


def _write_pairs(path: str, started, stop) -> None:
    """A writer process: two log lines per transaction until told to stop.

    Any consistent snapshot holds an even number of them; half a transaction would be odd.
    """
    from store.db import RetryPolicy
    from store.db import connect as store_connect

    while not stop.is_set():
        with store_connect(path, retry=RetryPolicy(max_wait_s=60)) as con:
            for _ in range(2):
                con.execute(
                    "INSERT INTO job_logs (job_id, level, message) VALUES ('pair', 'INFO', 'x')"
                )
        started.set()


def _pairs(path: Path) -> int:
    with connect(path, read_only=True) as con:
        return con.execute("SELECT count(*) FROM job_logs WHERE job_id = 'pair'").fetchone()[0]


@pytest.mark.slow  # starts a process (tests/helpers/tier_guard.py)
def test_backup_while_a_writer_runs_is_a_consistent_copy(store, tmp_path):
    ctx = mp.get_context("spawn")
    started, stop = ctx.Event(), ctx.Event()
    writer = ctx.Process(target=_write_pairs, args=(str(store), started, stop))
    writer.start()
    try:
        assert started.wait(60), "the writer never wrote"
        backups = [backup_store(tmp_path / f"copy{i}.duckdb", path=store) for i in range(3)]
        assert writer.is_alive()
    finally:
        stop.set()
        writer.join(60)
    assert writer.exitcode == 0
    counts = [_pairs(b.path) for b in backups]
    assert all(n > 0 and n % 2 == 0 for n in counts)
    assert counts == sorted(counts) and _pairs(store) >= counts[-1]
    assert [b.rows["job_logs"] for b in backups] == counts
    for b in backups:
        check_schema(b.path)
        assert schema_text(b.path) == schema_text(store)
        assert b.size_bytes == b.path.stat().st_size
    assert not list(tmp_path.glob("*.partial*"))


def test_backup_keeps_indexes_constraints_and_every_row(store, tmp_path):
    with connect(store) as con:
        con.execute("INSERT INTO studies (study_id, name, spec) VALUES ('s', 'n', '{}')")
    copy = backup_store(tmp_path / "copy.duckdb", path=store).path
    with connect(copy) as con:
        assert con.execute("SELECT study_id, name FROM studies").fetchall() == [("s", "n")]
        with pytest.raises(Exception, match="(?i)constraint"):
            con.execute("INSERT INTO jobs (job_id, study_id, status) VALUES ('j', 's', 'exploded')")


def test_backup_never_overwrites_a_file(store, tmp_path):
    dest = tmp_path / "taken.duckdb"
    dest.write_bytes(b"precious")
    with pytest.raises(StoreError, match="exists already"):
        backup_store(dest, path=store)
    assert dest.read_bytes() == b"precious"
    with pytest.raises(StoreError, match="another file than the store"):
        backup_store(store, path=store)


def test_default_backup_goes_to_the_backups_folder(store):
    made = backup_store(path=store)
    assert made.path.parent == (store.parent / "backups").resolve()
    assert made.path.name.startswith("softgrade-") and made.path.suffix == ".duckdb"


def test_backup_of_a_missing_store_says_so(tmp_path):
    with pytest.raises(StoreError, match="no store at"):
        backup_store(tmp_path / "b.duckdb", path=tmp_path / "absent.duckdb")


def test_a_backup_whose_name_holds_a_double_quote_is_written(store, tmp_path):
    made = backup_store(tmp_path / 'lab "copy".duckdb', path=store)
    assert made.path.name == 'lab "copy".duckdb' and made.path.is_file()
    assert made.rows["meta"] >= 1


def test_a_new_store_and_its_backups_are_readable_by_their_owner_only(tmp_path):
    import stat

    from store.db import init_schema

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    store = shared / "lab" / "home" / "softgrade.duckdb"
    init_schema(store)
    made = backup_store(path=store)
    for folder in (store.parent, store.parent.parent, made.path.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    for file in (store, made.path):
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755  # a folder that existed is left
