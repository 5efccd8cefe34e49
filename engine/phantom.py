"""Synthetic anteroposterior knee radiographs with KL and CPPD grades.

The real radiographs behind the paper are private, so the default dataset is this phantom
(see ``shared/design/PHANTOM.md`` for the radiology it imitates). Everything is derived from
``PhantomSpec.seed``:

* :func:`phantom_labels` decides, without drawing anything, which films exist: patients and
  sides, true and recorded grades, and the continuous severities that drive the drawing.
* :func:`render_film` draws one film from one label row: a knee is drawn in a fixed
  *canvas* frame (a right knee, medial side on the viewer's right), then mirrored for left
  knees and placed on a larger film at a random position, scale and slight rotation, with
  exposure, blur, noise and the odd marker or collimation edge on top.
* :func:`build_phantom_cache` renders every film in worker processes, crops each one to the
  knee found by :mod:`engine.detect` and writes ``images.npy``, ``masks.npy``, ``meta.csv``
  and, last, ``manifest.json``.

Image formation follows X-ray physics loosely: each structure contributes an attenuation
equal to its chord length through a rounded body, so the cortex (a dense shell seen
tangentially) is brighter than the trabecular interior, and overlapping structures add. The
film shows ``1 - exp(-k * attenuation)`` through a random exposure window.

Counts: joint (KL, CPPD) cells follow the reference contingency table and CPPD-only films
follow the paper's CPPD totals minus that table's column sums, both scaled to the requested
sizes by largest remainder so every total is exact.

Patients: films are grouped into patients within each annotation group (joint or
CPPD-only), so both knees of a patient are always annotated the same way. About 10 % of
patients have a single knee. Knees are paired after sorting on a noisy overall severity, so
a patient's two knees tend to have similar (but not equal) grades, as in real cohorts. Both
knees of a patient share one set of anatomy parameters.

Difficulty: each grade is drawn from a continuous severity inside a band around it, every
sign gets its own random scatter, and annotation noise moves recorded grades to neighbours,
so adjacent grades are genuinely confusable. ``PhantomSpec.difficulty`` scales all of that
together with the nuisance; its default is calibrated against ResNet18 (see
_DIFFICULTY_SCALE).

Speed: drawing is vectorised numpy/OpenCV over precomputed coordinate grids, bones are
shaded only inside their bounding boxes, lesions only in a band of rows around the joint,
and trabecular texture and film noise are windows cut at random from per-process banks
(fixed seeds, so every process draws the same bytes).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import json
import logging
import multiprocessing as mp
import os
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pandas as pd

from engine.detect import box_iou, crop_and_resize, detect_knee_box
from engine.vocab import TOP_GRADE

logger = logging.getLogger(__name__)

MASK_BITS: dict[str, int] = {
    "joint_space": 1,
    "osteophytes": 2,
    "sclerosis": 4,
    "calcifications": 8,
}

#: Human-readable generator version, recorded in cache manifests. Caches are also keyed
#: on a fingerprint of this module's and engine.detect's source (see _code_fingerprint),
#: so any change to the drawing or the detector rebuilds them.
PHANTOM_VERSION = 1

#: KL (rows 0-4) x CPPD (columns 0-3) counts of the 970 jointly annotated radiographs,
#: copied from ``shared/reference/kl_cppd_contingency.csv`` (row sums are the paper's KL
#: totals 146, 310, 207, 195, 112).
JOINT_COUNTS: np.ndarray = np.array(
    [
        [111, 13, 8, 14],
        [201, 52, 34, 23],
        [98, 45, 36, 28],
        [70, 42, 40, 43],
        [29, 21, 30, 32],
    ],
    dtype=np.int64,
)
JOINT_COUNTS.setflags(write=False)

#: Whole-dataset CPPD totals, paper Table 2 (train + test), 2,170 radiographs.
CPPD_TOTALS: np.ndarray = np.array([816, 372, 480, 502], dtype=np.int64)
CPPD_TOTALS.setflags(write=False)

N_KL, N_CPPD = JOINT_COUNTS.shape

# Independent random streams, so that e.g. changing how patients are paired never changes
# a film's noise. Each stream is seeded with [spec.seed, stream, index].
_STREAM_LABELS = 11
_STREAM_ANATOMY = 23
_STREAM_FILM = 37
_STREAM_TEXTURE = 41

# Canvas frame in which one knee is drawn (pixels). The knee box is a square of
# _BOX_SIDE centred on the joint; femur and tibia shafts run to the canvas edges and are
# continued beyond them by edge replication when the canvas is placed on the film.
_CANVAS_H, _CANVAS_W = 352, 288
_CX = (_CANVAS_W - 1) / 2.0  # on the mirror axis, so flipping keeps the box in place
_CY = 176.0
_BOX_SIDE = 200.0
# Rows around the joint line where lesions live; drawing them only here saves time.
_WIN_R0, _WIN_R1 = int(_CY - 72), int(_CY + 48)

_YY, _XX = np.mgrid[0:_CANVAS_H, 0:_CANVAS_W].astype(np.float32)
_YY.setflags(write=False)
_XX.setflags(write=False)
_XS = np.arange(_CANVAS_W, dtype=np.float32)

# Calibration of PhantomSpec.difficulty (spec value x this = internal value). On the
# internal scale, 1 makes neighbouring grades' severity bands just touch. A ResNet18 probe
# (random init, 40 epochs, cross-entropy, flips and shifts, patient-grouped 49/21/30
# train/val/test split, 3 seeds, on an H200) reached test QWK on recorded grades of
# KL 0.82 / CPPD 0.83 at internal 1.0 (64 px), 0.77 / 0.78 at 1.5 and 0.68 / 0.71 at 2.0.
# The paper reports 0.62-0.78 (KL) and 0.57-0.80 (CPPD) on real films. Internal 1.3
# leaves the default a little above the paper, with room for ImageNet weights and better
# recipes without reaching a trivial ~0.95.
_DIFFICULTY_SCALE = 1.3

# Severity -> sign curves (knots, values); severity is the continuous grade, e.g. a KL 2
# film has kl_severity in [1.5, 2.5] at internal difficulty 1. Units: narrowing is the
# fraction of the normal joint-space width lost; osteophyte length in canvas pixels;
# sclerosis and calcification in attenuation units (cortex is about 1).
_NARROW_KNOTS = ([0.0, 1.0, 2.0, 3.0, 4.0, 4.5], [0.0, 0.06, 0.2, 0.45, 0.74, 0.85])
_OSTEO_LEN_KNOTS = ([0.0, 0.6, 1.0, 2.0, 3.0, 4.0, 4.5], [0.0, 0.0, 3.0, 6.5, 10.5, 15.0, 17.0])
_OSTEO_PROB_KNOTS = ([0.0, 0.6, 1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.3, 0.6, 0.85, 1.0])
_SCLEROSIS_KNOTS = ([0.0, 1.8, 2.5, 3.0, 4.0, 4.5], [0.0, 0.0, 0.1, 0.28, 0.55, 0.65])
_CALC_EXTENT_KNOTS = ([0.0, 0.35, 1.0, 2.0, 3.0, 3.5], [0.0, 0.08, 0.2, 0.45, 0.8, 0.95])
_CALC_AMP_KNOTS = ([0.0, 0.35, 1.0, 2.0, 3.0, 3.5], [0.0, 0.09, 0.13, 0.17, 0.21, 0.23])


@dataclass(frozen=True)
class PhantomSpec:
    """What phantom to generate; two equal specs give byte-identical data.

    Attributes:
        n_images: total films.
        n_joint: films with both a KL and a CPPD grade; the rest carry CPPD only.
        seed: root of every random choice.
        film_size: (H, W) of each film in pixels; the knee box covers 40-60 % of the width.
        annotation_noise: probability that a recorded grade is moved to an adjacent grade
            (the true grade is kept alongside).
        difficulty: one knob for how hard grading is. Larger values widen each grade's
            severity band (so adjacent grades overlap more), make signs fainter and nuisance
            (noise, blur, rotation, exposure) stronger; smaller values do the opposite. The
            default 1 is calibrated to the paper's range (see _DIFFICULTY_SCALE).
    """

    n_images: int = 2170
    n_joint: int = 970
    seed: int = 0
    film_size: tuple[int, int] = (384, 320)
    annotation_noise: float = 0.1
    difficulty: float = 1.0

    def __post_init__(self) -> None:
        n_images, n_joint, seed = self.n_images, self.n_joint, self.seed
        film_size, annotation_noise, difficulty = (
            self.film_size,
            self.annotation_noise,
            self.difficulty,
        )
        if not isinstance(n_images, int) or isinstance(n_images, bool) or n_images < 1:
            raise ValueError(f"{n_images=} must be a positive int")
        if not isinstance(n_joint, int) or isinstance(n_joint, bool) or n_joint < 0:
            raise ValueError(f"{n_joint=} must be a non-negative int")
        if n_joint > n_images:
            raise ValueError(f"{n_joint=} must be <= {n_images=}")
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"{seed=} must be a non-negative int")
        if (
            not isinstance(film_size, tuple)
            or len(film_size) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in film_size)
        ):
            raise ValueError(f"{film_size=} must be a tuple of two ints (H, W)")
        if min(film_size) < 160 or max(film_size) > 2048:
            raise ValueError(f"{film_size=} must have both sides in [160, 2048] pixels")
        if not 0.0 <= annotation_noise <= 1.0:
            raise ValueError(f"{annotation_noise=} must be in [0, 1]")
        if not 0.1 <= difficulty <= 4.0:
            raise ValueError(f"{difficulty=} must be in [0.1, 4]")

    @property
    def effective_difficulty(self) -> float:
        """``difficulty`` on the drawing's internal scale (where 1 means touching bands)."""
        return _DIFFICULTY_SCALE * self.difficulty

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of the fields (film_size as a list)."""
        out = asdict(self)
        out["film_size"] = list(self.film_size)
        return out


# --------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------


def _largest_remainder(weights: np.ndarray, total: int) -> np.ndarray:
    """Integer counts proportional to ``weights`` that sum exactly to ``total``.

    Integer arithmetic throughout, so that weights which already sum to ``total`` come back
    unchanged (no float round-off). Ties go to the earlier cell in C order.

    Args:
        weights: non-negative integer weights of any shape.
        total: the sum wanted.

    Returns:
        Counts with the shape of ``weights``.
    """
    w = np.asarray(weights, dtype=np.int64)
    flat = w.ravel()
    denom = int(flat.sum())
    if total == 0 or denom == 0:
        return np.zeros_like(w)
    scaled = flat * total
    base = scaled // denom
    remainder = scaled % denom
    missing = total - int(base.sum())
    order = np.argsort(-remainder, kind="stable")
    base[order[:missing]] += 1
    return base.reshape(w.shape)


def joint_cell_counts(n_joint: int) -> np.ndarray:
    """(5, 4) KL x CPPD counts of the jointly annotated films, scaled to ``n_joint``."""
    return _largest_remainder(JOINT_COUNTS, n_joint)


def cppd_only_counts(n_cppd_only: int) -> np.ndarray:
    """(4,) CPPD counts of the CPPD-only films: paper totals minus the joint column sums."""
    return _largest_remainder(CPPD_TOTALS - JOINT_COUNTS.sum(axis=0), n_cppd_only)


def _severity(
    grade: np.ndarray, half_band: float, lo: float, hi: float, rng: np.random.Generator
) -> np.ndarray:
    """Continuous severity: the grade plus a uniform offset in [-half_band, half_band].

    With half_band 0.5 neighbouring grades' bands touch; the per-sign random scatter applied
    when drawing then makes a late grade g look like an early grade g + 1.
    """
    offset = rng.uniform(-half_band, half_band, size=grade.shape)
    return np.clip(grade + offset, lo, hi)


def _annotate(
    true_grade: np.ndarray, n_grades: int, p: float, rng: np.random.Generator
) -> np.ndarray:
    """Recorded grades: each moves to an adjacent grade with probability ``p``."""
    moved = rng.random(true_grade.shape) < p
    step = np.where(rng.random(true_grade.shape) < 0.5, -1, 1)
    # At the ends of the scale the only adjacent grade is inwards.
    step = np.where(true_grade == 0, 1, np.where(true_grade == n_grades - 1, -1, step))
    return np.where(moved, true_grade + step, true_grade)


def _pair_into_patients(
    order: np.ndarray, rng: np.random.Generator, p_single: float = 0.1
) -> list[list[int]]:
    """Walk films in ``order``; each patient takes one film (prob ``p_single``) or two."""
    patients: list[list[int]] = []
    i = 0
    n = len(order)
    while i < n:
        if i == n - 1 or rng.random() < p_single:
            patients.append([int(order[i])])
            i += 1
        else:
            patients.append([int(order[i]), int(order[i + 1])])
            i += 2
    return patients


def phantom_labels(spec: PhantomSpec) -> pd.DataFrame:
    """Decide every film of the phantom without drawing anything (fast).

    Args:
        spec: the phantom.

    Returns:
        One row per film in film order (``film_index`` 0..n_images-1), columns:
        ``image_id`` ('ph00000'), ``patient_id`` ('pt0000'), ``side`` ('L' | 'R'),
        ``kl`` (Int64 recorded grade, <NA> for CPPD-only films), ``kl_true`` (Int64, every
        film has knee structure), ``cppd`` / ``cppd_true`` (int), ``joint_annotated``
        (bool), ``film_index`` and ``patient_index`` (int), and the continuous severities
        used for drawing: ``kl_severity`` in [0, 4.5], ``cppd_severity`` (0 for CPPD 0,
        else in [0.35, 3.5]), ``narrow_medial`` / ``narrow_lateral`` (fraction of the
        joint-space width lost), ``narrow_side`` ('medial' | 'lateral', the compartment
        that narrows most).
    """
    rng = np.random.default_rng([spec.seed, _STREAM_LABELS])
    n_only = spec.n_images - spec.n_joint

    # Exact cell counts; CPPD-only films still have a knee, whose (unrecorded) KL is drawn
    # from P(KL | CPPD) of the joint table, again by largest remainder per CPPD column.
    kl_list: list[np.ndarray] = []
    cppd_list: list[np.ndarray] = []
    cells = joint_cell_counts(spec.n_joint)
    for k in range(N_KL):
        for c in range(N_CPPD):
            kl_list.append(np.full(cells[k, c], k))
            cppd_list.append(np.full(cells[k, c], c))
    only = cppd_only_counts(n_only)
    for c in range(N_CPPD):
        kl_given_c = _largest_remainder(JOINT_COUNTS[:, c], int(only[c]))
        for k in range(N_KL):
            kl_list.append(np.full(kl_given_c[k], k))
            cppd_list.append(np.full(kl_given_c[k], c))
    kl_true = np.concatenate(kl_list).astype(np.int64)
    cppd_true = np.concatenate(cppd_list).astype(np.int64)
    joint = np.arange(spec.n_images) < spec.n_joint

    # Patients within each annotation group; sorting on a noisy severity before pairing
    # makes a patient's two knees similar without making them identical.
    patients: list[list[int]] = []
    for group in (np.flatnonzero(joint), np.flatnonzero(~joint)):
        key = kl_true[group] + 0.6 * cppd_true[group] + rng.normal(0.0, 1.2, size=len(group))
        patients += _pair_into_patients(group[np.argsort(key, kind="stable")], rng)
    patient_order = rng.permutation(len(patients))

    film_src: list[int] = []
    sides: list[str] = []
    patient_index: list[int] = []
    for p_new, p_old in enumerate(patient_order):
        films = patients[p_old]
        if len(films) == 2:
            pair_sides = ["L", "R"] if rng.random() < 0.5 else ["R", "L"]
        else:
            pair_sides = ["L" if rng.random() < 0.5 else "R"]
        for f, s in zip(films, pair_sides, strict=True):
            film_src.append(f)
            sides.append(s)
            patient_index.append(p_new)
    src = np.asarray(film_src, dtype=np.int64)
    kl_true, cppd_true, joint = kl_true[src], cppd_true[src], joint[src]
    n = spec.n_images

    diff = spec.effective_difficulty
    half_band = 0.5 * diff
    kl_sev = _severity(kl_true, half_band, 0.0, N_KL - 0.5, rng)
    cppd_sev = _severity(cppd_true, half_band, 0.35, N_CPPD - 0.5, rng)
    cppd_sev = np.where(cppd_true == 0, 0.0, cppd_sev)  # CPPD 0 means no deposits at all

    # Narrowing is usually worse in one compartment, most often the medial one.
    base_narrow = np.interp(kl_sev, *_NARROW_KNOTS)
    scatter = np.exp(rng.normal(0.0, 0.3 * diff, size=n))
    worst = np.clip(base_narrow * scatter, 0.0, 0.9)
    other = base_narrow * rng.uniform(0.0, 0.4, size=n)
    medial_worst = rng.random(n) < 0.75
    narrow_medial = np.where(medial_worst, worst, other)
    narrow_lateral = np.where(medial_worst, other, worst)

    kl_rec = _annotate(kl_true, N_KL, spec.annotation_noise, rng)
    cppd_rec = _annotate(cppd_true, N_CPPD, spec.annotation_noise, rng)

    return pd.DataFrame(
        {
            "image_id": [f"ph{i:05d}" for i in range(n)],
            "patient_id": [f"pt{p:04d}" for p in patient_index],
            "side": sides,
            "kl": pd.array(
                [int(v) if j else pd.NA for v, j in zip(kl_rec, joint, strict=True)], dtype="Int64"
            ),
            "kl_true": pd.array(kl_true, dtype="Int64"),
            "cppd": cppd_rec.astype(np.int64),
            "cppd_true": cppd_true.astype(np.int64),
            "joint_annotated": joint,
            "film_index": np.arange(n, dtype=np.int64),
            "patient_index": np.asarray(patient_index, dtype=np.int64),
            "kl_severity": kl_sev.round(4),
            "cppd_severity": cppd_sev.round(4),
            "narrow_medial": narrow_medial.round(4),
            "narrow_lateral": narrow_lateral.round(4),
            "narrow_side": np.where(medial_worst, "medial", "lateral"),
        }
    )


# --------------------------------------------------------------------------------------
# Anatomy (one per patient) and lesions (one per film)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Anatomy:
    """One patient's knee shape in canvas pixels (right knee, medial on +x)."""

    half_width: float  # half the femoral condylar width
    notch_width: float
    medial_bias: float  # medial condyle is a little wider than the lateral one
    ry_med: float  # condyle heights (semi-axes of the superellipse)
    ry_lat: float
    condyle_p: float  # superellipse exponent: >2 gives a flatter articular surface
    femur_shaft_hw: float
    femur_flare_len: float
    tibia_extra: float  # plateau half-width minus condylar half-width
    tibia_shaft_hw: float
    tibia_flare_len: float
    jsw_med: float  # normal joint-space width per compartment
    jsw_lat: float
    concavity_med: float  # medial plateau is concave, lateral slightly convex
    convexity_lat: float
    spine_h: float
    spine_sep: float
    spine_w: float
    fib_dx: float  # how far the fibular head overlaps the tibia, in head radii
    fib_dy: float
    fib_rx: float
    fib_ry: float
    fib_shaft_hw: float
    pat_dx: float
    pat_dy: float
    pat_rx: float
    pat_ry: float
    pat_density: float
    cortex_shaft: float
    cortex_epi: float
    bone_density: float
    soft_hw: float
    soft_dx: float
    tex_sigma: float


