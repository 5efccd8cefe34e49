"""Which films the phantom has, decided without drawing: counts, patients, grades, severities.

Counts: joint (KL, CPPD) cells follow the reference contingency table and CPPD-only films
follow the paper's CPPD totals minus that table's column sums, both scaled to the requested
sizes by largest remainder so every total is exact.

Patients: films are grouped into patients within each annotation group (joint or
CPPD-only), so both knees of a patient are always annotated the same way. About 10 % of
patients have a single knee. Knees are paired after sorting on a noisy overall severity, so
a patient's two knees tend to have similar (but not equal) grades, as in real cohorts.

Difficulty: each grade is drawn from a continuous severity inside a band around it (every
sign then gets its own random scatter when drawn), and annotation noise moves recorded grades
to neighbours, so adjacent grades are genuinely confusable.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.phantom.lesions import NARROW_KNOTS
from engine.phantom.spec import STREAM_LABELS, PhantomSpec

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
    rng = np.random.default_rng([spec.seed, STREAM_LABELS])
    kl_true, cppd_true, joint = _true_grades(spec.n_images, spec.n_joint)
    film_src, sides, patient_index = _patients_and_sides(kl_true, cppd_true, joint, rng)
    kl_true, cppd_true, joint = kl_true[film_src], cppd_true[film_src], joint[film_src]
    n = spec.n_images

    diff = spec.effective_difficulty
    half_band = 0.5 * diff
    kl_sev = _severity(kl_true, half_band, 0.0, N_KL - 0.5, rng)
    cppd_sev = _severity(cppd_true, half_band, 0.35, N_CPPD - 0.5, rng)
    cppd_sev = np.where(cppd_true == 0, 0.0, cppd_sev)  # CPPD 0 means no deposits at all
    narrow_medial, narrow_lateral, medial_worst = _narrowing(kl_sev, diff, rng)

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


def _true_grades(n_images: int, n_joint: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """True KL and CPPD grades of every film in exact cell counts, joint films first.

    CPPD-only films still have a knee, whose (unrecorded) KL is drawn from P(KL | CPPD) of
    the joint table, again by largest remainder per CPPD column.

    Returns:
        ``kl_true``, ``cppd_true`` (int64) and ``joint`` (bool, jointly annotated), (N,) each.
    """
    kl_list: list[np.ndarray] = []
    cppd_list: list[np.ndarray] = []
    cells = joint_cell_counts(n_joint)
    for k in range(N_KL):
        for c in range(N_CPPD):
            kl_list.append(np.full(cells[k, c], k))
            cppd_list.append(np.full(cells[k, c], c))
    only = cppd_only_counts(n_images - n_joint)
    for c in range(N_CPPD):
        kl_given_c = _largest_remainder(JOINT_COUNTS[:, c], int(only[c]))
        for k in range(N_KL):
            kl_list.append(np.full(kl_given_c[k], k))
            cppd_list.append(np.full(kl_given_c[k], c))
    kl_true = np.concatenate(kl_list).astype(np.int64)
    cppd_true = np.concatenate(cppd_list).astype(np.int64)
    joint = np.arange(n_images) < n_joint
    return kl_true, cppd_true, joint


def _patients_and_sides(
    kl_true: np.ndarray, cppd_true: np.ndarray, joint: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, list[str], list[int]]:
    """Group films into patients within each annotation group and give each knee a side.

    Sorting on a noisy severity before pairing makes a patient's two knees similar without
    making them identical. Patients are then shuffled, and films renumbered patient by
    patient.

    Returns:
        For each new film position: the index of the film it takes (int64 (N,)), its side
        ('L' | 'R') and its patient index.
    """
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
    return np.asarray(film_src, dtype=np.int64), sides, patient_index


def _narrowing(
    kl_sev: np.ndarray, diff: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Joint-space narrowing per compartment (fraction of the normal width lost).

    Narrowing is usually worse in one compartment, most often the medial one.

    Returns:
        ``narrow_medial``, ``narrow_lateral`` and ``medial_worst`` (bool), (N,) each.
    """
    n = len(kl_sev)
    base_narrow = np.interp(kl_sev, *NARROW_KNOTS)
    scatter = np.exp(rng.normal(0.0, 0.3 * diff, size=n))
    worst = np.clip(base_narrow * scatter, 0.0, 0.9)
    other = base_narrow * rng.uniform(0.0, 0.4, size=n)
    medial_worst = rng.random(n) < 0.75
    narrow_medial = np.where(medial_worst, worst, other)
    narrow_lateral = np.where(medial_worst, other, worst)
    return narrow_medial, narrow_lateral, medial_worst
