"""Registered datasets, their images, labels and per-seed splits."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from engine.vocab import LEGACY_SPLIT_RULE, SPLIT_RULE, TASK_INFO
from store.db import StoreError, connect, one_value


def dataset_id_for(spec_key: str) -> str:
    """A short stable id for a dataset spec key."""
    return "ds-" + hashlib.sha1(spec_key.encode()).hexdigest()[:10]


def find_dataset(spec_key: str, *, path: Path | str | None = None) -> str | None:
    """The id of the dataset registered under ``spec_key``, or None."""
    with connect(path, read_only=True) as con:
        row = con.execute(
            "SELECT dataset_id FROM datasets WHERE spec_key = ?", [spec_key]
        ).fetchone()
    return row[0] if row else None


def dataset_params(
    dataset_id: str, *, path: Path | str | None = None
) -> tuple[str, dict[str, Any]] | None:
    """The kind and spec parameters a dataset was registered with, or None if unknown."""
    with connect(path, read_only=True) as con:
        row = con.execute(
            "SELECT kind, params FROM datasets WHERE dataset_id = ?", [dataset_id]
        ).fetchone()
    return (row[0], json.loads(row[1])) if row else None


def register_dataset(
    *,
    spec_key: str,
    kind: str,
    params: dict[str, Any],
    meta: pd.DataFrame,
    path: Path | str | None = None,
) -> str:
    """Register a dataset with its images and labels in one transaction (idempotent).

    Args:
        spec_key: Stable identity of the dataset spec.
        kind: 'phantom' or 'folder'.
        params: The spec's parameters (JSON).
        meta: One row per image: image_id, patient_id, side, source (optional),
            kl, kl_true, cppd, cppd_true (nullable integers).
    """
    with connect(path) as con:
        return insert_dataset(con, spec_key=spec_key, kind=kind, params=params, meta=meta)


def insert_dataset(
    con: duckdb.DuckDBPyConnection,
    *,
    spec_key: str,
    kind: str,
    params: dict[str, Any],
    meta: pd.DataFrame,
) -> str:
    """`register_dataset` inside an open transaction (an import writes its report with it)."""
    dataset_id = dataset_id_for(spec_key)
    if con.execute("SELECT 1 FROM datasets WHERE dataset_id = ?", [dataset_id]).fetchone():
        return dataset_id
    con.execute(
        "INSERT INTO datasets (dataset_id, kind, spec_key, params, n_images) "
        "VALUES (?, ?, ?, ?, ?)",
        [dataset_id, kind, spec_key, json.dumps(params), len(meta)],
    )
    images = pd.DataFrame(
        {
            "dataset_id": dataset_id,
            "image_id": meta["image_id"].astype(str),
            "patient_id": meta["patient_id"].astype(str),
            "side": meta.get("side"),
            "source": meta.get("source"),
        }
    )
    con.register("new_images", images)
    con.execute("INSERT INTO images SELECT * FROM new_images")
    con.unregister("new_images")
    labels = _long_labels(dataset_id, meta)
    con.register("new_labels", labels)
    con.execute("INSERT INTO labels SELECT * FROM new_labels")
    con.unregister("new_labels")
    return dataset_id


def _long_labels(dataset_id: str, meta: pd.DataFrame) -> pd.DataFrame:
    parts = []
    for task, info in TASK_INFO.items():
        grade_col, true_col = info.column, info.true_column
        if grade_col not in meta:
            continue
        rows = meta[meta[grade_col].notna()]
        true = rows[true_col] if true_col in rows else pd.Series(pd.NA, index=rows.index)
        parts.append(
            pd.DataFrame(
                {
                    "dataset_id": dataset_id,
                    "image_id": rows["image_id"].astype(str),
                    "task": task,
                    "grade": rows[grade_col].astype("int64"),
                    "true_grade": true.astype("Int64"),
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def dataset_labels(dataset_id: str, *, path: Path | str | None = None) -> pd.DataFrame:
    """One row per image: image_id, patient_id, side, kl, kl_true, cppd, cppd_true."""
    with connect(path, read_only=True) as con:
        return con.execute(
            """
            SELECT i.image_id, i.patient_id, i.side,
                   max(l.grade) FILTER (WHERE l.task = 'KL') AS kl,
                   max(l.true_grade) FILTER (WHERE l.task = 'KL') AS kl_true,
                   max(l.grade) FILTER (WHERE l.task = 'CPPD') AS cppd,
                   max(l.true_grade) FILTER (WHERE l.task = 'CPPD') AS cppd_true
            FROM images i LEFT JOIN labels l USING (dataset_id, image_id)
            WHERE i.dataset_id = ? GROUP BY ALL ORDER BY i.image_id
            """,
            [dataset_id],
        ).df()


def list_datasets(*, path: Path | str | None = None) -> pd.DataFrame:
    """Registered datasets with their image and label counts."""
    with connect(path, read_only=True) as con:
        return con.execute(
            """
            SELECT d.dataset_id, d.kind, d.spec_key, d.params, d.n_images, d.created_at,
                   count(*) FILTER (WHERE l.task = 'KL') AS n_kl,
                   count(*) FILTER (WHERE l.task = 'CPPD') AS n_cppd
            FROM datasets d LEFT JOIN labels l USING (dataset_id)
            GROUP BY ALL ORDER BY d.created_at
            """
        ).df()


def save_splits(
    dataset_id: str,
    seed: int,
    splits: pd.Series,
    *,
    rule: str = SPLIT_RULE,
    path: Path | str | None = None,
) -> None:
    """Store the split of (dataset, seed) and the rule that made it, once; an existing split
    is kept unchanged.

    Args:
        splits: image_id -> 'train' | 'val' | 'test'.
        rule: the rule that made it (`engine.datasets.make_splits` follows `SPLIT_RULE`).
    """
    frame = pd.DataFrame(
        {"dataset_id": dataset_id, "seed": seed, "image_id": splits.index, "split": splits.values}
    )
    with connect(path) as con:
        if con.execute(
            "SELECT 1 FROM splits WHERE dataset_id = ? AND seed = ? LIMIT 1", [dataset_id, seed]
        ).fetchone():
            return
        con.register("new_splits", frame)
        con.execute("INSERT INTO splits SELECT * FROM new_splits")
        con.unregister("new_splits")
        con.execute("INSERT INTO split_rules VALUES (?, ?, ?)", [dataset_id, seed, rule])


def split_rules(dataset_id: str, *, path: Path | str | None = None) -> pd.DataFrame:
    """Which rule made each stored split of a dataset (for the Data page).

    Splits stored before rules were recorded carry `LEGACY_SPLIT_RULE`.

    Returns:
        Columns ``seed`` and ``rule``, one row per seed with a stored split, by seed.
    """
    with connect(path, read_only=True) as con:
        recorded = one_value(
            con, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'split_rules'"
        )
        join = (
            "LEFT JOIN split_rules r USING (dataset_id, seed)"
            if recorded
            else "LEFT JOIN (SELECT NULL::VARCHAR AS rule) r ON false"
        )
        return con.execute(
            f"""
            SELECT s.seed, coalesce(r.rule, ?) AS rule
            FROM (SELECT DISTINCT dataset_id, seed FROM splits WHERE dataset_id = ?) s
            {join}
            ORDER BY s.seed
            """,
            [LEGACY_SPLIT_RULE, dataset_id],
        ).df()


def load_splits(dataset_id: str, seed: int, *, path: Path | str | None = None) -> pd.Series | None:
    """The stored split of (dataset, seed) as image_id -> split, or None if not decided yet."""
    with connect(path, read_only=True) as con:
        frame = con.execute(
            "SELECT image_id, split FROM splits WHERE dataset_id = ? AND seed = ?",
            [dataset_id, seed],
        ).df()
    if frame.empty:
        return None
    return frame.set_index("image_id")["split"]


def set_study_dataset(study_id: str, dataset_id: str, *, path: Path | str | None = None) -> None:
    """Link a study to the dataset it runs on."""
    with connect(path) as con:
        updated = con.execute(
            "UPDATE studies SET dataset_id = ? WHERE study_id = ? RETURNING study_id",
            [dataset_id, study_id],
        ).fetchone()
    if updated is None:
        raise StoreError(f"no study {study_id!r}")
