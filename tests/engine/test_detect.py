"""Behaviour of the knee detectors' common API, the classical detector and the crop helper."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from engine.detect import (
    LOW_CONFIDENCE,
    SECOND_KNEE_CONFIDENCE,
    KneeDetection,
    box_iou,
    classical_knee,
    crop_and_resize,
    detect_knee_box,
    evaluate_detector,
    find_knees,
    phantom_detection_set,
    select_knees,
)
from engine.phantom import PhantomSpec, phantom_labels, render_film

SPEC = PhantomSpec(n_images=40, n_joint=20, seed=5)


@pytest.fixture(scope="module")
def films() -> list[tuple[np.ndarray, tuple[int, int, int, int]]]:
    labels = phantom_labels(SPEC)
    out = []
    for _, row in labels.iterrows():
        film, _, box = render_film(SPEC, row)
        out.append((film, box))
    return out


def test_detector_finds_knee_box(films):
    ious = np.array([box_iou(detect_knee_box(film), box) for film, box in films])
    assert (ious > 0.5).mean() >= 0.95
    assert ious.mean() > 0.8


def test_detector_ignores_a_collimation_band_and_a_marker(films):
    film, box = films[0]
    film = film.copy()
    x0, y0, x1, y1 = box
    if y0 >= 20:
        film[: y0 - 4] = 230  # unexposed band above the knee
    else:
        film[y1 + 4 :] = 230
    film[-20:-2, -20:-2] = 250  # a side marker in a corner
    assert box_iou(detect_knee_box(film), box) > 0.6


def test_detector_returns_central_square_on_blank_film():
    x0, y0, x1, y1 = detect_knee_box(np.zeros((200, 160), np.uint8))
    assert x1 - x0 == y1 - y0 == 80
    assert (x0 + x1) // 2 == 80 and (y0 + y1) // 2 == 100


def test_detector_rejects_colour_images():
    with pytest.raises(ValueError, match="2-D"):
        detect_knee_box(np.zeros((20, 20, 3), np.uint8))


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((0, 0, 10, 10), (0, 0, 10, 10), 1.0),
        ((0, 0, 10, 10), (5, 0, 15, 10), 50 / 150),
        ((0, 0, 10, 10), (10, 10, 20, 20), 0.0),
        ((0, 0, 4, 4), (1, 1, 3, 3), 4 / 16),
        ((0, 0, 0, 0), (0, 0, 0, 0), 0.0),
    ],
)
def test_box_iou_hand_cases(a, b, expected):
    assert box_iou(a, b) == pytest.approx(expected)
    assert box_iou(b, a) == pytest.approx(expected)


def test_crop_and_resize_pads_outside_the_film_with_zeros():
    film = np.full((100, 100), 200, np.uint8)
    out = crop_and_resize(film, (-20, -20, 40, 40), 30, margin=0.0)
    assert out.shape == (30, 30) and out.dtype == np.uint8
    assert out[0, 0] == 0 and out[-1, -1] == 200


def test_crop_and_resize_is_square_around_the_box_with_margin():
    film = np.zeros((100, 100), np.uint8)
    film[40:60, 30:70] = 255  # a 40 x 20 box
    out = crop_and_resize(film, (30, 40, 70, 60), 48, margin=0.1)
    # Square side 40 * 1.2 = 48 px: one film pixel per output pixel.
    assert out.shape == (48, 48)
    assert out[24, 4:44].min() == 255 and out[24, :3].max() == 0
    assert out[2, 24] == 0  # above the box, inside the square


def test_crop_and_resize_keeps_colour_channels():
    # The Data page crops films with coloured lesion masks blended in.
    rgb = np.zeros((100, 80, 3), np.uint8)
    rgb[..., 1] = 90
    out = crop_and_resize(rgb, (10, 20, 50, 70), 64, margin=0.08)
    assert out.shape == (64, 64, 3)
    assert out[32, 32].tolist() == [0, 90, 0]


def test_crop_nearest_keeps_mask_values():
    rng = np.random.default_rng(0)
    mask = rng.choice(np.array([0, 1, 2, 9], np.uint8), size=(90, 70))
    for size in (16, 64, 200):
        out = crop_and_resize(mask, (10, 10, 60, 80), size, nearest=True)
        assert set(np.unique(out)) <= {0, 1, 2, 9}


def test_crop_rejects_bad_arguments():
    film = np.zeros((10, 10), np.uint8)
    with pytest.raises(ValueError, match="size"):
        crop_and_resize(film, (0, 0, 5, 5), 0)
    with pytest.raises(ValueError, match="margin"):
        crop_and_resize(film, (0, 0, 5, 5), 8, margin=-0.1)


@pytest.mark.parametrize("film_size", [(160, 160), (512, 400)])
def test_detector_works_at_other_film_sizes(film_size):
    spec = PhantomSpec(n_images=12, n_joint=6, seed=2, film_size=film_size)
    labels = phantom_labels(spec)
    ious = []
    for _, row in labels.iterrows():
        film, _, box = render_film(spec, row)
        ious.append(box_iou(detect_knee_box(film), box))
    assert min(ious) > 0.5


# --------------------------------------------------------------------------------------
# find_knees: confidence, sides, bilateral films, scoring
# --------------------------------------------------------------------------------------


def _films_without_a_knee() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    blurred = cv2.GaussianBlur(rng.normal(0, 1, (384, 320)).astype(np.float32), (0, 0), 4)
    blurred = (blurred - blurred.min()) / (blurred.max() - blurred.min()) * 255
    text = np.zeros((384, 320), np.uint8)
    for k, line in enumerate(["PATIENT NAME", "DOE^JOHN", "2024-01-01", "KNEE AP", "R"]):
        cv2.putText(text, line, (10, 40 + 60 * k), cv2.FONT_HERSHEY_SIMPLEX, 1.0, 255, 3)
    return {
        "uniform noise": rng.integers(0, 256, (384, 320), dtype=np.uint8),
        "gaussian noise": np.clip(rng.normal(128, 40, (384, 320)), 0, 255).astype(np.uint8),
        "blurred noise": blurred.astype(np.uint8),
        "black": np.zeros((384, 320), np.uint8),
        "grey": np.full((384, 320), 128, np.uint8),
        "white": np.full((384, 320), 255, np.uint8),
        "gradient": np.tile(np.linspace(0, 255, 320).astype(np.uint8), (384, 1)),
        "text": text,
        "grey text": np.where(text > 0, 250, 128).astype(np.uint8),
    }


@pytest.mark.parametrize("name", list(_films_without_a_knee()))
def test_classical_confidence_is_low_on_films_without_a_knee(name):
    film = _films_without_a_knee()[name]
    knees = find_knees(film)
    assert all(k.confidence < LOW_CONFIDENCE for k in knees), (name, knees)
    assert len(knees) <= 1


def test_classical_confidence_is_high_on_phantom_knees(films):
    confidences = np.array([classical_knee(film).confidence for film, _ in films])
    assert (confidences >= LOW_CONFIDENCE).mean() >= 0.95
    assert confidences.mean() > 0.9


def test_find_knees_on_a_single_film_gives_one_knee_without_a_side(films):
    film, box = films[1]
    knees = find_knees(film)
    assert len(knees) == 1
    assert knees[0].side is None
    assert knees[0].box == detect_knee_box(film)
    assert box_iou(knees[0].box, box) > 0.5


@pytest.mark.parametrize(("tag", "side"), [("R", "R"), ("l", "L"), (" L ", "L")])
def test_find_knees_takes_the_side_from_the_laterality_tag(films, tag, side):
    knees = find_knees(films[1][0], laterality=tag)
    assert [k.side for k in knees] == [side]


@pytest.mark.parametrize("tag", ["B", "U", "", None])
def test_a_tag_naming_no_single_side_leaves_one_knee_without_a_side(films, tag):
    assert [k.side for k in find_knees(films[1][0], laterality=tag)] == [None]


@pytest.fixture(scope="module")
def bilateral() -> tuple[list[np.ndarray], list[list[tuple[int, int, int, int]]]]:
    return phantom_detection_set(PhantomSpec(n_images=24, n_joint=12, seed=31), bilateral=True)


def test_bilateral_phantom_films_hold_the_right_knee_on_the_viewers_left(bilateral):
    films, boxes = bilateral
    assert len(films) >= 4
    for film, (right, left) in zip(films, boxes, strict=True):
        assert film.shape == (384, 640)
        assert right[2] <= 320 <= left[0]


def test_classical_detector_finds_both_knees_of_a_bilateral_film_with_their_sides(bilateral):
    films, boxes = bilateral
    right_sides = 0
    for film, (right, left) in zip(films, boxes, strict=True):
        knees = find_knees(film)
        if len(knees) == 2 and box_iou(knees[0].box, right) > 0.5:
            assert [k.side for k in knees] == ["R", "L"]
            assert box_iou(knees[1].box, left) > 0.5
            right_sides += 1
    assert right_sides >= 0.75 * len(films)


def test_a_single_side_tag_on_a_bilateral_film_keeps_one_knee_of_that_side(bilateral):
    knees = find_knees(bilateral[0][0], laterality="L")
    assert len(knees) == 1 and knees[0].side == "L"


def test_max_knees_one_returns_one_knee_on_a_bilateral_film(bilateral):
    assert len(find_knees(bilateral[0][0], max_knees=1)) == 1


def test_find_knees_rejects_bad_arguments():
    film = np.zeros((64, 64), np.uint8)
    with pytest.raises(ValueError, match="laterality 'X'.*allowed: 'R', 'L'"):
        find_knees(film, laterality="X")
    with pytest.raises(ValueError, match="max_knees"):
        find_knees(film, max_knees=0)
    with pytest.raises(ValueError, match="2-D"):
        find_knees(np.zeros((8, 8, 3), np.uint8))


def test_find_knees_uses_a_given_detector_and_orders_its_knees_left_to_right():
    class Fixed:
        def detect(self, film, max_knees=2):
            return [
                KneeDetection((60, 0, 90, 30), 0.9),
                KneeDetection((0, 0, 30, 30), 0.8),
                KneeDetection((30, 30, 50, 50), 0.7),
            ]

    knees = find_knees(np.zeros((100, 100), np.uint8), detector=Fixed())
    assert [(k.box[0], k.side) for k in knees] == [(0, "R"), (60, "L")]


def test_select_knees_keeps_the_best_always_and_a_second_only_when_confident_and_apart():
    best = KneeDetection((0, 0, 10, 10), 0.05)
    assert select_knees([best], 2) == [best]
    weak = KneeDetection((50, 0, 60, 10), SECOND_KNEE_CONFIDENCE - 0.01)
    assert select_knees([weak, KneeDetection((0, 0, 10, 10), 0.9)], 2) == [
        KneeDetection((0, 0, 10, 10), 0.9)
    ]
    overlapping = KneeDetection((2, 2, 12, 12), 0.8)
    apart = KneeDetection((50, 0, 60, 10), 0.7)
    top = KneeDetection((0, 0, 10, 10), 0.9)
    assert select_knees([overlapping, apart, top], 2) == [top, apart]
    assert select_knees([overlapping, apart, top], 1) == [top]


def test_evaluate_detector_matches_knees_one_to_one_whatever_their_order():
    films = [np.zeros((50, 100), np.uint8)] * 3
    truth = [[(0, 0, 20, 20), (60, 0, 80, 20)], [(0, 0, 10, 10)], [(0, 0, 10, 10)]]
    answers = iter(
        [
            [(60, 0, 80, 20), (0, 0, 20, 20)],  # both knees, listed right to left
            [],  # missed
            [KneeDetection((5, 0, 15, 10), 0.4), KneeDetection((40, 40, 50, 50), 0.2)],
        ]
    )
    m = evaluate_detector(lambda film: next(answers), films, truth)
    assert (m.n_films, m.n_knees) == (3, 4)
    assert m.mean_iou == pytest.approx((1 + 1 + 0 + 50 / 150) / 4, abs=1e-4)
    assert m.min_iou == 0.0
    assert m.share_iou_50 == 0.5 and m.share_iou_75 == 0.5
    assert m.misses == 2  # the missed knee and the one found at IoU 1/3
    assert m.extra == 2  # both boxes of the third film match no knee at IoU >= 0.5
    assert m.films_all_found == pytest.approx(1 / 3, abs=1e-4)
    assert m.mean_confidence == pytest.approx(0.3)


def test_evaluate_detector_rejects_mismatched_inputs():
    with pytest.raises(ValueError, match="2 films but 1"):
        evaluate_detector(lambda f: [], [np.zeros((4, 4), np.uint8)] * 2, [[(0, 0, 1, 1)]])
