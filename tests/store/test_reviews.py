"""Crop review decisions: one current decision per film, validated, and the reviewed boxes."""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest

from store.datasets import register_dataset
from store.db import connect
from store.reviews import clear_review, crop_reviews, record_review, reviewed_boxes
from tests.helpers.films import meta_frame


@pytest.fixture
def dataset(store):
    meta = meta_frame(4).assign(source=lambda m: "/films/" + m["image_id"] + ".png")
    return register_dataset(
        spec_key="folder(path=/films)", kind="folder", params={}, meta=meta, path=store
    )


def test_a_new_decision_replaces_the_old_one(store, dataset):
    record_review(dataset, "im000L", "exclude", path=store)
    record_review(dataset, "im000L", "box", (10, 20, 110, 120), who="ana", path=store)
    record_review(dataset, "im001R", "exclude", path=store)
    reviews = crop_reviews(dataset, path=store).set_index("image_id")
    assert list(reviews.index) == ["im000L", "im001R"]
    assert reviews.loc["im000L", ["action", "x0", "y0", "x1", "y1", "who"]].tolist() == [
        "box",
        10,
        20,
        110,
        120,
        "ana",
    ]
    assert reviews.loc["im001R", "action"] == "exclude" and reviews.loc["im001R", "who"] == "local"
    assert pd.isna(reviews.loc["im001R", "x0"])


def test_clearing_a_decision_forgets_it(store, dataset):
    record_review(dataset, "im000L", "exclude", path=store)
    clear_review(dataset, "im000L", path=store)
    assert crop_reviews(dataset, path=store).empty


@pytest.mark.parametrize(
    ("action", "box", "message"),
    [
        ("crop", None, "action 'crop' is not known; allowed: exclude, box"),
        ("box", None, "needs the box"),
        ("box", (10, 10, 5, 20), "x1 must be above x0"),
        ("box", (-1, 0, 5, 5), "coordinates start at 0"),
        ("box", (0, 0, 5.5, 5), "x1=5.5 is not a whole number"),
        ("exclude", (0, 0, 5, 5), "takes no box"),
    ],
)
def test_a_bad_decision_is_refused_with_its_reason(store, dataset, action, box, message):
    with pytest.raises(ValueError, match=message):
        record_review(dataset, "im000L", action, box, path=store)
    assert crop_reviews(dataset, path=store).empty


def test_the_schema_refuses_a_box_decision_without_a_box(store):
    with pytest.raises(duckdb.ConstraintException), connect(store) as con:
        con.execute(
            "INSERT INTO crop_reviews (dataset_id, image_id, action) VALUES ('d', 'i', 'box')"
        )


def test_reviewed_boxes_pair_each_corrected_film_with_its_file(store, dataset):
    record_review(dataset, "im000L", "box", (1, 2, 30, 40), path=store)
    record_review(dataset, "im001R", "exclude", path=store)
    boxes = reviewed_boxes(dataset, path=store)
    assert boxes.to_dict("records") == [
        {
            "image_id": "im000L",
            "film_path": "/films/im000L.png",
            "x0": 1,
            "y0": 2,
            "x1": 30,
            "y1": 40,
            "knees_on_film": 1,
        }
    ]


def test_reviewed_boxes_count_the_knees_that_share_a_bilateral_film(store):
    meta = meta_frame(2)  # two patients, both knees each
    meta["source"] = ["/films/both.png", "/films/both.png", "/films/one.png", "/films/two.png"]
    dataset = register_dataset(
        spec_key="folder(path=/films, bilateral)", kind="folder", params={}, meta=meta, path=store
    )
    ids = meta["image_id"].tolist()
    record_review(dataset, ids[0], "box", (1, 2, 30, 40), path=store)
    record_review(dataset, ids[2], "box", (5, 5, 50, 50), path=store)
    boxes = reviewed_boxes(dataset, path=store).set_index("image_id")
    assert boxes.loc[ids[0], "knees_on_film"] == 2
    assert boxes.loc[ids[2], "knees_on_film"] == 1


def test_a_store_without_the_review_tables_says_how_to_add_them(store):
    from store.db import StoreError

    with connect(store) as con:
        con.execute("DROP TABLE crop_reviews")
    with pytest.raises(StoreError, match="python -m jobs up"):
        crop_reviews("d", path=store)
