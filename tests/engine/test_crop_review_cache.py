"""A crop review flows into the folder cache: excluded films are not cached, reviewed boxes
are cropped around, and each film's box and its source are recorded in meta.csv."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.config import DatasetSpec
from engine.datasets import cache_dir_for, make_splits, prepare_dataset
from engine.detect import crop_and_resize
from engine.films import best_knee, read_film_file, write_review_csv
from tests.helpers.films import write_film_folder

SIZE = 64


@pytest.fixture
def folder(tmp_path):
    folder, csv, _ = write_film_folder(tmp_path, n=6, n_joint=6, seed=1)
    return folder, csv


def _review(rows, root):
    frame = pd.DataFrame(rows, columns=["image_id", "action", "x0", "y0", "x1", "y1"])
    return write_review_csv(frame, root / "reviews")


def _reviewed(path, csv, review):
    return DatasetSpec(
        "folder", {"path": str(path), "labels_csv": str(csv), "review_csv": str(review)}
    )


def test_a_plain_cache_records_each_films_detected_box_and_confidence(folder, tmp_path):
    path, csv = folder
    data = prepare_dataset(DatasetSpec("folder", {"path": str(path)}), SIZE, tmp_path / "c")
    first = data.meta.iloc[0]
    film = read_film_file(path / f"{first.image_id}.png")
    box, confidence = best_knee(film)
    assert [int(first[c]) for c in ("x0", "y0", "x1", "y1")] == list(box)
    assert first["knee_confidence"] == pytest.approx(confidence)
    assert set(data.meta["box_source"]) == {"detector"}


def test_a_review_drops_excluded_films_and_crops_with_the_reviewed_box(folder, tmp_path):
    path, csv = folder
    films = pd.read_csv(csv)["image"].str.removesuffix(".png").tolist()
    excluded, corrected = films[1], films[2]
    box = (40, 30, 200, 190)
    review = _review(
        [(excluded, "exclude", None, None, None, None), (corrected, "box", *box)], tmp_path
    )
    spec = DatasetSpec(
        "folder", {"path": str(path), "labels_csv": str(csv), "review_csv": str(review)}
    )
    data = prepare_dataset(spec, SIZE, tmp_path / "c")
    meta = data.meta.set_index("image_id")
    assert excluded not in meta.index and len(meta) == len(films) - 1
    assert excluded not in make_splits(data.meta, seed=0).index
    row = meta.loc[corrected]
    assert [int(row[c]) for c in ("x0", "y0", "x1", "y1")] == list(box)
    assert row["box_source"] == "review" and pd.isna(row["knee_confidence"])
    film = read_film_file(path / f"{corrected}.png")
    index = list(data.meta["image_id"]).index(corrected)
    np.testing.assert_array_equal(data.images[index], crop_and_resize(film, box, SIZE))


def test_a_changed_review_is_a_new_file_and_a_new_cache(folder, tmp_path):
    path, csv = folder
    base = {"path": str(path), "labels_csv": str(csv)}
    first = _review([("a", "exclude", None, None, None, None)], tmp_path)
    same = _review([("a", "exclude", None, None, None, None)], tmp_path)
    other = _review([("b", "exclude", None, None, None, None)], tmp_path)
    assert first == same and first != other
    dirs = {
        cache_dir_for(DatasetSpec("folder", {**base, "review_csv": str(r)}), SIZE, tmp_path)
        for r in (first, other)
    }
    assert len(dirs) == 2


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([("a", "crop", 0, 0, 5, 5)], "row 2 \\(a\\) has action 'crop'; allowed: exclude, box"),
        ([("a", "box", 10, 0, 5, 5)], "row 2 \\(a\\): the box needs x1 > x0"),
        ([("a", "box", None, 0, 5, 5)], "four whole numbers"),
    ],
)
def test_a_bad_review_file_is_refused_naming_its_row(folder, tmp_path, rows, message):
    path, csv = folder
    review = _review(rows, tmp_path)
    spec = DatasetSpec(
        "folder", {"path": str(path), "labels_csv": str(csv), "review_csv": str(review)}
    )
    with pytest.raises(ValueError, match=message):
        prepare_dataset(spec, SIZE, tmp_path / "c")


def test_a_review_that_excludes_every_film_is_refused(folder, tmp_path):
    path, csv = folder
    films = pd.read_csv(csv)["image"].str.removesuffix(".png")
    review = _review([(f, "exclude", None, None, None, None) for f in films], tmp_path)
    spec = DatasetSpec(
        "folder", {"path": str(path), "labels_csv": str(csv), "review_csv": str(review)}
    )
    with pytest.raises(ValueError, match="excludes every film"):
        prepare_dataset(spec, SIZE, tmp_path / "c")
