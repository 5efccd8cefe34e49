"""The signs drawn on one film: a label row's severities turned into concrete lesions, and
the mask layers that mark them on the film.

Each sign follows its own severity -> size curve (the knots below) with per-sign random
scatter, so a late grade g can look like an early grade g + 1. Signs get fainter as
``PhantomSpec.difficulty`` rises.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.phantom.anatomy import Anatomy

#: Lesion mask layers: each pixel of a film's mask holds these flags (OR-ed).
MASK_BITS: dict[str, int] = {
    "joint_space": 1,
    "osteophytes": 2,
    "sclerosis": 4,
    "calcifications": 8,
}

# Severity -> sign curves (knots, values). Severity is the continuous grade, e.g. a KL 2
# film has kl_severity in [1.5, 2.5] at internal difficulty 1. Units: narrowing is the
# fraction of the normal joint-space width lost; osteophyte length in canvas pixels;
# sclerosis and calcification in attenuation units (cortex is about 1).
NARROW_KNOTS = ([0.0, 1.0, 2.0, 3.0, 4.0, 4.5], [0.0, 0.06, 0.2, 0.45, 0.74, 0.85])
OSTEO_LEN_KNOTS = ([0.0, 0.6, 1.0, 2.0, 3.0, 4.0, 4.5], [0.0, 0.0, 3.0, 6.5, 10.5, 15.0, 17.0])
OSTEO_PROB_KNOTS = ([0.0, 0.6, 1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.3, 0.6, 0.85, 1.0])
SCLEROSIS_KNOTS = ([0.0, 1.8, 2.5, 3.0, 4.0, 4.5], [0.0, 0.0, 0.1, 0.28, 0.55, 0.65])
CALC_EXTENT_KNOTS = ([0.0, 0.35, 1.0, 2.0, 3.0, 3.5], [0.0, 0.08, 0.2, 0.45, 0.8, 0.95])
CALC_AMP_KNOTS = ([0.0, 0.35, 1.0, 2.0, 3.0, 3.5], [0.0, 0.09, 0.13, 0.17, 0.21, 0.23])


@dataclass(frozen=True)
class Lesions:
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


OSTEOPHYTE_SITES = ("fem_med", "fem_lat", "tib_med", "tib_lat")


def film_lesions(
    anat: Anatomy, row: Mapping[str, Any], difficulty: float, rng: np.random.Generator
) -> Lesions:
    """Turn a label row's severities into concrete signs, with per-sign scatter.

    Args:
        anat: the patient's anatomy (normal joint-space widths).
        row: a :func:`engine.phantom.phantom_labels` row (or any mapping with its severity
            columns).
        difficulty: ``PhantomSpec.effective_difficulty``.
        rng: the film's random stream, consumed in a fixed order.

    Returns:
        The film's lesions.
    """
    # Signs get fainter as difficulty rises; sqrt keeps the knob gentle around 1.
    gain = 1.0 / np.sqrt(difficulty)
    spread = 0.25 * difficulty
    c_sev = float(row["cppd_severity"])
    structure, scl = _structural_signs(anat, row, gain, spread, rng)
    deposits = _deposit_signs(c_sev, gain, spread, rng)
    # The remaining draws come last in the film's stream, in field order (keeps films as
    # they were drawn before these parts were split out).
    return Lesions(
        **structure,
        sclerosis_thick=float(rng.uniform(7.0, 10.0) + 8.0 * scl),
        **deposits,
        calc_alpha_fem=float(rng.uniform(0.22, 0.4)),
        calc_alpha_tib=float(rng.uniform(0.62, 0.78)),
        calc_tibial_line=bool(c_sev > 1.5 and rng.random() < 0.6),
        calc_dotted=bool(rng.random() < 0.35),
    )


def _structural_signs(
    anat: Anatomy,
    row: Mapping[str, Any],
    gain: float,
    spread: float,
    rng: np.random.Generator,
) -> tuple[dict[str, Any], float]:
    """KL's signs: narrowing, osteophytes, spine sharpening, sclerosis, deformity, cysts.

    Returns:
        The :class:`Lesions` fields of these signs, and the sclerosis strength (which sets
        the band's thickness, drawn later).
    """
    kl_sev = float(row["kl_severity"])
    narrow_med = float(row["narrow_medial"]) * gain
    narrow_lat = float(row["narrow_lateral"]) * gain
    jsw_med = anat.jsw_med * (1.0 - min(narrow_med, 0.9))
    jsw_lat = anat.jsw_lat * (1.0 - min(narrow_lat, 0.9))

    length = float(np.interp(kl_sev, *OSTEO_LEN_KNOTS)) * gain
    p_site = float(np.interp(kl_sev, *OSTEO_PROB_KNOTS))
    present = rng.random(len(OSTEOPHYTE_SITES)) < p_site
    if kl_sev >= 1.5 and not present.any():
        present[rng.integers(len(OSTEOPHYTE_SITES))] = True  # "definite" from KL 2 on
    lengths = length * np.exp(rng.normal(0.0, spread, size=len(OSTEOPHYTE_SITES)))
    osteophytes = tuple(
        (site, float(ln))
        for site, ln, on in zip(OSTEOPHYTE_SITES, lengths, present, strict=True)
        if on and ln >= 1.0
    )
    spine_sharpening = max(0.0, (kl_sev - 1.5) * 2.0) * gain * float(rng.uniform(0.5, 1.5))

    scl = float(np.interp(kl_sev, *SCLEROSIS_KNOTS)) * gain
    scl *= float(np.exp(rng.normal(0.0, spread)))
    # Sclerosis follows the narrowed compartment.
    med_share = 0.35 + 0.65 * (narrow_med >= narrow_lat)
    deform = float(np.clip(kl_sev - 3.3, 0.0, 1.2))
    cysts: list[tuple[float, float, float]] = []
    if deform > 0.2:
        for _ in range(int(rng.integers(0, 3))):
            cysts.append(
                (float(rng.uniform(-1, 1)), float(rng.uniform(3, 9)), float(rng.uniform(1.5, 3)))
            )
    signs = {
        "jsw_med": jsw_med,
        "jsw_lat": jsw_lat,
        "osteophytes": osteophytes,
        "spine_sharpening": spine_sharpening,
        "sclerosis_med": scl * med_share,
        "sclerosis_lat": scl * (1.35 - med_share),
        "deform": deform,
        "cysts": tuple(cysts),
    }
    return signs, scl


def _deposit_signs(
    c_sev: float, gain: float, spread: float, rng: np.random.Generator
) -> dict[str, Any]:
    """CPPD's signs: how much of each compartment carries deposits, how dense, the menisci.

    Returns:
        The :class:`Lesions` fields of these signs (where the lines sit is drawn later).
    """
    extent = float(np.interp(c_sev, *CALC_EXTENT_KNOTS))
    amp = float(np.interp(c_sev, *CALC_AMP_KNOTS)) * gain
    amp *= float(np.exp(rng.normal(0.0, spread * 0.6))) if amp > 0 else 0.0
    # Mild disease often starts in one compartment.
    if c_sev > 0 and c_sev < 1.8 and rng.random() < 0.6:
        ext_med, ext_lat = (
            (extent * 1.5, extent * 0.3) if rng.random() < 0.6 else (extent * 0.3, extent * 1.5)
        )
    else:
        ext_med = extent * float(rng.uniform(0.8, 1.2))
        ext_lat = extent * float(rng.uniform(0.8, 1.2))
    men_base = float(np.clip((c_sev - 0.5) / 2.5, 0.0, 1.0)) * amp * 2.0
    meniscus = (
        men_base * float(rng.uniform(0.6, 1.2)) if c_sev > 0 else 0.0,
        men_base * float(rng.uniform(0.6, 1.2)) if c_sev > 0 else 0.0,
    )
    return {
        "calc_extent_med": float(min(ext_med, 1.0)),
        "calc_extent_lat": float(min(ext_lat, 1.0)),
        "calc_amp": amp,
        "meniscus_amp": meniscus,
    }


#: The fields of `Lesions` that draw each pathology's signs.
SIGN_FIELDS: dict[str, tuple[str, ...]] = {
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


def severity_at(task: str, grade: int, row: Mapping[str, Any]) -> dict[str, float]:
    """Label-row severities at the centre of ``grade``'s band (narrowing kept on its side)."""
    if task == "CPPD":
        return {"cppd_severity": float(grade)}  # 0 draws no deposits; 1..3 sit in [0.35, 3.5]
    worst = float(np.interp(float(grade), *NARROW_KNOTS))
    medial = row["narrow_side"] == "medial"
    return {
        "kl_severity": float(grade),
        "narrow_medial": worst if medial else 0.2 * worst,
        "narrow_lateral": 0.2 * worst if medial else worst,
    }
