"""Imports per knee: bilateral films listed once per side become two images cropped around
the right knee, and knee boxes given in the labels CSV are checked and cropped around."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from engine.config import DatasetSpec
from engine.datasets import prepare_dataset
from engine.detect import box_iou
from engine.films import check_import, labelled_boxes, read_labels, write_clean_labels
from tests.helpers.films import dicom_bytes, phantom_film, write_bilateral_folder

SIZE = 64


def test_a_bilateral_film_listed_per_side_becomes_two_crops_of_the_right_knees(tmp_path):
    folder, truth = write_bilateral_folder(tmp_path)
    report = check_import(folder)
    assert report.all_good, report.problems
    films = report.films.set_index("image_id")
    assert set(films.index) == set(truth)
    for image_id, knee in truth.items():
        assert films.at[image_id, "side"] == knee["side"]
        assert films.at[image_id, "kl"] == knee["kl"]
        assert films.at[image_id, "knee_confidence"] >= 0.5
    labels_csv = write_clean_labels(report, tmp_path / "imports")
    spec = DatasetSpec("folder", {"path": str(folder), "labels_csv": str(labels_csv)})
    data = prepare_dataset(spec, SIZE, tmp_path / "cache")
    meta = data.meta.set_index("image_id")
    assert set(meta.index) == set(truth) and len(meta) == len(truth)
    for image_id, knee in truth.items():
        box = tuple(int(meta.at[image_id, c]) for c in ("x0", "y0", "x1", "y1"))
        assert box_iou(box, knee["box"]) >= 0.5, (image_id, box, knee["box"])
        assert meta.at[image_id, "side"] == knee["side"]
        assert meta.at[image_id, "kl"] == knee["kl"]
        assert meta.at[image_id, "cppd"] == knee["cppd"]
        assert meta.at[image_id, "box_source"] == "detector"
    # The right knee is on the viewer's left: its crop box lies left of the left knee's.
    for stem in {i.rsplit("_", 1)[0] for i in truth}:
        assert meta.at[f"{stem}_R", "x1"] <= meta.at[f"{stem}_L", "x0"] + 5


def test_a_row_without_side_on_a_two_knee_film_is_reported_not_picked(tmp_path):
    folder, truth = write_bilateral_folder(tmp_path, n_patients=2)
    table = pd.read_csv(folder / "labels.csv", dtype=str)
    first = table["image"].iloc[0]
    # The first film once, without a side; the second film twice with the same side.
    second = table["image"].iloc[2]
    table = pd.concat(
        [
            table[table["image"] == first].head(1).assign(side=""),
            table[table["image"] == second].assign(side="R"),
        ]
    )
    table.to_csv(folder / "labels.csv", index=False)
    report = check_import(folder)
    problems = report.problems.set_index("file")
    assert problems.loc[[first], "kind"].tolist() == ["two_knees"]
    assert "give one row per knee with its side" in problems.at[first, "action"]
    assert set(problems.loc[[second], "kind"]) == {"listed_twice"}
    assert report.films.empty


def test_a_film_listed_per_side_with_one_knee_found_is_reported(tmp_path):
    folder = tmp_path / "films"
    folder.mkdir()
    Image.fromarray(phantom_film(5, 0)).save(folder / "one.png")
    rows = [("one.png", "p1", "R", 2, 0), ("one.png", "p1", "L", 3, 0)]
    pd.DataFrame(rows, columns=["image", "patient_id", "side", "kl", "cppd"]).to_csv(
        folder / "labels.csv", index=False
    )
    report = check_import(folder)
    assert report.problems["kind"].tolist() == ["one_knee", "one_knee"]
    assert report.problems["row"].tolist() == [2, 3]


def test_a_side_on_a_single_knee_film_crops_that_knee_and_keeps_the_films_id(tmp_path):
    folder = tmp_path / "films"
    folder.mkdir()
    Image.fromarray(phantom_film(5, 0)).save(folder / "single.png")
    columns = ["image", "patient_id", "side", "kl", "cppd"]
    pd.DataFrame([("single.png", "p1", "L", 2, 0)], columns=columns).to_csv(
        folder / "labels.csv", index=False
    )
    report = check_import(folder)
    assert report.all_good and report.films["image_id"].tolist() == ["single"]


# -- boxes in the labels CSV -----------------------------------------------------------------


def _boxed_folder(root: Path, rows: list[tuple]) -> Path:
    folder = root / "films"
    folder.mkdir()
    for i in range(4):
        Image.fromarray(phantom_film(5, i)).save(folder / f"k{i}.png")
    columns = ["image", "patient_id", "side", "kl", "cppd", "x0", "y0", "x1", "y1"]
    pd.DataFrame(rows, columns=columns).to_csv(folder / "labels.csv", index=False)
    return folder


def test_boxes_in_the_labels_are_cropped_around_and_recorded_as_labels(tmp_path):
    w = phantom_film(5, 0).shape[1]
    rows = [
        ("k0.png", "p0", "R", 1, 0, 10, 20, 110, 120),
        ("k1.png", "p1", "R", 2, 0, None, None, None, None),
        ("k2.png", "p2", "R", 3, 0, 0, 0, w, 100),
    ]
    folder = _boxed_folder(tmp_path, rows)
    report = check_import(folder)
    assert report.all_good, report.problems
    labels_csv = write_clean_labels(report, tmp_path / "imports")
    spec = DatasetSpec("folder", {"path": str(folder), "labels_csv": str(labels_csv)})
    meta = prepare_dataset(spec, SIZE, tmp_path / "cache").meta.set_index("image_id")
    assert tuple(int(v) for v in meta.loc["k0", ["x0", "y0", "x1", "y1"]]) == (10, 20, 110, 120)
    assert meta.at["k0", "box_source"] == "labels" and pd.isna(meta.at["k0", "knee_confidence"])
    assert meta.at["k1", "box_source"] == "detector"
    assert meta.at["k2", "box_source"] == "labels"
    assert labelled_boxes(folder, labels_csv) == [
        (folder / "k0.png", [(10, 20, 110, 120)]),
        (folder / "k2.png", [(0, 0, w, 100)]),
    ]


def test_bad_boxes_are_named_row_by_row(tmp_path):
    w = phantom_film(5, 0).shape[1]
    rows = [
        ("k0.png", "p0", "R", 1, 0, 10, 20, 110, None),  # three of four
        ("k1.png", "p1", "R", 2, 0, 10.5, 20, 110, 120),  # not whole
        ("k2.png", "p2", "R", 3, 0, 110, 20, 10, 120),  # x1 <= x0
        ("k3.png", "p3", "R", 4, 0, 0, 0, w + 1, 100),  # off the film
    ]
    folder = _boxed_folder(tmp_path, rows)
    report = check_import(folder)
    boxes = report.problems[report.problems["kind"] == "bad_box"]
    assert boxes["file"].tolist() == ["k0.png", "k1.png", "k2.png", "k3.png"]
    assert boxes["row"].tolist() == [2, 3, 4, 5]
    assert "all four" in boxes["problem"].iat[0]
    assert "whole pixels" in boxes["problem"].iat[1]
    assert "x1 > x0" in boxes["problem"].iat[2]
    assert "not on the film" in boxes["problem"].iat[3]
    assert report.films.empty
    with pytest.raises(ValueError, match="row 2: a knee box needs all four"):
        read_labels(folder, folder / "labels.csv")


def test_read_labels_keeps_a_per_knee_film_and_refuses_one_listed_twice_on_one_side(tmp_path):
    folder = tmp_path / "films"
    folder.mkdir()
    Image.fromarray(np.zeros((80, 80), np.uint8)).save(folder / "b.png")
    columns = ["image", "patient_id", "side", "kl"]
    pd.DataFrame([("b.png", "p", "R", 1), ("b.png", "p", "L", 2)], columns=columns).to_csv(
        folder / "ok.csv", index=False
    )
    assert read_labels(folder, folder / "ok.csv")["image_id"].tolist() == ["b_R", "b_L"]
    pd.DataFrame([("b.png", "p", "R", 1), ("b.png", "p", "R", 2)], columns=columns).to_csv(
        folder / "twice.csv", index=False
    )
    with pytest.raises(ValueError, match="b.png is listed twice"):
        read_labels(folder, folder / "twice.csv")


def test_a_dicom_film_tagged_both_knees_is_listed_per_side_from_its_csv(tmp_path):
    bilateral, truth = write_bilateral_folder(tmp_path, n_patients=1)
    table = pd.read_csv(bilateral / "labels.csv", dtype=str)
    film = np.asarray(Image.open(bilateral / table["image"].iat[0]))
    folder = tmp_path / "dicom"
    folder.mkdir()
    (folder / "knees.dcm").write_bytes(
        dicom_bytes(film.astype(np.uint16) * 16, PatientID="pt-b", ImageLaterality="B")
    )
    table.assign(image="knees.dcm").drop(columns="patient_id").to_csv(
        folder / "grades.csv", index=False
    )
    report = check_import(folder, labels_csv=folder / "grades.csv", layout="dicom")
    assert report.all_good, report.problems
    films = report.films.set_index("image_id")
    assert sorted(films.index) == ["knees_L", "knees_R"]
    assert set(films["patient_id"]) == {"pt-b"}
    for side in ("R", "L"):
        (knee,) = [k for k in truth.values() if k["side"] == side]
        assert films.at[f"knees_{side}", "side"] == side
        assert films.at[f"knees_{side}", "kl"] == knee["kl"]


def test_a_film_whose_id_is_also_a_knees_id_is_named(tmp_path):
    bilateral, _ = write_bilateral_folder(tmp_path, n_patients=1)
    table = pd.read_csv(bilateral / "labels.csv", dtype=str)
    name = table["image"].iat[0]
    clash = name.replace(".png", "_R.png")
    Image.fromarray(phantom_film(5, 0)).save(bilateral / clash)
    extra = pd.DataFrame([{"image": clash, "patient_id": "other", "side": "L", "kl": "1"}])
    pd.concat([table, extra]).to_csv(bilateral / "labels.csv", index=False)
    report = check_import(bilateral)
    same = report.problems[report.problems["kind"] == "same_id"]
    assert sorted(same["file"]) == sorted([name, clash])
    assert name.replace(".png", "_R") not in set(report.films["image_id"])
