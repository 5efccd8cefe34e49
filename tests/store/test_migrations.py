"""Schema versions: a version-1 store is upgraded in place; unreadable files are refused."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from store import analysis as store_analysis
from store import runs as store_runs
from store.db import (
    SCHEMA_VERSION,
    SchemaVersionError,
    StoreError,
    check_schema,
    connect,
    init_schema,
)
from tests.helpers.stores import V1_SCHEMA, V2_SCHEMA, V3_SCHEMA, V4_SCHEMA, schema_text


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
        con.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION + 1)]
        )
    error = _unchanged_after(store, lambda: init_schema(store))
    assert isinstance(error, SchemaVersionError)
    assert f"version {SCHEMA_VERSION + 1}, written by a newer SoftGrade" in str(error)
    assert _version(store) == str(SCHEMA_VERSION + 1)


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


def _v2_store_with_every_paper_method(path: Path) -> Path:
    """A version-2 store (main at c2c4bab) holding a run of each of the paper's methods."""
    con = duckdb.connect(str(path))
    con.execute(V2_SCHEMA.read_text())
    con.execute("INSERT INTO meta VALUES ('schema_version', '2')")
    con.execute("INSERT INTO studies (study_id, name, spec) VALUES ('s2', 'two', '{}')")
    for i, method in enumerate(("nominal", "binomial", "beta", "triangular", "exponential")):
        con.execute(
            "INSERT INTO runs (run_id, study_id, task, method, seed, config_index, config, "
            "selected, status, best_epoch, val_amae, checkpoint_path) "
            "VALUES (?, 's2', 'KL', ?, 0, ?, '{\"lr\": 0.001}', ?, 'succeeded', 3, ?, ?)",
            [f"run-{method}", method, i, i % 2 == 0, 0.1 * i, f"/ckpt/{method}.pt"],
        )
        con.execute(
            "INSERT INTO predictions VALUES (?, 'im1', 'test', 1, 2, [0.1, 0.2, 0.7])",
            [f"run-{method}"],
        )
    with pytest.raises(duckdb.ConstraintException):
        con.execute(
            "INSERT INTO runs (run_id, study_id, task, method, seed, config_index, config, "
            "status) VALUES ('run-corn', 's2', 'KL', 'corn', 0, 0, '{}', 'succeeded')"
        )
    con.close()
    return path


def _rows(path: Path, table: str) -> list[tuple]:
    with connect(path, read_only=True) as con:
        return con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()


def _checks(path: Path) -> list[tuple]:
    with connect(path, read_only=True) as con:
        return con.execute(
            "SELECT table_name, constraint_text FROM duckdb_constraints() "
            "WHERE constraint_type = 'CHECK' ORDER BY ALL"
        ).fetchall()


def test_version_2_store_accepts_new_methods_after_upgrade_with_every_row_kept(tmp_path):
    old = _v2_store_with_every_paper_method(tmp_path / "v2.duckdb")
    runs_before, predictions_before = _rows(old, "runs"), _rows(old, "predictions")
    init_schema(old)
    assert _version(old) == str(SCHEMA_VERSION)
    # Every row kept, each gaining version 5's pruned flag as False (trained fully) and its
    # split_seed and init_seed as NULL ("the seed drew it").
    # ... and version 6's diverged_epoch as NULL (it never diverged).
    assert _rows(old, "runs") == [(*row, False, None, None, None) for row in runs_before]
    assert _rows(old, "predictions") == predictions_before
    with connect(old) as con:
        con.execute(
            "INSERT INTO runs (run_id, study_id, task, method, seed, config_index, config, "
            "status) VALUES ('run-corn', 's2', 'KL', 'corn', 0, 0, '{}', 'succeeded')"
        )
    assert len(_rows(old, "runs")) == len(runs_before) + 1
    with connect(old) as con, pytest.raises(duckdb.ConstraintException):
        con.execute(
            "INSERT INTO runs (run_id, study_id, task, method, seed, config_index, config, "
            "status) VALUES ('run-blank', 's2', 'KL', '  ', 0, 1, '{}', 'succeeded')"
        )


def test_upgraded_store_has_exactly_the_constraints_of_a_new_store(tmp_path):
    for name, build in (
        ("v1", _v1_store),
        ("v2", _v2_store_with_every_paper_method),
        ("v3", _v3_store_with_an_environment),
        ("v4", _v4_store_with_a_study),
    ):
        old = build(tmp_path / f"{name}.duckdb")
        init_schema(old)
        new = tmp_path / f"new-{name}.duckdb"
        init_schema(new)
        assert schema_text(old) == schema_text(new)
        assert _checks(old) == _checks(new)
        with connect(old, read_only=True) as con:
            tables = {
                r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
            }
        assert "runs_before_v3" not in tables


def test_a_failed_rebuild_leaves_the_old_store_as_it_was(tmp_path, monkeypatch):
    old = _v2_store_with_every_paper_method(tmp_path / "v2.duckdb")
    before = _rows(old, "runs")
    import store.db as db

    def broken_schema(*_args, **_kwargs):
        return "CREATE TABLE runs (run_id VARCHAR); SELECT * FROM no_such_table;"

    monkeypatch.setattr(db.SCHEMA_FILE.__class__, "read_text", broken_schema)
    with pytest.raises(duckdb.Error):
        init_schema(old)
    monkeypatch.undo()
    assert _version(old) == "2"
    with connect(old, read_only=True) as con:
        assert con.execute("SELECT * FROM runs ORDER BY ALL").fetchall() == before


