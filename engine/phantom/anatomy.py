"""One patient's knee shape: both knees of a patient share it (left drawn as the mirror)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.phantom.spec import STREAM_ANATOMY


@dataclass(frozen=True)
class Anatomy:
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


def patient_anatomy(seed: int, patient_index: int) -> Anatomy:
    """Anatomy shared by both knees of one patient."""
    rng = np.random.default_rng([seed, STREAM_ANATOMY, patient_index])
    u = rng.uniform
    jsw = u(9.0, 14.0)
    return Anatomy(
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
