"""Bilateral films: both knees of one patient on one wider AP film, with truth per knee.

Convention (radiographic, for an AP/PA film as it is read): the patient faces the viewer, so
the patient's **right knee appears on the viewer's LEFT** (the film's left half, smaller x)
and the left knee on the viewer's right; each knee's medial side faces the middle of the
film. A patient whose labels hold one knee gets a film with that knee alone, in its half.

Each knee is the very knee of its single film (:func:`engine.phantom.render_film`): drawn
from that film's own random stream, with its own grades and lesions. Only its placement
differs: the film is ``(H, 2 W)`` for ``spec.film_size == (H, W)``, the two knees share one
magnification (the knee box covers 40-62 % of ``min(H, W)``, as on a single film) and each
sits inside its own half at about the same height, so the true boxes never overlap. Exposure,
blur, noise, collimation and the side marker are the film's, from a stream of its own
(``[seed, STREAM_BILATERAL, patient_index]``); single films are unchanged by all of this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from engine.phantom.canvas import BOX_SIDE
from engine.phantom.film import (
    box_half_extent,
    canvas_to_film,
    collimate,
    expose,
    finish,
    knee_box,
    side_marker,
    tilt,
    warp_to_film,
)
from engine.phantom.labels import phantom_labels
from engine.phantom.render import draw_film_knee
from engine.phantom.spec import STREAM_BILATERAL, PhantomSpec
from engine.vocab import Box

#: Sides in the order they appear from the viewer's left to right (radiographic convention).
SIDES_LEFT_TO_RIGHT = ("R", "L")


@dataclass(frozen=True)
class KneeTruth:
    """One knee of a bilateral film.

    Attributes:
        image_id: the knee's id in :func:`engine.phantom.phantom_labels` ('ph00042').
        patient_id: its patient ('pt0012').
        side: the patient's side, 'R' or 'L' (R is on the viewer's left).
        box: the true knee box ``(x0, y0, x1, y1)`` in film pixels (x1, y1 exclusive).
        kl: recorded KL grade, None for a CPPD-only knee.
        kl_true: true KL grade.
        cppd: recorded CPPD grade.
        cppd_true: true CPPD grade.
        mask: (H, 2 W) uint8 ``MASK_BITS`` lesion mask of this knee alone, film pixels.
    """

    image_id: str
    patient_id: str
    side: str
    box: Box
    kl: int | None
    kl_true: int
    cppd: int
    cppd_true: int
    mask: np.ndarray


def bilateral_film_size(spec: PhantomSpec) -> tuple[int, int]:
    """(H, 2 W): a bilateral film is two single films' widths wide."""
    film_h, film_w = spec.film_size
    return film_h, 2 * film_w


def render_bilateral_film(
    spec: PhantomSpec, patient_index: int, labels: pd.DataFrame | None = None
) -> tuple[np.ndarray, list[KneeTruth]]:
    """Draw both knees of one patient on one film, deterministically.

    Args:
        spec: the phantom.
        patient_index: which patient, ``0 .. labels.patient_index.max()``.
        labels: ``phantom_labels(spec)``, passed in when drawing many films (computed here
            otherwise).

    Returns:
        ``film`` (H, 2 W) uint8, and one :class:`KneeTruth` per knee, from the viewer's left
        to right (the right knee first when the patient has both).

    Raises:
        ValueError: ``patient_index`` is not a patient of this phantom.
    """
    labels = phantom_labels(spec) if labels is None else labels
    rows = labels[labels["patient_index"] == patient_index]
    if rows.empty:
        top = int(labels["patient_index"].max())
        raise ValueError(f"patient_index must be 0..{top}, not {patient_index}")
    rows = rows.sort_values("side", key=lambda s: s.map(SIDES_LEFT_TO_RIGHT.index))
    film_h, film_w = spec.film_size
    size = bilateral_film_size(spec)
    diff = spec.effective_difficulty
    rng = np.random.default_rng([spec.seed, STREAM_BILATERAL, patient_index])

    # One magnification for the film; both knees at about the same height.
    scale = float(rng.uniform(0.40, 0.62)) * min(film_h, film_w) / BOX_SIDE
    height = float(rng.uniform(0.4, 0.6)) * film_h
    film_att = np.zeros(size, np.float32)
    knees: list[KneeTruth] = []
    for row in rows.to_dict("records"):
        att, canvas_mask, _ = draw_film_knee(spec, row)
        half = SIDES_LEFT_TO_RIGHT.index(row["side"])  # 0: the film's left half
        m = _place_in_half(scale, height, half, film_w, film_h, str(row["side"]), diff, rng)
        knee_att, mask = warp_to_film(att, canvas_mask, m, size)
        film_att += knee_att  # where the legs overlap, their tissue adds up
        knees.append(_truth(row, knee_box(m, size), mask))

    img = expose(film_att, diff, rng)
    everything = _union([knee.box for knee in knees])
    if rng.random() < 0.25:
        collimate(img, everything, rng)
    if rng.random() < 0.5:
        _mark_side(img, knees[0], film_w, rng)
    return finish(img, diff, rng), knees


def _place_in_half(
    scale: float,
    height: float,
    half: int,
    film_w: int,
    film_h: int,
    side: str,
    diff: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """(2, 3) canvas -> film map putting a knee inside one half of the film, its box clear
    of the middle and of the film's edges."""
    theta = tilt(diff, rng)
    half_ext = box_half_extent(scale, theta)
    pad = 3.0
    left = half * film_w
    cx = float(rng.uniform(left + half_ext + pad, left + film_w - half_ext - pad))
    cy = height + float(rng.normal(0.0, 0.03 * film_h))
    cy = float(np.clip(cy, half_ext + pad, film_h - half_ext - pad))
    return canvas_to_film(scale, theta, (cx, cy), side)


def _truth(row: dict[str, Any], box: Box, mask: np.ndarray) -> KneeTruth:
    """A label row's knee as a truth record."""
    kl = row["kl"]
    return KneeTruth(
        image_id=str(row["image_id"]),
        patient_id=str(row["patient_id"]),
        side=str(row["side"]),
        box=box,
        kl=None if pd.isna(kl) else int(kl),
        kl_true=int(row["kl_true"]),
        cppd=int(row["cppd"]),
        cppd_true=int(row["cppd_true"]),
        mask=mask,
    )


def _union(boxes: list[Box]) -> Box:
    """The smallest box holding every box."""
    x0, y0, x1, y1 = zip(*boxes, strict=True)
    return min(x0), min(y0), max(x1), max(y1)


def _mark_side(img: np.ndarray, knee: KneeTruth, film_w: int, rng: np.random.Generator) -> None:
    """Burn the side marker of the viewer's-left knee into a corner of its own half."""
    half = SIDES_LEFT_TO_RIGHT.index(knee.side)
    left = half * film_w
    x0, y0, x1, y1 = knee.box
    view = img[:, left : left + film_w]  # a view: the marker lands on the film
    side_marker(view, (x0 - left, y0, x1 - left, y1), knee.side, rng)
