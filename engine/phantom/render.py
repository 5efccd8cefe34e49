"""Rendering films: one knee per film (:func:`render_film`) and the co-occurrence stress
test's redrawn variants (:func:`render_variant`).

A film is drawn deterministically from ``(spec.seed, film_index)``: the film's own random
stream draws its lesions, the knee on the canvas, then its placement and exposure.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from engine.phantom.anatomy import patient_anatomy
from engine.phantom.film import place_and_expose
from engine.phantom.knee import draw_knee
from engine.phantom.lesions import SIGN_FIELDS, film_lesions, severity_at
from engine.phantom.spec import STREAM_FILM, PhantomSpec
from engine.vocab import TOP_GRADE, Box


def render_film(spec: PhantomSpec, row: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, Box]:
    """Draw one film, deterministically from ``(spec.seed, row['film_index'])``.

    Args:
        spec: the phantom.
        row: one row of :func:`phantom_labels` (a Series or any mapping with its columns).

    Returns:
        ``film`` (H, W) uint8, ``mask`` (H, W) uint8 with MASK_BITS flags, and the knee
        box ``(x0, y0, x1, y1)`` in film pixels (x1, y1 exclusive), all at ``spec.film_size``.
    """
    att, canvas_mask, rng = draw_film_knee(spec, row)
    return place_and_expose(spec, row, att, canvas_mask, rng)


def draw_film_knee(
    spec: PhantomSpec, row: Mapping[str, Any]
) -> tuple[np.ndarray, np.ndarray, np.random.Generator]:
    """The knee of one label row drawn on the canvas, from the film's own random stream.

    Returns:
        Canvas attenuation, canvas lesion mask, and the film's stream after the drawing
        (its placement and exposure draws come next).
    """
    rng = np.random.default_rng([spec.seed, STREAM_FILM, int(row["film_index"])])
    anat = patient_anatomy(spec.seed, int(row["patient_index"]))
    les = film_lesions(anat, row, spec.effective_difficulty, rng)
    att, canvas_mask = draw_knee(anat, les, rng)
    return att, canvas_mask, rng


def render_variant(
    spec: PhantomSpec, row: Mapping[str, Any], grades: Mapping[str, int]
) -> tuple[np.ndarray, np.ndarray, Box]:
    """The film of ``row`` with the signs of some pathologies redrawn at the given grades.

    Everything else is the original film's: the knee, its placement and exposure, and the
    signs of a pathology not in ``grades``. This is the co-occurrence stress test's
    counterfactual (paper, Fig. "Grad-CAM analysis of model robustness under co-occurring
    pathologies"): the same joint seen with more or less of one disease, and nothing else
    changed. Redrawn signs sit at the centre of their grade's severity band.

    Args:
        spec: the phantom.
        row: one row of :func:`phantom_labels`.
        grades: new grade per pathology, e.g. ``{"KL": 4, "CPPD": 2}``; grades run from 0
            to :data:`TOP_GRADE` [task].

    Returns:
        ``film``, ``mask`` and knee box, as :func:`render_film`.
    """
    for task, grade in grades.items():
        if task not in SIGN_FIELDS:
            raise ValueError(f"task must be one of {sorted(SIGN_FIELDS)}, not {task!r}")
        if not 0 <= grade <= TOP_GRADE[task]:
            raise ValueError(f"{task} grade must be 0..{TOP_GRADE[task]}, not {grade}")
    seed = [spec.seed, STREAM_FILM, int(row["film_index"])]
    rng = np.random.default_rng(seed)
    anat = patient_anatomy(spec.seed, int(row["patient_index"]))
    diff = spec.effective_difficulty
    les = film_lesions(anat, row, diff, rng)
    # Drawing consumes the film's stream; the original film's placement and exposure draws
    # follow it, so the original is drawn (and dropped) to reach that point of the stream.
    draw_rng = copy.deepcopy(rng)
    draw_knee(anat, les, rng)
    # The redrawn signs take their per-sign scatter from the same stream at every grade.
    severities: dict[str, float] = {}
    for task, grade in grades.items():
        severities.update(severity_at(task, grade, row))
    redrawn = film_lesions(anat, {**row, **severities}, diff, np.random.default_rng(seed))
    fields = [name for task in grades for name in SIGN_FIELDS[task]]
    les = dataclasses.replace(les, **{name: getattr(redrawn, name) for name in fields})
    att, canvas_mask = draw_knee(anat, les, draw_rng)
    return place_and_expose(spec, row, att, canvas_mask, rng)
