"""Results trained by another tool, stored as a study (``softgrade import-results``).

The study is stored the way a study bundle is (`store.bundle.insert_study`): a finished job,
one selected run per (task, method, seed) and, for per-film predictions, each run's test
predictions. Per-seed metric values go to ``seed_metrics`` and the seeds' split sizes, when
given, to ``seed_split_sizes``. Everything is written in one transaction: a file is either
stored whole or not at all. Such a study has no dataset (no films to train on): its spec's
``imported_results`` says where it came from.
"""

from __future__ import annotations

import json
import socket
import tempfile
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from store.audit import record_in
from store.bundle import insert_study
from store.db import StoreError, connect

#: What each bundle-shaped table is written from (columns cast to the bundle's types).
_PARTS = {
    "runs": """
        SELECT run_id, task, method, CAST(seed AS INTEGER) AS seed, 0 AS config_index,
               '{}' AS config, true AS selected, CAST(NULL AS INTEGER) AS best_epoch,
               CAST(NULL AS INTEGER) AS epochs_run, CAST(NULL AS DOUBLE) AS val_amae,
               CAST(NULL AS VARCHAR) AS device, CAST(NULL AS DOUBLE) AS duration_s,
               CAST(NULL AS VARCHAR) AS weights_init, CAST($now AS TIMESTAMP) AS created_at
        FROM frame""",
    "predictions": """
        SELECT run_id, film AS image_id, split, CAST(grade AS TINYINT) AS y_true,
               CAST(y_pred AS TINYINT) AS y_pred, CAST(probs AS FLOAT[]) AS probs
        FROM frame""",
    "epochs": """
        SELECT CAST(NULL AS VARCHAR) AS run_id, 0 AS epoch, CAST(NULL AS DOUBLE) AS train_loss,
               CAST(NULL AS DOUBLE) AS val_loss, CAST(NULL AS DOUBLE) AS val_amae,
               CAST(NULL AS DOUBLE) AS duration_s
        WHERE false""",
}


@dataclass(frozen=True)
class StoredResults:
    """What `store_results` stored."""

    study_id: str
    name: str
    runs: int
    predictions: int
    metric_values: int


def new_study_id() -> str:
    """A fresh study id, as queued studies get (``study-<10 hex>``)."""
    return f"study-{uuid.uuid4().hex[:10]}"


def store_results(
    *,
    study_id: str,
    name: str,
    spec: dict[str, Any],
    runs: pd.DataFrame,
    predictions: pd.DataFrame,
    metrics: pd.DataFrame,
    sizes: pd.DataFrame,
    by: str,
    path: Path | str | None = None,
) -> StoredResults:
    """Store imported results as one study, in one transaction.

    Args:
        study_id: the new study's id (`new_study_id`).
        name: its name.
        spec: its spec (tasks, methods, seeds, ``imported_results``: where it came from).
        runs: ``run_id, task, method, seed``: one selected run each.
        predictions: ``run_id, film, split, grade, y_pred, probs``: test films, and the
            validation films a file gave (``split`` 'val'); may be empty.
        metrics: ``task, method, seed, metric, value`` (may be empty).
        sizes: ``task, seed, n_train, n_test`` (may be empty).
        by: who imported it (the audit log's actor).
        path: the store (its schema must exist).

    Raises:
        StoreError: the store refused a row (nothing is stored).
    """
    now = datetime.now(UTC).replace(tzinfo=None)
    study = {"study_id": study_id, "name": name, "spec": spec, "created_at": now}
    frames = {"runs": runs, "predictions": predictions, "epochs": runs.head(0)}
    with tempfile.TemporaryDirectory() as tmp, connect(path) as con:
        try:
            parts = _write_parts(con, frames, Path(tmp), now)
            stored = insert_study(con, study, None, parts)
            con.execute(
                "UPDATE studies SET launched_by = ?, launched_from = ? WHERE study_id = ?",
                [by, socket.gethostname(), study_id],
            )
            _insert_frame(con, "seed_metrics", metrics, study_id)
            _insert_frame(con, "seed_split_sizes", sizes, study_id)
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0]
            raise StoreError(f"the results cannot be stored ({first}); nothing was stored") from exc
        record_in(
            con,
            "import",
            actor=by,
            target=study_id,
            detail=f"results {name!r} from {spec.get('imported_results', {}).get('file')}",
        )
    return StoredResults(study_id, name, stored, len(predictions), len(metrics))


def _write_parts(
    con: duckdb.DuckDBPyConnection, frames: dict[str, pd.DataFrame], folder: Path, now: datetime
) -> dict[str, str]:
    """Each bundle table as Parquet in ``folder``, for `store.bundle.insert_study`."""
    parts = {}
    for table, query in _PARTS.items():
        target = folder / f"{table}.parquet"
        frame = frames[table]
        if table == "predictions" and frame.empty:
            query += " WHERE false"
        con.register("frame", frame)
        try:
            params = {"now": now} if "$now" in query else {}
            con.execute(f"COPY ({query}) TO '{target}' (FORMAT parquet)", params)
        finally:
            con.unregister("frame")
        parts[table] = str(target)
    return parts


def _insert_frame(
    con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame, study_id: str
) -> None:
    if frame.empty:
        return
    columns = list(frame.columns)
    con.register("frame", frame)
    try:
        con.execute(
            f"INSERT INTO {table} (study_id, {', '.join(columns)}) "
            f"SELECT ?, {', '.join(columns)} FROM frame",
            [study_id],
        )
    finally:
        con.unregister("frame")


def seed_metric_values(study_ids: list[str], *, path: Path | str | None = None) -> pd.DataFrame:
    """Imported per-seed metric values with their selected run.

    Returns:
        Columns study_id, run_id, task, method, seed, metric, value (no rows for studies
        trained here).
    """
    with connect(path, read_only=True) as con:
        return con.execute(
            """
            SELECT m.study_id, r.run_id, m.task, m.method, m.seed, m.metric, m.value
            FROM seed_metrics m
            JOIN runs r ON r.study_id = m.study_id AND r.task = m.task AND r.method = m.method
                       AND r.seed = m.seed AND r.selected
            WHERE m.study_id IN (SELECT unnest(?))
            ORDER BY m.task, m.method, m.seed, m.metric
            """,
            [study_ids],
        ).df()


def imported_results_source(study_id: str, *, path: Path | str | None = None) -> dict | None:
    """Where an imported study's results came from (its spec's ``imported_results``), or
    None for a study trained here or imported from a bundle."""
    with connect(path, read_only=True) as con:
        row = con.execute("SELECT spec FROM studies WHERE study_id = ?", [study_id]).fetchone()
    if row is None:
        raise StoreError(f"no study {study_id!r} in the store")
    source = json.loads(row[0]).get("imported_results")
    return source if isinstance(source, dict) else None
