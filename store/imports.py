"""Import reports: which folder a dataset came from, and every problem its check found.

Written once per import, in the same transaction as the dataset it registered (so a dataset
registered from an import always has its report); read by the Data page and the CLI.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from store.audit import LOCAL_ACTOR, record_in
from store.datasets import insert_dataset
from store.db import connect

#: Columns of a problems table, in the order the report shows them.
PROBLEM_COLUMNS = ("file", "csv_row", "severity", "kind", "problem", "action")


@dataclass(frozen=True)
class ImportSummary:
    """One import: where the films came from and what its check found.

    ``n_left_out`` counts listed films that were not registered; ``notes`` are what the
    layout decided (patient ids, the layout's own split, the detector).
    """

    import_id: str
    dataset_id: str
    name: str
    source: str
    labels_csv: str | None
    layout: str
    layout_split: str | None
    skip_bad: bool
    n_files: int
    n_rows: int
    n_good: int
    n_left_out: int
    n_errors: int
    n_warnings: int
    notes: list[str]
    checked_s: float | None
    created_at: datetime
    #: The knee detector the check used ('classical', or a trained YOLO detector's key; None
    #: for an import stored before detectors were recorded) and its held-out mean IoU and
    #: mAP50 (a trained detector's only).
    detector: str | None = None
    detector_iou: float | None = None
    detector_map: float | None = None


def record_import(
    *,
    spec_key: str,
    kind: str,
    params: dict[str, Any],
    meta: pd.DataFrame,
    summary: dict[str, Any],
    problems: pd.DataFrame,
    by: str = LOCAL_ACTOR,
    path: Path | str | None = None,
) -> tuple[str, str]:
    """Register the imported dataset (unless it is already) and store its report, atomically.

    Args:
        spec_key, kind, params, meta: As `store.datasets.register_dataset` takes them.
        summary: name, source, labels_csv, layout, layout_split, skip_bad, n_files, n_rows,
            n_good, n_left_out, notes (list of str) and checked_s of the import; optionally
            ``detector``: {name, key, held_out_iou, held_out_map} of the knee detector it
            used (its ``key``, else its ``name``, is stored: 'classical' or a trained key).
        problems: One row per problem with `PROBLEM_COLUMNS` (``csv_row`` may be NA).
        by: Who imported (the signed-in person, or the OS user at the command line); the
            audit line ``import`` is written in the same transaction.

    Returns:
        (dataset_id, import_id).
    """
    import_id = "imp-" + uuid.uuid4().hex[:12]
    frame = _problem_rows(import_id, problems)
    with connect(path) as con:
        dataset_id = insert_dataset(con, spec_key=spec_key, kind=kind, params=params, meta=meta)
        con.execute(
            """
            INSERT INTO dataset_imports (import_id, dataset_id, name, source, labels_csv,
                layout, layout_split, skip_bad, n_files, n_rows, n_good, n_left_out,
                n_errors, n_warnings, notes, checked_s)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                import_id,
                dataset_id,
                summary["name"],
                summary["source"],
                summary.get("labels_csv"),
                summary["layout"],
                summary.get("layout_split"),
                bool(summary["skip_bad"]),
                int(summary["n_files"]),
                int(summary["n_rows"]),
                int(summary["n_good"]),
                int(summary["n_left_out"]),
                int((frame["severity"] == "error").sum()),
                int((frame["severity"] == "warning").sum()),
                json.dumps(list(summary.get("notes", []))),
                summary.get("checked_s"),
            ],
        )
        detector = summary.get("detector")
        if detector:
            con.execute(
                "INSERT INTO import_detectors VALUES (?, ?, ?, ?)",
                [
                    import_id,
                    detector.get("key") or detector["name"],
                    detector.get("held_out_iou"),
                    detector.get("held_out_map"),
                ],
            )
        if not frame.empty:
            con.register("new_problems", frame)
            con.execute("INSERT INTO import_problems SELECT * FROM new_problems")
            con.unregister("new_problems")
        record_in(
            con,
            "import",
            actor=by,
            target=str(summary["source"]),
            detail=f"{dataset_id} ({import_id}): {int(summary['n_good'])} film(s), "
            f"{int(summary['n_left_out'])} left out",
        )
    return dataset_id, import_id


def _problem_rows(import_id: str, problems: pd.DataFrame) -> pd.DataFrame:
    rows = pd.DataFrame(
        {
            "import_id": import_id,
            "seq": range(len(problems)),
            "file": problems["file"].fillna("").astype(str).to_numpy(),
            "csv_row": pd.array(problems["csv_row"], dtype="Int32"),
            "severity": problems["severity"].astype(str).to_numpy(),
            "kind": problems["kind"].astype(str).to_numpy(),
            "problem": problems["problem"].astype(str).to_numpy(),
            "action": problems["action"].astype(str).to_numpy(),
        }
    )
    return rows


def list_imports(*, path: Path | str | None = None) -> pd.DataFrame:
    """Every import, newest first: import_id, dataset_id, name, source, layout, counts,
    created_at (one row each; the columns of `ImportSummary`)."""
    with connect(path, read_only=True) as con:
        frame = con.execute("SELECT * FROM dataset_imports ORDER BY created_at DESC").df()
    frame["notes"] = frame["notes"].map(json.loads)
    return frame


def latest_import(dataset_id: str, *, path: Path | str | None = None) -> ImportSummary | None:
    """The newest import that registered ``dataset_id``, or None (the phantom, or a folder
    prepared by a study without an import)."""
    with connect(path, read_only=True) as con:
        frame = con.execute(
            """
            SELECT i.*, d.detector, d.held_out_iou AS detector_iou,
                   d.held_out_map AS detector_map
            FROM dataset_imports i LEFT JOIN import_detectors d USING (import_id)
            WHERE i.dataset_id = ? ORDER BY i.created_at DESC LIMIT 1
            """,
            [dataset_id],
        ).df()
    if frame.empty:
        return None
    row = frame.iloc[0].to_dict()
    row["notes"] = json.loads(row["notes"])
    row["detector"] = None if pd.isna(row["detector"]) else str(row["detector"])
    for key in ("detector_iou", "detector_map"):
        row[key] = None if pd.isna(row[key]) else float(row[key])
    row["labels_csv"] = None if pd.isna(row["labels_csv"]) else row["labels_csv"]
    row["layout_split"] = None if pd.isna(row["layout_split"]) else row["layout_split"]
    row["checked_s"] = None if pd.isna(row["checked_s"]) else float(row["checked_s"])
    for key in ("n_files", "n_rows", "n_good", "n_left_out", "n_errors", "n_warnings"):
        row[key] = int(row[key])
    row["skip_bad"] = bool(row["skip_bad"])
    row["created_at"] = pd.Timestamp(row["created_at"]).to_pydatetime()
    return ImportSummary(**row)


def import_problems(import_id: str, *, path: Path | str | None = None) -> pd.DataFrame:
    """The problems of one import, in report order: file, csv_row, severity, kind, problem,
    action (an empty frame with these columns when the import was clean).

    This is also the table to export as CSV (``frame.to_csv(index=False)``).
    """
    with connect(path, read_only=True) as con:
        frame = con.execute(
            "SELECT file, csv_row, severity, kind, problem, action FROM import_problems "
            "WHERE import_id = ? ORDER BY seq",
            [import_id],
        ).df()
    frame["csv_row"] = frame["csv_row"].astype("Int64")
    return frame
