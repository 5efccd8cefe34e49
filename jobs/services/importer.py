"""Registering a checked import as a dataset, with its report kept in the store.

The check (`engine.films.check_import`) decides which films are good; this module
writes their labels as one canonical labels CSV under ``$SOFTGRADE_HOME/imports/`` and
registers a ``folder`` dataset over it, so a study on that dataset caches, crops and splits
exactly the good films through the ordinary path (`engine.datasets.prepare_dataset`).

The knee detector is chosen here (`import_detector`: the newest trained detector in
``$SOFTGRADE_HOME/detectors`` by default, the classical one when none is trained) and pinned
in the dataset's params (``detector``, ``detectors_dir``), so the cache is cropped by the
detector that checked the import, and training another detector later changes no dataset.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from engine.config import DatasetSpec
from engine.detect import DetectorInfo, choose_detector
from engine.films import ImportReport, read_labels, write_clean_labels
from store import imports as store_imports
from store.audit import LOCAL_ACTOR
from store.db import default_store_path, softgrade_home


def detectors_dir(home: Path | None = None) -> Path:
    """Where trained knee detectors live: ``$SOFTGRADE_HOME/detectors``."""
    return (home if home is not None else softgrade_home()) / "detectors"


def import_detector(choice: str = "latest", *, home: Path | None = None) -> DetectorInfo:
    """The knee detector an import uses: ``latest`` (the newest trained detector; the
    classical one when none is trained), ``classical``, or a trained detector's key.

    Raises:
        ValueError: No trained detector has that key (the message lists the known ones).
    """
    return choose_detector(detectors_dir(home), choice)


def detector_params(detector: DetectorInfo) -> dict[str, str]:
    """What a folder dataset's params say of its detector: nothing for the classical one
    (so datasets imported before detectors keep their spec), else its key and folder."""
    if not detector.trained:
        return {}
    return {"detector": detector.key, "detectors_dir": str(Path(detector.folder).parent)}


class ImportRefused(ValueError):
    """Registration was refused: some films are bad and skipping them was not asked for."""


@dataclass(frozen=True)
class RegisteredImport:
    """What an import registered: the dataset, its report and the spec a study names."""

    dataset_id: str
    import_id: str
    spec: DatasetSpec
    n_films: int
    n_left_out: int


def register_import(
    report: ImportReport,
    *,
    name: str | None = None,
    skip_bad: bool = False,
    by: str = LOCAL_ACTOR,
    home: Path | None = None,
    store_path: Path | None = None,
) -> RegisteredImport:
    """Register the good films of a checked import as a dataset and store its report.

    Args:
        report: The check of the folder.
        name: What the Data page calls the import (default: the folder's name).
        skip_bad: Register the good films even though others have errors (they are left
            out; the report, kept with the dataset, names them).
        by: Who imports, for the audit line (`jobs.services.access.actor_name` of the signed-in
            account; the OS user at the command line).
        home: Where the canonical labels CSV goes (default ``$SOFTGRADE_HOME``).
        store_path: The store (default ``$SOFTGRADE_HOME/softgrade.duckdb``).

    Raises:
        ImportRefused: Some film has an error and ``skip_bad`` is off, or no film is good.
    """
    if report.n_errors and not skip_bad:
        raise ImportRefused(
            f"{report.n_errors} error(s) in {len(report.left_out)} film(s) or row(s); nothing "
            "registered. Fix them, or skip the bad films (--skip-bad)"
        )
    if report.films.empty:
        raise ImportRefused("no good film to register; nothing registered")
    home = home if home is not None else softgrade_home()
    labels_csv = write_clean_labels(report, home / "imports")
    spec = DatasetSpec(
        "folder",
        {
            "path": str(report.root),
            "labels_csv": str(labels_csv),
            **detector_params(report.detector),
        },
    )
    meta = read_labels(report.root, labels_csv)
    summary = {
        "name": name or report.root.name,
        "source": str(report.root),
        "labels_csv": str(report.labels_csv) if report.labels_csv is not None else None,
        "layout": report.layout,
        "layout_split": report.layout_split,
        "skip_bad": skip_bad,
        "n_files": report.n_files,
        "n_rows": report.n_rows,
        "n_good": len(report.films),
        "n_left_out": len(report.left_out),
        "notes": list(report.notes),
        "checked_s": report.checked_s,
        "detector": asdict(report.detector),
    }
    dataset_id, import_id = store_imports.record_import(
        spec_key=spec.key,
        kind=spec.kind,
        params=spec.params,
        meta=meta,
        summary=summary,
        problems=problems_for_store(report.problems),
        by=by,
        path=store_path if store_path is not None else default_store_path(),
    )
    return RegisteredImport(dataset_id, import_id, spec, len(report.films), len(report.left_out))


def problems_for_store(problems: pd.DataFrame) -> pd.DataFrame:
    """The report's problems with the store's column names (``row`` → ``csv_row``)."""
    return problems.rename(columns={"row": "csv_row"})[list(store_imports.PROBLEM_COLUMNS)]