def _v3_store_with_an_environment(path: Path) -> Path:
    """A version-3 store (main at 9380224) whose study card has a worker environment."""
    con = duckdb.connect(str(path))
    con.execute(V3_SCHEMA.read_text())
    con.execute("INSERT INTO meta VALUES ('schema_version', '3')")
    con.execute("INSERT INTO studies (study_id, name, spec) VALUES ('s3', 'three', '{}')")
    con.execute(
        "INSERT INTO study_environments (study_id, job_id, worker_id, worker_host, devices, "
        "torch) VALUES ('s3', 'j3', 'w3', 'old-box', '[\"cpu\"]', '2.9.0')"
    )
    con.close()
    return path


def test_version_3_store_keeps_its_environments_and_gains_how_runs_trained(tmp_path):
    old = _v3_store_with_an_environment(tmp_path / "v3.duckdb")
    init_schema(old)
    assert _version(old) == str(SCHEMA_VERSION)
    with connect(old, read_only=True) as con:
        rows = con.execute(
            "SELECT worker_host, torch, executor, threads_per_slot, search_pruned "
            "FROM study_environments"
        ).fetchall()
    assert rows == [("old-box", "2.9.0", None, None, None)]


def _v4_store_with_a_run(path: Path) -> Path:
    """A version-4 store (main at 70f0150) holding one finished run, before runs were marked
    pruned."""
    con = duckdb.connect(str(path))
    con.execute(V4_SCHEMA.read_text())
    con.execute("INSERT INTO meta VALUES ('schema_version', '4')")
    con.execute("INSERT INTO studies (study_id, name, spec) VALUES ('s4', 'four', '{}')")
    con.execute(
        "INSERT INTO runs (run_id, study_id, task, method, seed, config_index, config, status, "
        "selected, epochs_run) VALUES ('run-4', 's4', 'KL', 'beta', 0, 0, '{}', 'succeeded', "
        "true, 37)"
    )
    con.close()
    return path


def _v4_store_with_a_study(path: Path) -> Path:
    """A version-4 store (main at 70f0150) with a study of two seeds on a dataset whose two
    splits are stored: each run's seed drew both its split and its initialisation."""
    con = duckdb.connect(str(path))
    con.execute(V4_SCHEMA.read_text())
    con.execute("INSERT INTO meta VALUES ('schema_version', '4')")
    con.execute(
        "INSERT INTO datasets VALUES ('d4', 'phantom', 'phantom()', '{}', 4, current_timestamp)"
    )
    con.execute(
        "INSERT INTO studies (study_id, name, dataset_id, spec) VALUES ('s4', 'four', 'd4', '{}')"
    )
    for image, split0, split1 in (
        ("a", "train", "test"),
        ("b", "test", "train"),
        ("c", "val", "val"),
        ("d", "train", "train"),
    ):
        con.execute("INSERT INTO labels VALUES ('d4', ?, 'KL', 1, NULL)", [image])
        con.execute(
            "INSERT INTO splits VALUES ('d4', 0, ?, ?), ('d4', 1, ?, ?)",
            [image, split0, image, split1],
        )
    for seed in (0, 1):
        con.execute(
            "INSERT INTO runs (run_id, study_id, task, method, seed, config_index, config, "
            "selected, status, val_amae) VALUES (?, 's4', 'KL', 'nominal', ?, 0, "
            "'{\"lr\": 0.001, \"seed\": ' || ? || '}', true, 'succeeded', 0.2)",
            [f"run-{seed}", seed, seed],
        )
    con.close()
    return path


def test_version_4_store_keeps_its_runs_as_trained_fully(tmp_path):
    old = _v4_store_with_a_run(tmp_path / "v4.duckdb")
    init_schema(old)
    assert _version(old) == str(SCHEMA_VERSION)
    with connect(old, read_only=True) as con:
        rows = con.execute("SELECT run_id, selected, epochs_run, pruned FROM runs").fetchall()
    assert rows == [("run-4", True, 37, False)]


def test_version_1_runs_rebuilt_by_name_are_not_pruned(tmp_path):
    old = _v1_store(tmp_path / "old.duckdb")
    init_schema(old)
    with connect(old, read_only=True) as con:
        assert con.execute("SELECT run_id, pruned FROM runs").fetchall() == [("run-old", False)]


def test_version_4_store_opens_unchanged_and_reads_split_and_init_as_the_seed(tmp_path):
    old = _v4_store_with_a_study(tmp_path / "v4.duckdb")
    tables = ("runs", "splits", "labels", "studies", "datasets")
    before = {table: _rows(old, table) for table in tables}
    init_schema(old)
    assert _version(old) == str(SCHEMA_VERSION)
    after = {table: _rows(old, table) for table in tables}
    # Every row kept; the runs gain two columns, NULL: "the seed drew it".
    assert after["runs"] == [(*row, False, None, None, None) for row in before["runs"]]
    assert {t: after[t] for t in tables[1:]} == {t: before[t] for t in tables[1:]}
    factors = store_runs.seed_factors("s4", path=old)
    assert factors.to_dict("records") == [
        {"seed": 0, "split_seed": 0, "init_seed": 0},
        {"seed": 1, "split_seed": 1, "init_seed": 1},
    ]
    runs = store_runs.list_runs(["s4"], path=old)
    assert (runs["split_seed"] == runs["seed"]).all() and (runs["init_seed"] == runs["seed"]).all()
    sizes = store_analysis.split_sizes("s4", path=old).set_index("seed")
    assert sizes.loc[0, "n_test"] == 1 and sizes.loc[1, "n_test"] == 1  # each seed's own split