def _patient_anatomy(seed: int, patient_index: int) -> _Anatomy:
    """Anatomy shared by both knees of one patient."""
    rng = np.random.default_rng([seed, _STREAM_ANATOMY, patient_index])
    u = rng.uniform
    jsw = u(9.0, 14.0)
    return _Anatomy(
        half_width=u(80.0, 90.0),
        notch_width=u(19.0, 27.0),
        medial_bias=u(0.0, 0.06),
        ry_med=u(24.0, 32.0),
        ry_lat=u(24.0, 32.0),
        condyle_p=u(2.4, 3.2),
        femur_shaft_hw=u(37.0, 45.0),
        femur_flare_len=u(100.0, 130.0),
        tibia_extra=u(0.0, 5.0),
        tibia_shaft_hw=u(31.0, 39.0),
        tibia_flare_len=u(110.0, 140.0),
        # Normal joint-space width varies a lot between people, so a narrow joint is not
        # by itself a narrowed one; the two compartments share part of the variation.
        jsw_med=jsw * u(0.85, 1.05),
        jsw_lat=jsw * u(0.95, 1.15),
        concavity_med=u(1.0, 4.0),
        convexity_lat=u(0.0, 2.0),
        spine_h=u(8.0, 13.0),
        spine_sep=u(6.0, 10.0),
        spine_w=u(4.0, 6.0),
        fib_dx=u(0.0, 0.45),
        fib_dy=u(36.0, 48.0),
        fib_rx=u(12.0, 15.0),
        fib_ry=u(13.0, 17.0),
        fib_shaft_hw=u(6.5, 9.0),
        pat_dx=u(-8.0, 8.0),
        pat_dy=u(-72.0, -55.0),
        pat_rx=u(27.0, 34.0),
        pat_ry=u(33.0, 42.0),
        pat_density=u(0.22, 0.32),
        cortex_shaft=u(5.0, 8.0),
        cortex_epi=u(2.2, 3.2),
        bone_density=u(0.88, 1.08),
        soft_hw=u(108.0, 124.0),
        soft_dx=u(-6.0, 6.0),
        tex_sigma=u(0.8, 1.3),
    )


