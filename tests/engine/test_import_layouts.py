"""The three folder layouts an import reads: labels CSV, grade folders, DICOM + grades CSV."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.config import DatasetSpec
from engine.datasets import make_splits, prepare_dataset
from engine.films import (
    ImportSourceError,
    check_import,
    detect_layout,
    patient_from_stem,
    write_clean_labels,
)
from tests.helpers.films import dicom_bytes, phantom_film, png_bytes, write_film_folder


def _film(i: int) -> np.ndarray:
    """Twenty distinct phantom films (ten, then the ten mirrored), so pixels never repeat."""
    film = phantom_film(5, i % 10)
    return film[:, ::-1].copy() if (i // 10) % 2 else film


def test_a_labels_csv_folder_is_the_csv_layout(tmp_path):
    folder, _, _ = write_film_folder(tmp_path, n=6, n_joint=6, seed=1)
    assert detect_layout(folder) == "csv"
    report = check_import(folder)
    assert report.layout == "csv" and report.layout_split is None
    assert len(report.films) == 6


@pytest.mark.parametrize(
    ("stem", "expected"),
    [
        ("9001104_1", ("9001104", "", True)),
        ("9001104L", ("9001104", "L", True)),
        ("knee_07_R", ("knee_07", "R", True)),
        ("case-3-left", ("case-3", "left", True)),
        ("scan abc", ("scan abc", "", False)),
        ("CR", ("CR", "", False)),
    ],
)
def test_a_patient_is_read_from_a_file_name_where_the_name_allows(stem, expected):
    assert patient_from_stem(stem) == expected


def _grade_folders(root, names_by_folder):
    i = 0
    for folder, names in names_by_folder.items():
        (root / folder).mkdir(parents=True)
        for name in names:
            (root / folder / name).write_bytes(png_bytes(_film(i)))
            i += 1
    return root


def test_grade_folders_give_kl_from_the_folder_and_patients_from_names(tmp_path):
    root = _grade_folders(
        tmp_path / "oa",
        {
            "0": ["9001104_1.png", "9002000L.png"],
            "2": ["9001104_2.png", "9002000R.png"],
            "4": ["scan abc.png"],
            "5": ["odd.png"],
        },
    )
    assert detect_layout(root) == "grade_folders"
    report = check_import(root)
    films = report.films.set_index("image")
    assert films.loc["0/9001104_1.png", "kl"] == 0 and films.loc["2/9001104_2.png", "kl"] == 2
    assert films.loc["2/9001104_2.png", "patient_id"] == "9001104"
    assert films.loc["0/9002000L.png", "side"] == "L" and films.loc["2/9002000R.png", "side"] == "R"
    assert films.loc["4/scan abc.png", "patient_id"] == "scan abc"
    assert films["cppd"].isna().all()
    bad = report.problems[report.problems["kind"] == "bad_grade"]
    assert list(bad["file"]) == ["5/odd.png"] and "its folder's name" in bad["problem"].iloc[0]
    assert report.layout_split is None  # no split folders
    assert any("no patient ids" in note and "split" in note for note in report.notes)


def _split_folders(root):
    names = {
        f"{split}/{grade}": [f"{split}{grade}{k}_1.png" for k in range(2)]
        for split in ("train", "val", "test")
        for grade in (0, 3)
    }
    return _grade_folders(root, names)


def test_a_grade_folders_own_split_is_ignored_unless_asked(tmp_path):
    root = _split_folders(tmp_path / "oa")
    report = check_import(root)
    assert report.layout_split == "ignored" and "given_split" not in report.films
    assert any("(test, train, val) is ignored" in n for n in report.notes)


def test_a_grade_folders_test_folder_is_every_seeds_test_set_when_asked(tmp_path):
    root = _split_folders(tmp_path / "oa")
    report = check_import(root, layout_split="test")
    assert report.layout_split == "test"
    labels = write_clean_labels(report, tmp_path / "imports")
    spec = DatasetSpec("folder", {"path": str(root), "labels_csv": str(labels)})
    meta = prepare_dataset(spec, 32, tmp_path / "cache").meta
    test_folder = set(meta.loc[meta["image_id"].str.startswith("test/"), "image_id"])
    assert len(test_folder) == 4
    for seed in (0, 1):
        split = make_splits(meta, seed)
        assert set(split[split == "test"].index) == test_folder
        assert (split[~split.index.isin(test_folder)] != "test").all()


def _dicom_folder(root, tags):
    root.mkdir()
    for i, (name, patient, side, uid) in enumerate(tags):
        elements = {"PatientID": patient, "SOPInstanceUID": uid}
        if side:
            elements["ImageLaterality"] = side
        pixels = _film(i).astype(np.uint16) * 16
        (root / name).write_bytes(dicom_bytes(pixels, **elements))
    return root


DICOM_TAGS = [
    ("a.dcm", "P1", "L", "1.2.3.1"),
    ("b.dcm", "P1", "R", "1.2.3.2"),
    ("1.2.3.3", "P2", "L", "1.2.3.3"),  # named by its UID, no extension
    ("d.dcm", "", "R", "1.2.3.4"),  # no PatientID tag
]


def test_dicom_files_with_a_grades_csv_keyed_by_uid(tmp_path):
    root = _dicom_folder(tmp_path / "dicom", DICOM_TAGS)
    pd.DataFrame(
        {
            "SOPInstanceUID": ["1.2.3.1", "1.2.3.2", "1.2.3.3", "1.2.3.4", "9.9.9"],
            "kl": [1, 2, 3, 0, 1],
            "side": ["L", "L", "", "", ""],
        }
    ).to_csv(root / "labels.csv", index=False)
    assert detect_layout(root) == "dicom"
    report = check_import(root)
    films = report.films.set_index("image")
    assert list(films.index) == ["a.dcm", "1.2.3.3"]
    assert films.loc["a.dcm", "patient_id"] == "P1" and films.loc["1.2.3.3", "side"] == "L"
    assert films.loc["1.2.3.3", "image_id"] == "1.2.3.3"  # a UID's last part is no extension
    kinds = report.problems.set_index("file")["kind"]
    assert kinds["b.dcm"] == "side_conflict"  # the CSV says L, the film's tag R
    assert kinds["d.dcm"] == "no_patient"
    assert kinds["9.9.9"] == "missing_file"


def test_dicom_files_with_a_grades_csv_keyed_by_file_name(tmp_path):
    root = _dicom_folder(tmp_path / "dicom", DICOM_TAGS)
    pd.DataFrame(
        {
            "image": ["a.dcm", "b.dcm", "d.dcm"],
            "cppd": [1, 2, 3],
            "patient_id": ["P1", "P7", "P9"],  # P7 contradicts b.dcm's tag; d.dcm has none
        }
    ).to_csv(root / "grades.csv", index=False)
    report = check_import(root, labels_csv=root / "grades.csv")
    assert report.layout == "dicom"
    films = report.films.set_index("image")
    assert films["patient_id"].to_dict() == {"a.dcm": "P1", "d.dcm": "P9"}
    assert films["side"].to_dict() == {"a.dcm": "L", "d.dcm": "R"}
    conflict = report.problems[report.problems["kind"] == "patient_conflict"]
    assert list(conflict["file"]) == ["b.dcm"]
    assert "PatientID tag says P1" in conflict["problem"].iloc[0]
    unlisted = report.problems[report.problems["kind"] == "unlisted"]
    assert list(unlisted["file"]) == ["1.2.3.3"]
    labels = write_clean_labels(report, tmp_path / "imports")
    spec = DatasetSpec("folder", {"path": str(root), "labels_csv": str(labels)})
    assert prepare_dataset(spec, 32, tmp_path / "cache").images.shape == (2, 32, 32)


def test_grade_folders_asked_for_where_there_are_none_get_one_message(tmp_path):
    (tmp_path / "films").mkdir()
    with pytest.raises(ImportSourceError, match="no film is listed in the grade folders"):
        check_import(tmp_path / "films", layout="grade_folders")
