"""A folder imported as label versions, written through `store.imports.record_import` as
`jobs.services.importer.register_import` writes it (no films decoded): each version its own
canonical labels CSV over the same folder, with its import report and audit line."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from engine.config import DatasetSpec
from store.db import init_schema
from store.imports import PROBLEM_COLUMNS, record_import


def record_label_version(
    store: Path, folder: Path, name: str, kl: list[int], *, by: str = "alice"
) -> str:
    """Import ``folder`` once more with the labels file ``name`` giving these KL grades (one
    film per grade, one patient each); returns the dataset id."""
    canonical = folder.parent / "imports" / name / "labels.csv"
    canonical.parent.mkdir(parents=True, exist_ok=True)
    meta = pd.DataFrame(
        {
            "image_id": [f"film{i}" for i in range(len(kl))],
            "patient_id": [f"p{i}" for i in range(len(kl))],
            "side": ["L"] * len(kl),
            "kl": kl,
        }
    )
    meta.to_csv(canonical, index=False)
    spec = DatasetSpec("folder", {"path": str(folder), "labels_csv": str(canonical)})
    summary = {
        "name": folder.name,
        "source": str(folder),
        "labels_csv": str(folder / name),
        "layout": "csv",
        "skip_bad": False,
        "n_files": len(kl),
        "n_rows": len(kl),
        "n_good": len(kl),
        "n_left_out": 0,
        "notes": [],
    }
    dataset_id, _ = record_import(
        spec_key=spec.key,
        kind="folder",
        params=spec.params,
        meta=meta,
        summary=summary,
        problems=pd.DataFrame(columns=list(PROBLEM_COLUMNS)),
        by=by,
        path=store,
    )
    return dataset_id


def folder_imported_twice(home: Path) -> Path:
    """``home/films`` imported as labels.csv (v1, by alice) then second.csv (v2, by bob) into
    the store of ``home``; returns the folder."""
    films = home / "films"
    films.mkdir()
    store = home / "softgrade.duckdb"
    init_schema(store)
    record_label_version(store, films, "labels.csv", [0, 1, 2])
    record_label_version(store, films, "second.csv", [1, 1, 2], by="bob")
    return films
