"""The Review crops page's view: the table of crops, filters, boxes typed or clicked."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pages.present.review_view import (
    CANDIDATE,
    box_on_film,
    click_on_film,
    clicks_box,
    draw_boxes,
    filter_review,
    problem_filters,
    review_table,
    reviewed_box,
    tile_caption,
)

META = pd.DataFrame(
    {
        "image_id": ["a", "b", "c", "sub/d"],
        "patient_id": ["p1", "p1", "p2", "p3"],
        "side": ["L", "R", "L", "R"],
        "kl": pd.array([0, 4, None, 2], dtype="Int64"),
        "cppd": pd.array([1, 3, 0, 0], dtype="Int64"),
        "source": ["/f/a.png", "/f/b.png", "/f/c.png", "/f/sub/d.png"],
        "x0": [1, 2, 3, 4],
        "y0": [1, 2, 3, 4],
        "x1": [50, 60, 70, 80],
        "y1": [50, 60, 70, 80],
        "knee_confidence": [0.9, 0.3, 0.6, 0.45],
        "box_source": ["detector"] * 4,
    }
)
REVIEWS = pd.DataFrame(
    {
        "image_id": ["b", "c"],
        "action": ["box", "exclude"],
        "x0": pd.array([5, None], dtype="Int64"),
        "y0": pd.array([6, None], dtype="Int64"),
        "x1": pd.array([55, None], dtype="Int64"),
        "y1": pd.array([66, None], dtype="Int64"),
    }
)
PROBLEMS = pd.DataFrame(
    {
        "file": ["b.png", "sub/d.png", "sub/d.png", ""],
        "kind": ["low_confidence", "low_confidence", "too_many_knees", "rare_grade"],
    }
)


@pytest.fixture
def table() -> pd.DataFrame:
    return review_table(META, REVIEWS, PROBLEMS)


def test_the_table_sorts_worst_confidence_first_and_joins_decisions_and_problems(table):
    assert table["image_id"].tolist() == ["b", "sub/d", "c", "a"]
    assert table["crop"].tolist() == [1, 3, 2, 0]  # rows of the crop array
    rows = table.set_index("image_id")
    assert rows.loc["sub/d", "problems"] == "low_confidence, too_many_knees"
    assert rows.loc["c", "decision"] == "exclude" and rows.loc["a", "decision"] == ""
    b = next(table[table["image_id"] == "b"].itertuples())
    assert reviewed_box(b) == (5, 6, 55, 66)
    assert tile_caption(b) == "b · KL 4 · CPPD 3 · conf 0.30 · box corrected"


def test_a_dataset_without_reviews_or_report_has_no_decisions():
    table = review_table(META, REVIEWS.iloc[:0], pd.DataFrame())
    assert set(table["decision"]) == {""} and table["rx0"].isna().all()


@pytest.mark.parametrize(
    ("kl", "cppd", "problem", "expected"),
    [
        ("any", "any", "all films", ["b", "sub/d", "c", "a"]),
        ("4", "any", "all films", ["b"]),
        ("no grade", "any", "all films", ["c"]),
        ("any", "0", "all films", ["sub/d", "c"]),
        ("any", "any", "low confidence (below 0.5)", ["b", "sub/d"]),
        ("any", "any", "excluded", ["c"]),
        ("any", "any", "box corrected", ["b"]),
        ("any", "any", "not reviewed yet", ["sub/d", "a"]),
        ("any", "any", "import report: too_many_knees", ["sub/d"]),
    ],
)
def test_filters_keep_the_matching_films_in_order(table, kl, cppd, problem, expected):
    kept = filter_review(table, kl=kl, cppd=cppd, problem=problem)
    assert kept["image_id"].tolist() == expected


def test_problem_filters_list_the_import_kinds_of_these_films(table):
    options = problem_filters(table)
    assert options[0] == "all films"
    assert options[-2:] == ["import report: low_confidence", "import report: too_many_knees"]


@pytest.mark.parametrize(
    ("box", "message"),
    [((10, 10, 5, 20), "x1 must be above x0"), ((0, 0, 101, 50), "x from 0 to 100")],
)
def test_a_box_off_the_film_or_inside_out_is_refused(box, message):
    with pytest.raises(ValueError, match=message):
        box_on_film(box, (80, 100))


def test_two_clicks_in_any_order_span_a_box_clipped_to_the_film():
    assert clicks_box([(90.4, 70.0), (10.0, 120.0)], (100, 200)) == (10, 70, 90, 100)
    assert box_on_film((10, 70, 90, 100), (100, 200)) == (10, 70, 90, 100)


def test_a_click_on_the_shown_film_is_scaled_to_film_pixels():
    value = {"x": 140, "y": 70, "width": 280, "height": 140}
    assert click_on_film(value, (400, 800)) == (400.0, 200.0)


def test_boxes_are_drawn_on_the_film_shown_at_most_at_its_width():
    film = np.zeros((400, 800), dtype=np.uint8)
    shown = draw_boxes(film, [((100, 100, 300, 300), CANDIDATE), (None, CANDIDATE)], width=400)
    assert shown.shape == (200, 400, 3)
    assert tuple(shown[50, 100]) == CANDIDATE  # the box's top-left corner, halved
    assert draw_boxes(film[:40, :80], [], width=400).shape == (40, 80, 3)  # never enlarged


def test_both_knees_of_a_film_listed_per_side_show_the_films_problems():
    meta = META.iloc[:2].assign(image_id=["k_R", "k_L"], source=["/f/k.png", "/f/k.png"])
    problems = pd.DataFrame({"file": ["k.png", "b.png"], "kind": ["low_confidence", "x"]})
    table = review_table(meta, REVIEWS.iloc[:0], problems).set_index("image_id")
    assert table.at["k_R", "problems"] == table.at["k_L", "problems"] == "low_confidence"
