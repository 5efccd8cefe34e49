"""Label versions of an imported folder of films: each labels CSV it was imported with.

Importing a folder registers a dataset whose labels are one canonical labels CSV named by
its content (`jobs.services.importer.register_import`). Importing the same folder again with
other labels, such as the Second reader's export, registers another dataset over the same
films: a new **label version**. The versions of a folder are its imports' distinct labels
CSVs, numbered 1 (the original) upwards in the order they were first imported; a version
keeps the dataset its first import registered, the file the importer was given, when and by
whom (the ``import`` audit line). Imports of the same labels with another knee detector are
the same version (same grades, other crops).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb
import pandas as pd

from store.db import connect

StorePath = Path | str | None


@dataclass(frozen=True)
class LabelVersion:
    """One label version of a folder.

    Attributes:
        version: 1 for the original import, then 2, 3, ... by first import.
        dataset_id: the dataset its first import registered.
        labels_csv: the canonical labels CSV the dataset reads (a study names this).
        source_labels: the labels file the import was given (None: a grade-folder layout).
        imported_at: its first import.
        imported_by: who imported it (None where the audit line is missing).
        n_images: the films it registered.
        n_versions: how many versions the folder has now.
    """

    version: int
    dataset_id: str
    labels_csv: str
    source_labels: str | None
    imported_at: datetime
    imported_by: str | None
    n_images: int
    n_versions: int

    @property
    def latest(self) -> bool:
        """Whether no version was imported after this one."""
        return self.version == self.n_versions

    def describe(self) -> str:
        """One line: ``"v2 of 2 (the latest): labels_second_reading.csv, imported
        2026-11-28 21:10 by alice, 40 images"``."""
        which = "the original" if self.version == 1 else ("the latest" if self.latest else "")
        head = f"v{self.version} of {self.n_versions}" + (f" ({which})" if which else "")
        source = Path(self.source_labels).name if self.source_labels else "grade folders"
        by = f" by {self.imported_by}" if self.imported_by else ""
        return (
            f"{head}: {source}, imported {self.imported_at:%Y-%m-%d %H:%M}{by}, "
            f"{self.n_images} images"
        )


def same_folder(folder: str | Path) -> str:
    """A folder as the versions compare it: absolute, ``~`` expanded, links resolved."""
    return str(Path(folder).expanduser().resolve(strict=False))


def label_versions(folder: str | Path, *, path: StorePath = None) -> list[LabelVersion]:
    """The label versions of ``folder``, oldest first; empty when it was never imported."""
    with connect(path, read_only=True) as con:
        return versions_in(con, folder)


def versions_in(con: duckdb.DuckDBPyConnection, folder: str | Path) -> list[LabelVersion]:
    """`label_versions` on an open connection (the study card reads it inside its own)."""
    imports = con.execute(
        """
        SELECT d.dataset_id, d.params, d.n_images, i.import_id, i.labels_csv AS source_labels,
               i.created_at,
               (SELECT a.actor FROM audit_log a
                WHERE a.action = 'import'
                  AND starts_with(a.detail, d.dataset_id || ' (' || i.import_id || ')')
                LIMIT 1) AS imported_by
        FROM datasets d JOIN dataset_imports i USING (dataset_id)
        WHERE d.kind = 'folder'
        ORDER BY i.created_at, i.import_id
        """
    ).df()
    if imports.empty:
        return []
    params = imports["params"].map(json.loads)
    imports["folder"] = params.map(lambda p: same_folder(p.get("path", "")))
    imports["labels_csv"] = params.map(lambda p: p.get("labels_csv"))
    mine = imports[(imports["folder"] == same_folder(folder)) & imports["labels_csv"].notna()]
    first = mine.drop_duplicates("labels_csv", keep="first").reset_index(drop=True)
    return [
        LabelVersion(
            version=index + 1,
            dataset_id=str(row.dataset_id),
            labels_csv=str(row.labels_csv),
            source_labels=None if pd.isna(row.source_labels) else str(row.source_labels),
            imported_at=pd.Timestamp(row.created_at).to_pydatetime(),
            imported_by=None if pd.isna(row.imported_by) else str(row.imported_by),
            n_images=int(row.n_images),
            n_versions=len(first),
        )
        for index, row in enumerate(first.itertuples())
    ]


def version_named(versions: list[LabelVersion], labels_csv: str | None) -> LabelVersion | None:
    """The version whose canonical labels CSV is ``labels_csv``, or None."""
    return next((v for v in versions if labels_csv and v.labels_csv == labels_csv), None)