@dataclass(frozen=True)
class _Lesions:
    """Signs drawn on one film, in canvas pixels and attenuation units."""

    jsw_med: float  # joint-space width after narrowing
    jsw_lat: float
    osteophytes: tuple[tuple[str, float], ...]  # (site, length)
    spine_sharpening: float  # extra tibial spine height
    sclerosis_med: float
    sclerosis_lat: float
    sclerosis_thick: float
    deform: float  # 0..1.2, grade 4 bone-end deformity
    cysts: tuple[tuple[float, float, float], ...]  # (x, y, r)
    calc_extent_med: float  # fraction of each compartment with hyaline-line deposits
    calc_extent_lat: float
    calc_amp: float
    calc_alpha_fem: float  # where the line sits across the gap (0 femur, 1 tibia)
    calc_alpha_tib: float
    calc_tibial_line: bool
    meniscus_amp: tuple[float, float]  # (medial, lateral) meniscal density strength
    calc_dotted: bool


_OSTEOPHYTE_SITES = ("fem_med", "fem_lat", "tib_med", "tib_lat")


def _film_lesions(
    anat: _Anatomy, row: Mapping[str, Any], difficulty: float, rng: np.random.Generator
) -> _Lesions:
    """Turn a label row's severities into concrete signs, with per-sign scatter."""
    kl_sev = float(row["kl_severity"])
    c_sev = float(row["cppd_severity"])
    # Signs get fainter as difficulty rises; sqrt keeps the knob gentle around 1.
    gain = 1.0 / np.sqrt(difficulty)
    spread = 0.25 * difficulty

    narrow_med = float(row["narrow_medial"]) * gain
    narrow_lat = float(row["narrow_lateral"]) * gain
    jsw_med = anat.jsw_med * (1.0 - min(narrow_med, 0.9))
    jsw_lat = anat.jsw_lat * (1.0 - min(narrow_lat, 0.9))

    length = float(np.interp(kl_sev, *_OSTEO_LEN_KNOTS)) * gain
    p_site = float(np.interp(kl_sev, *_OSTEO_PROB_KNOTS))
    present = rng.random(len(_OSTEOPHYTE_SITES)) < p_site
    if kl_sev >= 1.5 and not present.any():
        present[rng.integers(len(_OSTEOPHYTE_SITES))] = True  # "definite" from KL 2 on
    lengths = length * np.exp(rng.normal(0.0, spread, size=len(_OSTEOPHYTE_SITES)))
    osteophytes = tuple(
        (site, float(ln))
        for site, ln, on in zip(_OSTEOPHYTE_SITES, lengths, present, strict=True)
        if on and ln >= 1.0
    )
    spine_sharpening = max(0.0, (kl_sev - 1.5) * 2.0) * gain * float(rng.uniform(0.5, 1.5))

    scl = float(np.interp(kl_sev, *_SCLEROSIS_KNOTS)) * gain
    scl *= float(np.exp(rng.normal(0.0, spread)))
    # Sclerosis follows the narrowed compartment.
    med_share = 0.35 + 0.65 * (narrow_med >= narrow_lat)
    sclerosis_med = scl * med_share
    sclerosis_lat = scl * (1.35 - med_share)
    deform = float(np.clip(kl_sev - 3.3, 0.0, 1.2))
    cysts: list[tuple[float, float, float]] = []
    if deform > 0.2:
        for _ in range(int(rng.integers(0, 3))):
            cysts.append(
                (float(rng.uniform(-1, 1)), float(rng.uniform(3, 9)), float(rng.uniform(1.5, 3)))
            )

    extent = float(np.interp(c_sev, *_CALC_EXTENT_KNOTS))
    amp = float(np.interp(c_sev, *_CALC_AMP_KNOTS)) * gain
    amp *= float(np.exp(rng.normal(0.0, spread * 0.6))) if amp > 0 else 0.0
    # Mild disease often starts in one compartment.
    if c_sev > 0 and c_sev < 1.8 and rng.random() < 0.6:
        ext_med, ext_lat = (
            (extent * 1.5, extent * 0.3)
            if rng.random() < 0.6
            else (
                extent * 0.3,
                extent * 1.5,
            )
        )
    else:
        ext_med = extent * float(rng.uniform(0.8, 1.2))
        ext_lat = extent * float(rng.uniform(0.8, 1.2))
    men_base = float(np.clip((c_sev - 0.5) / 2.5, 0.0, 1.0)) * amp * 2.0
    meniscus = (
        men_base * float(rng.uniform(0.6, 1.2)) if c_sev > 0 else 0.0,
        men_base * float(rng.uniform(0.6, 1.2)) if c_sev > 0 else 0.0,
    )
    return _Lesions(
        jsw_med=jsw_med,
        jsw_lat=jsw_lat,
        osteophytes=osteophytes,
        spine_sharpening=spine_sharpening,
        sclerosis_med=sclerosis_med,
        sclerosis_lat=sclerosis_lat,
        sclerosis_thick=float(rng.uniform(7.0, 10.0) + 8.0 * scl),
        deform=deform,
        cysts=tuple(cysts),
        calc_extent_med=float(min(ext_med, 1.0)),
        calc_extent_lat=float(min(ext_lat, 1.0)),
        calc_amp=amp,
        calc_alpha_fem=float(rng.uniform(0.22, 0.4)),
        calc_alpha_tib=float(rng.uniform(0.62, 0.78)),
        calc_tibial_line=bool(c_sev > 1.5 and rng.random() < 0.6),
        meniscus_amp=meniscus,
        calc_dotted=bool(rng.random() < 0.35),
    )


