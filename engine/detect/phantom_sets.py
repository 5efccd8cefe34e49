"""Phantom films with their true knee boxes, to train or score a knee detector on."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.phantom import PhantomSpec, phantom_labels, render_bilateral_film, render_film
from engine.vocab import Box


def phantom_detection_set(
    spec: PhantomSpec, *, bilateral: bool = False
) -> tuple[list[np.ndarray], list[list[Box]]]:
    """Phantom films with their true knee boxes, for training or scoring a detector.

    Args:
        spec: the phantom (its ``film_size``, seed and number of films).
        bilateral: both knees of a patient on one film, drawn by
            :func:`engine.phantom.render_bilateral_film` (right knee on the viewer's left);
            patients with one knee in the phantom are left out.

    Returns:
        ``(films, boxes)``: (H, W) uint8 films and, per film, its knee boxes in film pixels;
        on a bilateral film ``[right knee, left knee]``.
    """
    labels = phantom_labels(spec)
    if not bilateral:
        films, boxes = [], []
        for _, row in labels.iterrows():
            film, _, box = render_film(spec, row)
            films.append(film)
            boxes.append([box])
        return films, boxes
    films, boxes = [], []
    for patient_index, rows in labels.groupby("patient_index", sort=True):
        if sorted(rows["side"]) != ["L", "R"]:
            continue
        film, knees = render_bilateral_film(spec, int(patient_index), labels)
        films.append(film)
        boxes.append([knee.box for knee in knees])  # viewer's left to right: [right, left]
    return films, boxes


def phantom_films(
    n_films: int,
    *,
    seed: int,
    film_size: tuple[int, int] = (384, 320),
    bilateral: bool = False,
) -> tuple[list[np.ndarray], list[list[Box]]]:
    """Exactly ``n_films`` phantom films of one seed with their true boxes (see
    :func:`phantom_detection_set`); bilateral films are ``(H, 2 W)`` with two knees each.

    Raises:
        ValueError: ``n_films`` below 1.
    """
    if n_films < 1:
        raise ValueError(f"{n_films=} must be at least 1")
    # About 47 % of the phantom's patients have both knees: draw enough knees for n films.
    n_images = n_films * 9 // 4 + 16 if bilateral else n_films
    while True:
        spec = PhantomSpec(n_images=n_images, n_joint=n_images // 2, seed=seed, film_size=film_size)
        films, boxes = phantom_detection_set(spec, bilateral=bilateral)
        if len(films) >= n_films:
            return films[:n_films], boxes[:n_films]
        n_images *= 2


def phantom_trained_on(films: Sequence[np.ndarray], *, seed: int, bilateral: bool) -> str:
    """What phantom films a detector was trained on, in words, for its record."""
    kind = "bilateral" if bilateral else "single-knee"
    h, w = films[0].shape
    return f"phantom seed={seed}, {len(films)} {kind} films of {h}x{w} px"
