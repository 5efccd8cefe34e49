"""Import reports stored with the dataset they registered."""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest

from store.datasets import dataset_labels, find_dataset
from store.db import connect
from store.imports import (
    PROBLEM_COLUMNS,
    import_problems,
    latest_import,
    list_imports,
    record_import,
)
from tests.helpers.films import meta_frame

SUMMARY = {
    "name": "knees",
    "source": "/data/knees",
    "labels_csv": "/data/knees/labels.csv",
    "layout": "csv",
    "layout_split": None,
    "skip_bad": True,
    "n_files": 82,
    "n_rows": 83,
    "n_good": 80,
    "n_left_out": 2,
    "notes": ["knees located by the classical detector"],
    "checked_s": 1.5,
}


def _problems() -> pd.DataFrame:
    return pd.DataFrame(
        [
            ("empty.png", 12, "error", "empty_file", "empty file (0 bytes)", "export it again"),
            ("odd.png", 14, "error", "bad_grade", "kl=7 is not a KL grade", "use 0 to 4"),
            ("", None, "warning", "rare_grade", "KL grade 4: 2 good films", "add films"),
        ],
        columns=list(PROBLEM_COLUMNS),
    )


def _record(store, problems=None, **summary):
    return record_import(
        spec_key="folder(labels_csv=/x/labels.csv,path=/data/knees)",
        kind="folder",
        params={"path": "/data/knees", "labels_csv": "/x/labels.csv"},
        meta=meta_frame(40),
        summary={**SUMMARY, **summary},
        problems=_problems() if problems is None else problems,
        path=store,
    )


def test_an_import_registers_its_dataset_and_keeps_its_report(store):
    dataset_id, import_id = _record(store)
    assert find_dataset("folder(labels_csv=/x/labels.csv,path=/data/knees)", path=store) == (
        dataset_id
    )
    assert len(dataset_labels(dataset_id, path=store)) == 80
    summary = latest_import(dataset_id, path=store)
    assert summary.import_id == import_id and summary.name == "knees"
    counts = (summary.n_good, summary.n_left_out, summary.n_errors, summary.n_warnings)
    assert counts == (80, 2, 2, 1)
    assert summary.notes == SUMMARY["notes"] and summary.skip_bad and summary.layout_split is None
    problems = import_problems(import_id, path=store)
    assert list(problems.columns) == list(PROBLEM_COLUMNS)
    assert list(problems["file"]) == ["empty.png", "odd.png", ""]
    assert problems["csv_row"].tolist()[:2] == [12, 14] and pd.isna(problems["csv_row"].iloc[2])
    assert "file,csv_row,severity" in problems.to_csv(index=False)


def test_importing_the_same_films_again_keeps_both_reports_and_one_dataset(store):
    first_ds, first = _record(store)
    again_ds, again = _record(store, problems=_problems().iloc[:0], name="knees again")
    assert first_ds == again_ds and first != again
    assert len(list_imports(path=store)) == 2
    assert latest_import(again_ds, path=store).name == "knees again"
    assert import_problems(again, path=store).empty
    assert len(import_problems(first, path=store)) == 3


def test_a_dataset_without_an_import_has_no_report(store):
    assert latest_import("ds-phantom", path=store) is None


def test_an_unknown_layout_or_severity_is_refused_and_nothing_is_registered(store):
    with pytest.raises(duckdb.ConstraintException):
        _record(store, layout="zip")
    bad = _problems().assign(severity="fatal")
    with pytest.raises(duckdb.ConstraintException):
        _record(store, problems=bad)
    with connect(store, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM datasets").fetchone()[0] == 0


def test_the_detector_an_import_used_is_kept_with_its_report(store):
    detector = {"name": "yolo-abc123", "held_out_iou": 0.91, "held_out_map": 0.88}
    dataset_id, _ = _record(store, detector=detector)
    summary = latest_import(dataset_id, path=store)
    assert (summary.detector, summary.detector_iou, summary.detector_map) == (
        "yolo-abc123",
        0.91,
        0.88,
    )


def test_an_import_recorded_without_a_detector_says_none(store):
    dataset_id, _ = _record(store)
    summary = latest_import(dataset_id, path=store)
    assert summary.detector is None and summary.detector_iou is None