# --------------------------------------------------------------------------------------
# Drawing one knee on the canvas
# --------------------------------------------------------------------------------------


def _shell_attenuation(
    d: np.ndarray, radius: float, cortex: np.ndarray | float, texture: np.ndarray
) -> np.ndarray:
    """Bone seen in projection: dense cortical shell around a textured trabecular core.

    Treating each point as lying on a cylinder of ``radius`` whose edge is ``d`` away, the
    chord through the shell (outer minus inner chord) peaks at the edge, which is why the
    cortex reads as a bright rim.

    Args:
        d: (H, W) distance to the bone edge in pixels (0 outside).
        radius: cylinder radius in pixels.
        cortex: cortical thickness in pixels, scalar or broadcastable (H, 1).
        texture: (H, W) multiplicative trabecular texture around 1.

    Returns:
        (H, W) attenuation.
    """
    dc = np.minimum(d, radius)
    outer = np.sqrt(dc * (2.0 * radius - dc))
    inner = np.sqrt(np.maximum(dc - cortex, 0.0) * np.maximum(2.0 * radius - cortex - dc, 0.0))
    return ((outer - inner) * 1.8 + inner * 0.36 * texture) / radius


_TEX_SIGMAS = (0.8, 1.05, 1.3)


@functools.cache
def _texture_bank(sigma: float) -> np.ndarray:
    """(2 Hc, 2 Wc) unit-variance trabecular texture for one grain size, made once per
    process from a fixed seed (so every process has the same bank).

    Band-pass noise, a little elongated along the bone axis (principal trabeculae run
    vertically); made at half resolution and enlarged.
    """
    h, w = 2 * _CANVAS_H, 2 * _CANVAS_W
    noise = np.random.default_rng([_STREAM_TEXTURE, int(sigma * 100)]).standard_normal(
        (h // 2, w // 2), dtype=np.float32
    )
    fine = cv2.GaussianBlur(noise, (0, 0), sigmaX=0.6 * sigma, sigmaY=1.1 * sigma)
    coarse = cv2.GaussianBlur(noise, (0, 0), sigmaX=1.8 * sigma, sigmaY=2.8 * sigma)
    tex = cv2.resize(fine - coarse, (w, h), interpolation=cv2.INTER_LINEAR)
    tex /= float(tex.std())
    tex.setflags(write=False)
    return tex


def _texture_tile(sigma: float, rng: np.random.Generator) -> np.ndarray:
    """(Hc, Wc) texture: a random window of the bank nearest ``sigma``, randomly flipped.

    Cutting windows from a bank instead of filtering fresh noise for every film saves a
    millisecond a film; with random offsets and flips no two films share a texture.
    """
    bank = _texture_bank(min(_TEX_SIGMAS, key=lambda v: abs(v - sigma)))
    oy = int(rng.integers(0, bank.shape[0] - _CANVAS_H + 1))
    ox = int(rng.integers(0, bank.shape[1] - _CANVAS_W + 1))
    tile = bank[oy : oy + _CANVAS_H, ox : ox + _CANVAS_W]
    return tile[:, ::-1] if rng.random() < 0.5 else tile


@functools.cache
def _noise_bank(shape: tuple[int, int]) -> np.ndarray:
    """(2 H, 2 W) unit normal noise for films of ``shape``, fixed seed, made once a process."""
    h, w = shape
    noise = np.random.default_rng([_STREAM_TEXTURE, 1, h, w]).standard_normal(
        (2 * h, 2 * w), dtype=np.float32
    )
    noise.setflags(write=False)
    return noise


def _film_noise(shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """(H, W) unit noise: a random window of the noise bank, with a random sign."""
    bank = _noise_bank(shape)
    oy = int(rng.integers(0, shape[0] + 1))
    ox = int(rng.integers(0, shape[1] + 1))
    tile = bank[oy : oy + shape[0], ox : ox + shape[1]]
    return -tile if rng.random() < 0.5 else tile


def _interp32(v: np.ndarray, xp: list[float], fp: list[float]) -> np.ndarray:
    """np.interp kept in float32 (float64 would spread through the canvas and halve speed)."""
    return np.interp(v, xp, fp).astype(np.float32)


def _add_bone(
    out: np.ndarray,
    body: np.ndarray,
    bone: np.ndarray,
    radius: float,
    cortex: np.ndarray,
    texture: np.ndarray,
    density: float,
) -> None:
    """Add one bone's attenuation to ``out`` in place, working in its bounding box only.

    Args:
        out: (H, W) float32 accumulator.
        body: (H, W) uint8 shape whose distance transform gives the bone's thickness.
        bone: (H, W) uint8 pixels that really are this bone (``body`` minus extensions).
        radius: thickness model radius, px.
        cortex: cortical thickness, scalar or (H, 1) per row.
        texture: (H, W) trabecular texture.
        density: attenuation multiplier.
    """
    bx, by, bw, bh = cv2.boundingRect(body)
    if bw == 0 or bh == 0:
        return
    h, w = body.shape
    # One pixel of background around the box, where there is canvas, so that distances
    # from the box's edge pixels are measured to real background (the transform treats
    # the image border as far away, as it must at the canvas border).
    x0, y0 = max(0, bx - 1), max(0, by - 1)
    x1, y1 = min(w, bx + bw + 1), min(h, by + bh + 1)
    d = cv2.distanceTransform(np.ascontiguousarray(body[y0:y1, x0:x1]), cv2.DIST_L2, 5)
    cortex_roi = cortex[y0:y1] if np.ndim(cortex) == 2 else cortex
    att = _shell_attenuation(d, radius, cortex_roi, texture[y0:y1, x0:x1])
    out[y0:y1, x0:x1] += (density * att) * bone[y0:y1, x0:x1]


def _superellipse_arc(t: np.ndarray, p: float, p_inner: float, inner_sign: float) -> np.ndarray:
    """Lower half of a superellipse: 1 at the centre, 0 at |t| = 1, nan outside.

    The half facing the notch (``sign(t) == inner_sign``) uses ``p_inner``: condyles are
    rounder on the notch side, which makes the notch an arch rather than a slot.
    """
    a = np.abs(t)
    pp = np.where(np.sign(t) == inner_sign, p_inner, p)
    return np.where(a <= 1.0, np.power(np.maximum(1.0 - a**pp, 0.0), 1.0 / pp), np.nan)


def _draw_knee(
    anat: _Anatomy, les: _Lesions, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Draw a right knee on the canvas.

    Returns:
        Attenuation (Hc, Wc) float32 (air 0, cortex about 1 above soft tissue) and the
        lesion mask (Hc, Wc) uint8 with MASK_BITS flags.
    """
    h, w = _CANVAS_H, _CANVAS_W
    x, y, xs = _XX, _YY, _XS
    cx, cy = _CX, _CY
    mask = np.zeros((h, w), np.uint8)

    # ---- 1-D joint surfaces over x -------------------------------------------------
    ax = (anat.half_width - anat.notch_width / 2.0) / 2.0
    ax_m, ax_l = ax * (1.0 + anat.medial_bias), ax * (1.0 - anat.medial_bias)
    xm = cx + anat.notch_width / 2.0 + ax_m
    xl = cx - anat.notch_width / 2.0 - ax_l
    t_m = (xs - xm) / ax_m
    t_l = (xs - xl) / ax_l
    in_m, in_l = np.abs(t_m) < 1.0, np.abs(t_l) < 1.0

    hwt = anat.half_width + anat.tibia_extra
    yt = np.full(w, cy, np.float32)
    yt += np.where(in_m, anat.concavity_med * (1.0 - t_m**2), 0.0)
    yt -= np.where(in_l, anat.convexity_lat * (1.0 - t_l**2), 0.0)
    spine_h = anat.spine_h + les.spine_sharpening
    spine_w = anat.spine_w / (1.0 + 0.08 * les.spine_sharpening)  # spines peak as they grow
    for sgn in (-1.0, 1.0):
        yt -= spine_h * np.exp(-(((xs - (cx + sgn * anat.spine_sep)) / spine_w) ** 2))
    # Grade 4 deformity: the worse compartment's plateau sinks and tilts.
    if les.deform > 0:
        worse_med = les.jsw_med / anat.jsw_med <= les.jsw_lat / anat.jsw_lat
        t_w, in_w = (t_m, in_m) if worse_med else (t_l, in_l)
        yt += np.where(in_w, les.deform * (4.0 * (1.0 - t_w**2) + 3.0 * t_w), 0.0)
    corner_r = 8.0
    dx = np.abs(xs - cx)
    k = dx - (hwt - corner_r)
    yt += np.where(k > 0, corner_r - np.sqrt(np.maximum(corner_r**2 - k**2, 0.0)), 0.0)
    yt = np.where(dx <= hwt, yt, np.inf).astype(np.float32)

    # Condyles: superellipses whose lowest point sits one joint-space width above the
    # plateau; deformity flattens them.
    p = anat.condyle_p + 2.0 * les.deform
    ry_m = anat.ry_med * (1.0 - 0.25 * les.deform)
    ry_l = anat.ry_lat * (1.0 - 0.25 * les.deform)
    bottom_m = float(yt[int(round(xm))]) - les.jsw_med
    bottom_l = float(yt[int(round(xl))]) - les.jsw_lat
    yc_m, yc_l = bottom_m - ry_m, bottom_l - ry_l
    p_in = 2.0 + 0.3 * (p - 2.0)
    yf_m = yc_m + ry_m * _superellipse_arc(t_m, p, p_in, -1.0)
    yf_l = yc_l + ry_l * _superellipse_arc(t_l, p, p_in, 1.0)
    yf = np.fmax(np.nan_to_num(yf_m, nan=-np.inf), np.nan_to_num(yf_l, nan=-np.inf))

    # ---- femur -------------------------------------------------------------------
    yc_x = np.where(xs > cx, yc_m, yc_l).astype(np.float32)
    y_col = y[:, :1]
    u = np.clip((y_col - (min(yc_m, yc_l) - anat.femur_flare_len)) / anat.femur_flare_len, 0, 1)
    flare = u**1.8  # metaphysis flares like a trumpet towards the condyles
    x_right = cx + anat.femur_shaft_hw + (xm + ax_m - cx - anat.femur_shaft_hw) * flare
    x_left = cx - anat.femur_shaft_hw - (cx - xl + ax_l - anat.femur_shaft_hw) * flare
    condyle_cols = (np.abs(t_m) <= 1.0) | (np.abs(t_l) <= 1.0)
    femur = ((y < yc_x) & (x > x_left) & (x < x_right)) | ((y >= yc_x) & (y < yf))
    # Intercondylar notch: an arch cut between the condyles, rising from their lowest
    # points to a rounded roof. In an AP film it is lucent but not empty (the trochlea lies
    # in front of it), so it is refilled faintly below.
    yc_avg = (yc_m + yc_l) / 2.0
    roof = yc_avg - 0.4 * (ry_m + ry_l) / 2.0
    vv = np.clip((y_col - roof) / (yc_avg - roof), 0.0, 1.0)
    arch_hw = (anat.notch_width / 2.0 + 1.0) * np.sqrt(vv)
    notch = (np.abs(x - cx) < arch_hw) & (y_col > roof)
    femur &= ~notch

    # ---- tibia and fibula --------------------------------------------------------
    ut = np.clip((y_col - (cy + 12.0)) / anat.tibia_flare_len, 0.0, 1.0)
    hw_t = anat.tibia_shaft_hw + (hwt - anat.tibia_shaft_hw) * (1.0 - ut) ** 1.6
    in_tibia_cols = np.abs(x - cx) < hw_t
    tibia = (y > yt) & in_tibia_cols

    # Fibula: the head overlaps the lateral tibial condyle, the shaft runs down beside the
    # tibia, narrowing.
    fy = cy + anat.fib_dy
    hw_t_at_head = float(np.interp(fy, y_col[:, 0], hw_t[:, 0]))
    fx = cx - hw_t_at_head - anat.fib_rx * (0.1 + anat.fib_dx)
    fr0 = max(0, int(fy - anat.fib_ry) - 1)  # nothing of the fibula lies above this row
    fxx, fyy, fy_col = x[fr0:], y[fr0:], y_col[fr0:]
    fib_head = ((fxx - fx) / anat.fib_rx) ** 2 + ((fyy - fy) / anat.fib_ry) ** 2 < 1.0
    fib_axis = _interp32(fy_col, [fy, fy + 90.0], [fx - 1.0, cx - anat.tibia_shaft_hw - 13.0])
    fib_hw = _interp32(fy_col, [fy, fy + 45.0], [0.75 * anat.fib_rx, anat.fib_shaft_hw])
    fibula = np.zeros((h, w), bool)
    fibula[fr0:] = fib_head | ((fyy > fy) & (np.abs(fxx - fib_axis) < fib_hw))

    # ---- osteophytes: spurs from the articular margins -----------------------------
    osteo_f = np.zeros((h, w), np.uint8)
    osteo_t = np.zeros((h, w), np.uint8)
    for site, length in les.osteophytes:
        target = osteo_f if site.startswith("fem") else osteo_t
        _draw_osteophyte(target, site, length, xm, xl, ax_m, ax_l, yf, yt, hwt, rng)
    femur_u8 = femur.view(np.uint8) | osteo_f
    tibia_u8 = tibia.view(np.uint8) | osteo_t
    if les.osteophytes:
        mask[((osteo_f | osteo_t) > 0) & ~femur & ~tibia] |= MASK_BITS["osteophytes"]

    # ---- textured bone -----------------------------------------------------------
    # Trabecular texture: band-pass noise, a little elongated along the bone axis (the
    # principal trabeculae run vertically), fading out in the shafts, which are mostly
    # cortical tube (and get replicated beyond the canvas).
    tex = _texture_tile(anat.tex_sigma, rng)
    fade = _interp32(y_col, [0.0, cy - 120.0, cy + 110.0, float(h)], [0.2, 1.0, 1.0, 0.2])
    tex = 1.0 + (0.24 * fade) * tex

    cortex_f = _interp32(
        y_col,
        [0.0, min(yc_m, yc_l) - anat.femur_flare_len, cy],
        [anat.cortex_shaft, anat.cortex_shaft, anat.cortex_epi],
    )
    cortex_t = _interp32(
        y_col,
        [cy, cy + anat.tibia_flare_len, float(h)],
        [anat.cortex_epi, anat.cortex_shaft, anat.cortex_shaft],
    )
    # Thickness comes from the distance to the bone's *sides*: an articular surface is a
    # plate seen end-on, with full bone depth right beneath it, so for the distance
    # transform the condyles are extended downwards and the plateau upwards.
    ext = 40.0
    femur_body = femur_u8 | ((y >= yc_x) & (y < yf + ext) & condyle_cols & ~notch).view(np.uint8)
    tibia_body = tibia_u8 | ((y > yt - ext) & in_tibia_cols).view(np.uint8)
    bone = np.zeros((h, w), np.float32)
    _add_bone(bone, femur_body, femur_u8, 34.0, cortex_f, tex, anat.bone_density)
    _add_bone(bone, tibia_body, tibia_u8, 34.0, cortex_t, tex, anat.bone_density)
    fib_u8 = fibula.view(np.uint8)
    _add_bone(bone, fib_u8, fib_u8, 12.0, np.float32(1.6), tex, 0.7 * anat.bone_density)
    refill = np.clip((yc_avg + 4.0 - y_col) / 16.0, 0.0, 1.0)
    bone += (0.2 * anat.bone_density) * notch * refill

    # Patella: a faint oval over the distal femur (drawn in its bounding box only).
    py0 = max(0, int(cy + anat.pat_dy - anat.pat_ry) - 1)
    py1 = min(h, int(cy + anat.pat_dy + anat.pat_ry) + 2)
    px0 = max(0, int(cx + anat.pat_dx - anat.pat_rx) - 1)
    px1 = min(w, int(cx + anat.pat_dx + anat.pat_rx) + 2)
    pxx, pyy = x[py0:py1, px0:px1], y[py0:py1, px0:px1]
    pd_ = ((pxx - cx - anat.pat_dx) / anat.pat_rx) ** 2 + (
        (pyy - cy - anat.pat_dy) / anat.pat_ry
    ) ** 2
    pat = np.sqrt(np.maximum(1.0 - pd_, 0.0))
    # Chord through an ellipsoid plus a thin cortical rim.
    bone[py0:py1, px0:px1] += anat.pat_density * (pat + 0.8 * (pat > 0) * (1.0 - pat) ** 6)

    # ---- soft tissue: a leg-shaped cylinder, a little wider at the thigh ---------------
    # The leg stays inside the canvas, so the canvas edge columns are air and replicating
    # them beyond the canvas continues air, not a block of tissue.
    ws = anat.soft_hw + 10.0 * (1.0 - y_col / h)
    soft = 0.4 * np.sqrt(np.maximum(1.0 - ((x - cx - anat.soft_dx) / ws) ** 2, 0.0))

    att = soft + bone

    # ---- lesions around the joint line (row window) ------------------------------
    win = slice(_WIN_R0, _WIN_R1)
    yw = y[win]
    bone_w = (femur_u8[win] | tibia_u8[win]).astype(bool)
    att_w = att[win]
    mask_w = mask[win]

    # Subchondral plates: the thin dense line along each articular surface.
    plate_t = anat.cortex_epi * 0.8
    plate = ((yw > yt[None, :]) & (yw < yt[None, :] + plate_t)) | (
        (yw < yf[None, :]) & (yw > yf[None, :] - plate_t)
    )
    att_w += (0.45 * anat.bone_density) * (plate & bone_w)

    # Physeal scars: faint wavy bright lines across both metaphyses, a normal finding
    # that gives the model a horizontal bright line that is *not* disease.
    wave = np.sin(xs * float(rng.uniform(0.03, 0.06)) + float(rng.uniform(0, 6.28)))
    for y_scar, bone_u8 in (
        ((yc_m + yc_l) / 2.0 - float(rng.uniform(6.0, 16.0)), femur_u8),
        (cy + float(rng.uniform(20.0, 30.0)), tibia_u8),
    ):
        r0 = max(0, int(y_scar) - 9 - _WIN_R0)
        r1 = min(att_w.shape[0], int(y_scar) + 10 - _WIN_R0)
        line = np.exp(-0.5 * ((yw[r0:r1] - (y_scar + 3.0 * wave)[None, :]) / 1.3) ** 2)
        att_w[r0:r1] += 0.07 * line * bone_u8[_WIN_R0 + r0 : _WIN_R0 + r1]

    # Joint space: between condyle and plateau in each compartment's central part.
    gap_cols = ((np.abs(t_m) < 0.8) | (np.abs(t_l) < 0.8)) & np.isfinite(yt)
    joint_space = (yw > yf[None, :]) & (yw < yt[None, :]) & gap_cols[None, :] & ~bone_w
    mask_w[joint_space] |= MASK_BITS["joint_space"]

    # Subchondral sclerosis: a bright band fading away from each articular surface.
    for amp_s, t_c in ((les.sclerosis_med, t_m), (les.sclerosis_lat, t_l)):
        if amp_s <= 0.005:
            continue
        colw = np.clip(1.0 - np.abs(t_c) ** 4, 0.0, 1.0)[None, :]
        thick = les.sclerosis_thick
        # Flat-topped with a soft lower edge: dense right under the plate, fading out.
        below = np.clip(1.4 - (yw - yt[None, :]) / thick, 0.0, 1.0) * (yw > yt[None, :])
        above = np.clip(1.4 - (yf[None, :] - yw) / thick, 0.0, 1.0) * (yw < yf[None, :])
        band = (below + above) * colw * bone_w
        att_w += amp_s * band
        if amp_s >= 0.03:  # fainter bands are within normal bone density
            mask_w[band > 0.5] |= MASK_BITS["sclerosis"]
    for cu, cv_, cr in les.cysts:
        worse_med = les.sclerosis_med >= les.sclerosis_lat
        x0 = xm + 0.6 * cu * ax_m if worse_med else xl + 0.6 * cu * ax_l
        y0 = float(yt[int(np.clip(round(x0), 0, w - 1))]) + cv_
        if np.isfinite(y0):
            disc = ((x[win] - x0) ** 2 + (yw - y0) ** 2) < cr**2
            att_w -= 0.18 * disc

    # Chondrocalcinosis: thin lines parallel to the articular surface inside the gap
    # (hyaline cartilage) and fuzzy meniscal triangles at the compartment margins.
    calc = np.zeros_like(att_w)
    if les.calc_amp > 0:
        sigma = 0.75
        gap = np.where(np.isfinite(yf) & np.isfinite(yt), yt - yf, 0.0)
        for ext, t_c, (xc_, a_c, side) in (
            (les.calc_extent_med, t_m, (xm, ax_m, 1.0)),
            (les.calc_extent_lat, t_l, (xl, ax_l, -1.0)),
        ):
            cols = _segments_along(t_c, ext, les.calc_dotted, rng)
            if cols.any():
                alphas = [les.calc_alpha_fem] + (
                    [les.calc_alpha_tib] if les.calc_tibial_line else []
                )
                # Draw only the block the lines can reach: their columns, and rows
                # between the surfaces there.
                c_idx = np.flatnonzero(cols)
                c0, c1 = int(c_idx[0]), int(c_idx[-1]) + 1
                for alpha in alphas:
                    y_line = (yf + alpha * gap)[c0:c1]
                    r0 = max(0, int(np.floor(y_line.min())) - 4 - _WIN_R0)
                    r1 = min(calc.shape[0], int(np.ceil(y_line.max())) + 5 - _WIN_R0)
                    prof = np.exp(-0.5 * ((yw[r0:r1, c0:c1] - y_line[None, :]) / sigma) ** 2)
                    calc[r0:r1, c0:c1] += (les.calc_amp * cols[None, c0:c1]) * prof
            men_amp = les.meniscus_amp[0 if side > 0 else 1]
            if men_amp > 0:
                _add_meniscus(calc, men_amp, xc_, a_c, side, yf, yt, les.calc_dotted, rng)
        att_w += calc
        mask_w[calc > 0.04] |= MASK_BITS["calcifications"]

    return att.astype(np.float32, copy=False), mask


def _segments_along(
    t: np.ndarray, extent: float, dotted: bool, rng: np.random.Generator
) -> np.ndarray:
    """(W,) 0/1 weights marking which columns of a compartment carry a deposit line.

    Smooth 1-D noise thresholded at its (1 - extent) quantile gives a few segments covering
    about ``extent`` of the compartment; ``dotted`` breaks them into dots.
    """
    inside = np.abs(t) < 0.92
    out = np.zeros(t.shape, np.float32)
    n_in = int(inside.sum())
    if extent <= 0 or n_in == 0:
        return out
    raw = rng.standard_normal(n_in + 16).astype(np.float32)
    smooth = np.convolve(raw, np.hanning(15).astype(np.float32), mode="same")[8 : 8 + n_in]
    thr = np.quantile(smooth, 1.0 - min(extent, 1.0))
    seg = (smooth >= thr).astype(np.float32)
    if dotted:
        # Punctate deposits: irregular dots of 1-3 px along the line.
        dots = np.convolve(rng.random(n_in) < 0.3, np.ones(2), mode="same") > 0
        seg *= dots
    out[inside] = seg
    return out


def _add_meniscus(
    calc: np.ndarray,
    amp: float,
    xc: float,
    a: float,
    side: float,
    yf: np.ndarray,
    yt: np.ndarray,
    dotted: bool,
    rng: np.random.Generator,
) -> None:
    """Add a fuzzy meniscal triangle at the outer margin of a compartment, in place.

    Args:
        calc: (window rows, W) calcification density of the joint row window.
        amp: density of the triangle.
        xc, a: compartment centre and half-width (canvas px).
        side: +1 when the outer margin is at larger x, -1 otherwise.
        yf, yt: (W,) femoral and tibial surface rows.
        dotted: punctate rather than solid.
        rng: random generator.
    """
    x_out = xc + side * 0.9 * a
    x_in = xc + side * (0.9 - float(rng.uniform(0.28, 0.4))) * a
    xo = int(np.clip(round(x_out), 0, _CANVAS_W - 1))
    xi = int(np.clip(round(x_in), 0, _CANVAS_W - 1))
    if not (np.isfinite(yf[xo]) and np.isfinite(yt[xo]) and np.isfinite(yt[xi])):
        return
    top, bot = yf[xo] + 1.0, yt[xo] - 1.0
    mid = 0.5 * (yf[xi] + yt[xi]) if np.isfinite(yf[xi]) else 0.5 * (top + bot)
    if bot - top < 1.0:
        return
    pts = np.array([[x_out, top], [x_out, bot], [x_in, mid]]) - [0.0, _WIN_R0]
    # Work in the triangle's box plus room for the blur.
    pad = 5
    bx0 = max(0, int(np.floor(pts[:, 0].min())) - pad)
    by0 = max(0, int(np.floor(pts[:, 1].min())) - pad)
    bx1 = min(calc.shape[1], int(np.ceil(pts[:, 0].max())) + pad + 1)
    by1 = min(calc.shape[0], int(np.ceil(pts[:, 1].max())) + pad + 1)
    if bx1 <= bx0 or by1 <= by0:
        return
    img = np.zeros((by1 - by0, bx1 - bx0), np.float32)
    local = np.round((pts - [bx0, by0]) * 16).astype(np.int32)
    cv2.fillConvexPoly(img, local, 1.0, cv2.LINE_AA, shift=4)
    if dotted:
        img *= (rng.random(img.shape) < 0.25) * np.float32(1.6)
    calc[by0:by1, bx0:bx1] += amp * cv2.GaussianBlur(img, (0, 0), 1.1)


def _draw_osteophyte(
    osteo: np.ndarray,
    site: str,
    length: float,
    xm: float,
    xl: float,
    ax_m: float,
    ax_l: float,
    yf: np.ndarray,
    yt: np.ndarray,
    hwt: float,
    rng: np.random.Generator,
) -> None:
    """Fill one marginal spur into ``osteo`` in place.

    A spur grows from the joint margin: its base runs from the articular surface round the
    corner onto the side of the bone, and its tip points outwards and towards the joint
    line (down for the femur, up for the tibia), like marginal lipping.
    """
    side = 1.0 if site.endswith("med") else -1.0

    def at(xq: float, surface: np.ndarray) -> float:
        return float(surface[int(np.clip(round(xq), 0, _CANVAS_W - 1))])

    if site.startswith("fem"):
        xc_, a = (xm, ax_m) if side > 0 else (xl, ax_l)
        x1, x_corner = xc_ + side * 0.8 * a, xc_ + side * 0.97 * a
        y1, y_corner = at(x1, yf), at(x_corner, yf)
        p2 = [xc_ + side * 1.01 * a, y_corner - 7.0 - 0.5 * length]
        direction = np.array([side, 0.4])
    else:
        x1, x_corner = _CX + side * (hwt - 10.0), _CX + side * (hwt - 1.5)
        y1, y_corner = at(x1, yt), at(x_corner, yt)
        p2 = [_CX + side * (hwt + 0.5), y_corner + 7.0 + 0.5 * length]
        direction = np.array([side, -0.4])
    if not (np.isfinite(y1) and np.isfinite(y_corner)):
        return
    direction /= np.linalg.norm(direction)
    corner = np.array([x_corner, y_corner])
    tip = corner + direction * length + rng.normal(0.0, 0.5, size=2)
    pts = np.array([[x1, y1], tip, p2, corner - direction * 3.0])
    cv2.fillPoly(osteo, [np.round(pts * 16).astype(np.int32)], 1, cv2.LINE_8, shift=4)


# --------------------------------------------------------------------------------------
# Film: placement and nuisance
# --------------------------------------------------------------------------------------


def render_film(
    spec: PhantomSpec, row: Mapping[str, Any]
) -> tuple[np.ndarray, np.ndarray, tuple[int, int, int, int]]:
    """Draw one film, deterministically from ``(spec.seed, row['film_index'])``.

    Args:
        spec: the phantom.
        row: one row of :func:`phantom_labels` (a Series or any mapping with its columns).

    Returns:
        ``film`` (H, W) uint8, ``mask`` (H, W) uint8 with MASK_BITS flags, and the knee
        box ``(x0, y0, x1, y1)`` in film pixels (x1, y1 exclusive), all at ``spec.film_size``.
    """
    rng = np.random.default_rng([spec.seed, _STREAM_FILM, int(row["film_index"])])
    anat = _patient_anatomy(spec.seed, int(row["patient_index"]))
    les = _film_lesions(anat, row, spec.effective_difficulty, rng)
    att, canvas_mask = _draw_knee(anat, les, rng)
    return _place_and_expose(spec, row, att, canvas_mask, rng)


#: The fields of `_Lesions` that draw each pathology's signs.
_SIGN_FIELDS: dict[str, tuple[str, ...]] = {
    "KL": (
        "jsw_med",
        "jsw_lat",
        "osteophytes",
        "spine_sharpening",
        "sclerosis_med",
        "sclerosis_lat",
        "sclerosis_thick",
        "deform",
        "cysts",
    ),
    "CPPD": (
        "calc_extent_med",
        "calc_extent_lat",
        "calc_amp",
        "calc_alpha_fem",
        "calc_alpha_tib",
        "calc_tibial_line",
        "meniscus_amp",
        "calc_dotted",
    ),
}
#: Highest grade of each scale.


def render_variant(
    spec: PhantomSpec, row: Mapping[str, Any], grades: Mapping[str, int]
) -> tuple[np.ndarray, np.ndarray, tuple[int, int, int, int]]:
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
        if task not in _SIGN_FIELDS:
            raise ValueError(f"task must be one of {sorted(_SIGN_FIELDS)}, not {task!r}")
        if not 0 <= grade <= TOP_GRADE[task]:
            raise ValueError(f"{task} grade must be 0..{TOP_GRADE[task]}, not {grade}")
    seed = [spec.seed, _STREAM_FILM, int(row["film_index"])]
    rng = np.random.default_rng(seed)
    anat = _patient_anatomy(spec.seed, int(row["patient_index"]))
    diff = spec.effective_difficulty
    les = _film_lesions(anat, row, diff, rng)
    # Drawing consumes the film's stream; the original film's placement and exposure draws
    # follow it, so the original is drawn (and dropped) to reach that point of the stream.
    draw_rng = copy.deepcopy(rng)
    _draw_knee(anat, les, rng)
    # The redrawn signs take their per-sign scatter from the same stream at every grade.
    severities: dict[str, float] = {}
    for task, grade in grades.items():
        severities.update(_severity_at(task, grade, row))
    redrawn = _film_lesions(anat, {**row, **severities}, diff, np.random.default_rng(seed))
    fields = [name for task in grades for name in _SIGN_FIELDS[task]]
    les = dataclasses.replace(les, **{name: getattr(redrawn, name) for name in fields})
    att, canvas_mask = _draw_knee(anat, les, draw_rng)
    return _place_and_expose(spec, row, att, canvas_mask, rng)


def _severity_at(task: str, grade: int, row: Mapping[str, Any]) -> dict[str, float]:
    """Label-row severities at the centre of ``grade``'s band (narrowing kept on its side)."""
    if task == "CPPD":
        return {"cppd_severity": float(grade)}  # 0 draws no deposits; 1..3 sit in [0.35, 3.5]
    worst = float(np.interp(float(grade), *_NARROW_KNOTS))
    medial = row["narrow_side"] == "medial"
    return {
        "kl_severity": float(grade),
        "narrow_medial": worst if medial else 0.2 * worst,
        "narrow_lateral": 0.2 * worst if medial else worst,
    }


def _place_and_expose(
    spec: PhantomSpec,
    row: Mapping[str, Any],
    att: np.ndarray,
    canvas_mask: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, tuple[int, int, int, int]]:
    """Place a drawn knee on the film, expose it and add the film's artefacts."""
    film_h, film_w = spec.film_size
    diff = spec.effective_difficulty

    # Placement: scale so the knee box covers ~40-62 % of the film's shorter side.
    short = min(film_h, film_w)
    scale = float(rng.uniform(0.40, 0.62)) * short / _BOX_SIDE
    theta = float(np.clip(rng.normal(0.0, 2.5 * diff), -8.0, 8.0)) * np.pi / 180.0
    half_ext = 0.5 * _BOX_SIDE * scale * (abs(np.cos(theta)) + abs(np.sin(theta)))
    pad = 3.0
    cxf = float(rng.uniform(half_ext + pad, film_w - half_ext - pad))
    cyf = float(rng.uniform(half_ext + pad, film_h - half_ext - pad))
    cos_s, sin_s = scale * np.cos(theta), scale * np.sin(theta)
    flip = -1.0 if row["side"] == "L" else 1.0  # left knees are mirror images
    # film = R * S * F * (canvas - centre) + film centre
    m = np.array(
        [
            [cos_s * flip, -sin_s, 0.0],
            [sin_s * flip, cos_s, 0.0],
        ]
    )
    m[:, 2] = [cxf, cyf] - m[:, :2] @ np.array([_CX, _CY])
    film_att = cv2.warpAffine(
        att, m, (film_w, film_h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
    )
    mask = cv2.warpAffine(
        canvas_mask, m, (film_w, film_h), flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_CONSTANT
    )
    half = _BOX_SIDE / 2.0
    corners = np.array(
        [
            [_CX - half, _CY - half],
            [_CX + half, _CY - half],
            [_CX - half, _CY + half],
            [_CX + half, _CY + half],
        ]
    )
    fc = corners @ m[:, :2].T + m[:, 2]
    box = (
        int(max(0, np.floor(fc[:, 0].min()))),
        int(max(0, np.floor(fc[:, 1].min()))),
        int(min(film_w, np.ceil(fc[:, 0].max()))),
        int(min(film_h, np.ceil(fc[:, 1].max()))),
    )

    # Exposure: a heel-effect gradient, then a saturating film response and a window.
    ramp = np.linspace(-1.0, 1.0, film_h, dtype=np.float32)[:, None]
    film_att *= 1.0 + float(rng.uniform(-0.08, 0.08)) * diff * ramp
    blur = float(rng.uniform(0.4, 0.6 + 0.5 * diff))
    film_att = cv2.GaussianBlur(film_att, (0, 0), blur)
    k = float(rng.uniform(1.1, 1.5))
    img = 1.0 - np.exp(-k * film_att)
    lo = float(rng.uniform(-0.06, 0.08))
    hi = float(rng.uniform(0.9, 1.02))
    img = (img - lo) / (hi - lo)
    gamma = float(np.exp(rng.normal(0.0, 0.12 * diff)))
    img = np.power(np.clip(img, 0.0, 1.0), gamma)

    if rng.random() < 0.25:
        _collimate(img, box, rng)
    if rng.random() < 0.5:
        _marker(img, box, str(row["side"]), rng)
    sigma_n = float(rng.uniform(0.008, 0.02)) * diff
    img += sigma_n * _film_noise(img.shape, rng)
    film = np.clip(img * 255.0 + 0.5, 0, 255).astype(np.uint8)
    return film, mask, box


def _collimate(img: np.ndarray, box: tuple[int, int, int, int], rng: np.random.Generator) -> None:
    """Blank a band beyond a straight edge on one side of the film (unexposed area)."""
    h, w = img.shape
    x0, y0, x1, y1 = box
    side = int(rng.integers(4))
    room = [x0, y0, w - x1, h - y1][side]
    if room < 24:
        return
    # Real collimation leaves a band, not a sliver; it stops short of the knee.
    depth = float(rng.uniform(16, room - 6))
    slope = float(rng.uniform(-0.03, 0.03))
    value = float(rng.uniform(0.75, 0.95))
    if side in (0, 2):  # left / right, edge is a near-vertical line
        rows = np.arange(h, dtype=np.float32)[:, None]
        cols = np.arange(w, dtype=np.float32)[None, :]
        edge = depth + slope * (rows - h / 2)
        region = cols < edge if side == 0 else cols > (w - 1 - edge)
    else:
        rows = np.arange(h, dtype=np.float32)[:, None]
        cols = np.arange(w, dtype=np.float32)[None, :]
        edge = depth + slope * (cols - w / 2)
        region = rows < edge if side == 1 else rows > (h - 1 - edge)
    img[region] = value


def _marker(
    img: np.ndarray, box: tuple[int, int, int, int], side: str, rng: np.random.Generator
) -> None:
    """Burn a small side marker ('L'/'R' on a bright tag) into a corner clear of the knee."""
    h, w = img.shape
    size = max(10, int(rng.uniform(0.045, 0.07) * min(h, w)))
    x0, y0, x1, y1 = box
    corners = [(2, 2), (w - size - 2, 2), (2, h - size - 2), (w - size - 2, h - size - 2)]
    for i in rng.permutation(4):
        mx, my = corners[i]
        if mx + size <= x0 or mx >= x1 or my + size <= y0 or my >= y1:
            tag = np.full((size, size), 247, np.uint8)
            cv2.putText(
                tag, side, (3, size - 4), cv2.FONT_HERSHEY_SIMPLEX, size / 30.0, 40, 2, cv2.LINE_AA
            )
            img[my : my + size, mx : mx + size] = tag / np.float32(255.0)
            return


# --------------------------------------------------------------------------------------
# Cache
# --------------------------------------------------------------------------------------

_CACHE_FILES = ("images.npy", "masks.npy", "meta.csv")

# Per-process state for pool workers, set once by _init_worker (spawn-safe: everything
# arrives pickled through initargs, nothing relies on inherited globals).
_WORKER: dict[str, Any] = {}


def _init_worker(spec: PhantomSpec, labels: pd.DataFrame, image_size: int, detector: str) -> None:
    cv2.setNumThreads(1)  # one process per core; cv2's own threads would oversubscribe
    _WORKER.update(spec=spec, labels=labels, image_size=image_size, detector=detector)


def _render_range(bounds: tuple[int, int]) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """Render films [start, stop): crops (n, S, S), mask crops (n, S, S), boxes (n, 8)."""
    start, stop = bounds
    spec: PhantomSpec = _WORKER["spec"]
    labels: pd.DataFrame = _WORKER["labels"]
    size: int = _WORKER["image_size"]
    n = stop - start
    images = np.empty((n, size, size), np.uint8)
    masks = np.empty((n, size, size), np.uint8)
    boxes = np.empty((n, 8), np.int64)
    records = labels.iloc[start:stop].to_dict("records")
    for j, row in enumerate(records):
        film, mask, true_box = render_film(spec, row)
        det_box = detect_knee_box(film) if _WORKER["detector"] == "classical" else true_box
        images[j] = crop_and_resize(film, det_box, size)
        masks[j] = crop_and_resize(mask, det_box, size, nearest=True)
        boxes[j, :4] = true_box
        boxes[j, 4:] = det_box
    return start, images, masks, boxes


@functools.cache
def _code_fingerprint() -> str:
    """Short hash of the code that decides a cache's bytes (this module and the detector)."""
    digest = hashlib.sha256()
    for module in (sys.modules[__name__], sys.modules[detect_knee_box.__module__]):
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()[:16]


def _manifest(spec: PhantomSpec, image_size: int, detector: str) -> dict[str, Any]:
    return {
        "kind": "softgrade-phantom-cache",
        "phantom_version": PHANTOM_VERSION,
        "code_fingerprint": _code_fingerprint(),
        "spec": spec.to_dict(),
        "image_size": image_size,
        "detector": detector,
        "files": list(_CACHE_FILES),
    }


def is_complete_cache(out_dir: Path, spec: PhantomSpec, image_size: int, detector: str) -> bool:
    """Whether ``out_dir`` holds a finished cache of exactly this spec, size and detector."""
    path = Path(out_dir) / "manifest.json"
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    want = _manifest(spec, image_size, detector)
    if not found.get("complete") or {k: found.get(k) for k in want} != want:
        return False
    return all((Path(out_dir) / f).is_file() for f in _CACHE_FILES)


def build_phantom_cache(
    spec: PhantomSpec,
    image_size: int,
    out_dir: Path,
    *,
    workers: int = 2,
    detector: str = "classical",
) -> Path:
    """Render the phantom, crop every film to its knee and cache the crops.

    Writes into ``out_dir``: ``images.npy`` (N, S, S) uint8, ``masks.npy`` (N, S, S) uint8
    MASK_BITS flags (cropped the same way, nearest-neighbour), ``meta.csv`` (the
    :func:`phantom_labels` columns plus ``true_x0..true_y1``, ``det_x0..det_y1`` in film
    pixels and ``box_iou``), and last ``manifest.json`` with ``"complete": true``. The
    manifest is removed before anything else is written and written atomically at the end,
    so an interrupted build never looks complete. Output depends only on (spec, image_size,
    detector), not on ``workers``.

    Args:
        spec: the phantom.
        image_size: side S of the cached crops in pixels.
        out_dir: cache folder (created if missing).
        workers: processes to render with (spawned); 1 renders in this process.
        detector: 'classical' (crop to :func:`engine.detect.detect_knee_box`) or 'truth'
            (crop to the true knee box).

    Returns:
        ``out_dir``.
    """
    if not isinstance(image_size, int) or not 16 <= image_size <= 1024:
        raise ValueError(f"{image_size=} must be an int in [16, 1024]")
    if detector not in ("classical", "truth"):
        raise ValueError(f"{detector=} must be 'classical' or 'truth'")
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"{workers=} must be a positive int")
    out_dir = Path(out_dir)
    if is_complete_cache(out_dir, spec, image_size, detector):
        logger.info("phantom cache %s is complete; reusing it", out_dir)
        return out_dir

    out_dir.mkdir(parents=True, exist_ok=True)
    manifest_path = out_dir / "manifest.json"
    manifest_path.unlink(missing_ok=True)
    labels = phantom_labels(spec)
    n = len(labels)
    logger.info("rendering %d phantom films at %d px with %d worker(s)", n, image_size, workers)

    tmp = {name: out_dir / f"{name}.partial" for name in _CACHE_FILES}
    images = np.lib.format.open_memmap(
        tmp["images.npy"], "w+", np.uint8, (n, image_size, image_size)
    )
    masks = np.lib.format.open_memmap(tmp["masks.npy"], "w+", np.uint8, (n, image_size, image_size))
    boxes = np.empty((n, 8), np.int64)
    # Chunks small enough to balance two workers, large enough to amortise pickling.
    chunk = max(1, min(64, -(-n // (workers * 8))))
    ranges = [(s, min(n, s + chunk)) for s in range(0, n, chunk)]
    initargs = (spec, labels, image_size, detector)
    if workers > 1 and not _spawn_can_import_main():
        logger.warning("__main__ is not importable (interactive/stdin); rendering in-process")
        workers = 1
    if workers == 1:
        saved = dict(_WORKER)
        _init_worker(*initargs)
        try:
            results = map(_render_range, ranges)
            _store_results(results, images, masks, boxes)
        finally:
            _WORKER.clear()
            _WORKER.update(saved)
    else:
        ctx = mp.get_context("spawn")
        with ctx.Pool(workers, initializer=_init_worker, initargs=initargs) as pool:
            _store_results(pool.imap_unordered(_render_range, ranges), images, masks, boxes)
    images.flush()
    masks.flush()
    del images, masks

    meta = labels.copy()
    for j, name in enumerate(
        ["true_x0", "true_y0", "true_x1", "true_y1", "det_x0", "det_y0", "det_x1", "det_y1"]
    ):
        meta[name] = boxes[:, j]
    meta["box_iou"] = [round(box_iou(b[:4], b[4:]), 4) for b in boxes]
    meta.to_csv(tmp["meta.csv"], index=False)

    for name, path in tmp.items():
        os.replace(path, out_dir / name)
    manifest = _manifest(spec, image_size, detector) | {"n_images": n, "complete": True}
    partial = out_dir / "manifest.json.partial"
    partial.write_text(json.dumps(manifest, indent=2, sort_keys=True))
    os.replace(partial, manifest_path)  # last: only now does the cache look complete
    logger.info("phantom cache written to %s (mean box IoU %.3f)", out_dir, meta["box_iou"].mean())
    return out_dir


def _spawn_can_import_main() -> bool:
    """Whether spawned workers can re-import ``__main__`` (not so for ``python -`` < file),
    where a pool would otherwise respawn crashing workers forever."""
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    return main_file is None or os.path.exists(main_file)


def _store_results(results: Any, images: np.ndarray, masks: np.ndarray, boxes: np.ndarray) -> None:
    for start, imgs, msks, bxs in results:
        images[start : start + len(imgs)] = imgs
        masks[start : start + len(msks)] = msks
        boxes[start : start + len(bxs)] = bxs


__all__ = [
    "CPPD_TOTALS",
    "JOINT_COUNTS",
    "MASK_BITS",
    "PhantomSpec",
    "build_phantom_cache",
    "cppd_only_counts",
    "is_complete_cache",
    "joint_cell_counts",
    "phantom_labels",
    "render_film",
]
