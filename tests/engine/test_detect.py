"""Behaviour of the classical knee detector and the crop helper."""

from __future__ import annotations

import numpy as np
import pytest

from engine.detect import box_iou, crop_and_resize, detect_knee_box
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
