"""Schema versions: a version-1 store is upgraded in place; unreadable files are refused."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from store.db import (
    SCHEMA_VERSION,
    SchemaVersionError,
    StoreError,
    check_schema,
    connect,
    init_schema,
)
from tests.helpers.stores import V1_SCHEMA, schema_text


def _v1_store(path: Path) -> Path:
    """A store as SoftGrade wrote it at schema version 1, holding one study with a run."""
    con = duckdb.connect(str(path))
    con.execute(V1_SCHEMA.read_text())
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.execute("INSERT INTO studies (study_id, name, spec) VALUES ('study-old', 'old', '{}')")
    con.execute(
        "INSERT INTO jobs (job_id, study_id, status) VALUES ('job-old', 'study-old', 'succeeded')"
    )
    con.execute(
        "INSERT INTO runs (run_id, study_id, task, method, seed, config_index, config, status) "
        "VALUES ('run-old', 'study-old', 'KL', 'beta', 0, 0, '{}', 'succeeded')"
    )
    con.execute("INSERT INTO predictions VALUES ('run-old', 'im1', 'test', 1, 2, [0.1, 0.2, 0.7])")
    con.close()
    return path


def _version(path: Path) -> str:
    with connect(path, read_only=True) as con:
        return con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]


def test_version_1_store_is_upgraded_in_place_and_keeps_its_data(tmp_path):
    old = _v1_store(tmp_path / "old.duckdb")
    with pytest.raises(SchemaVersionError, match="version 1.*upgrades it in place"):
        check_schema(old)
    init_schema(old)
    assert _version(old) == str(SCHEMA_VERSION)
    check_schema(old)
    with connect(old, read_only=True) as con:
        study = con.execute(
            "SELECT name, launched_by, notes, tags, archived_at FROM studies"
        ).fetchall()
        preds = con.execute("SELECT run_id, probs FROM predictions").fetchall()
        jobs = con.execute("SELECT job_id, status FROM jobs").fetchall()
    assert study == [("old", None, None, [], None)]
    assert [(r, [round(p, 2) for p in probs]) for r, probs in preds] == [
        ("run-old", [0.1, 0.2, 0.7])
    ]
    assert jobs == [("job-old", "succeeded")]


def test_upgraded_store_has_exactly_the_schema_of_a_new_store(tmp_path):
    old = _v1_store(tmp_path / "old.duckdb")
    init_schema(old)
    init_schema(old)  # a second start changes nothing
    new = tmp_path / "new.duckdb"
    init_schema(new)
    assert schema_text(old) == schema_text(new)


def _unchanged_after(path: Path, call) -> StoreError:
    """Run ``call``, expect a StoreError, and check the file's bytes did not change."""
    before = path.read_bytes()
    with pytest.raises(StoreError) as caught:
        call()
    assert path.read_bytes() == before
    assert not Path(f"{path}.wal").exists()
    return caught.value


def test_store_of_a_newer_version_is_refused_and_left_alone(store):
    with connect(store) as con:
        con.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    error = _unchanged_after(store, lambda: init_schema(store))
    assert isinstance(error, SchemaVersionError)
    assert "version 3, written by a newer SoftGrade" in str(error)
    assert _version(store) == "3"


def test_truncated_store_is_refused_with_one_message_and_left_alone(store):
    data = store.read_bytes()
    store.write_bytes(data[: len(data) // 2])
    for call in (lambda: init_schema(store), lambda: check_schema(store)):
        error = _unchanged_after(store, call)
        assert "cannot be opened" in str(error) and "truncated" in str(error)


@pytest.mark.parametrize("content", [b"", b"name,grade\nknee1,2\n" * 50])
def test_file_that_is_not_duckdb_is_refused_and_left_alone(tmp_path, content):
    path = tmp_path / "softgrade.duckdb"
    path.write_bytes(content)
    error = _unchanged_after(path, lambda: init_schema(path))
    assert "not a DuckDB file" in str(error) and "Nothing in it was changed" in str(error)


def test_duckdb_file_of_another_program_is_refused(tmp_path):
    path = tmp_path / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE invoices (id INTEGER)")
    con.close()
    with pytest.raises(StoreError, match="not a SoftGrade store.*invoices"):
        init_schema(path)
    with connect(path, read_only=True) as con:
        tables = con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    assert tables == [("invoices",)]


def test_store_without_a_readable_version_is_refused(store):
    with connect(store) as con:
        con.execute("UPDATE meta SET value = 'banana' WHERE key = 'schema_version'")
    with pytest.raises(SchemaVersionError, match="no readable schema version"):
        init_schema(store)
