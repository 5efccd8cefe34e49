"""Drawing one knee on the canvas: joint surfaces, bones, soft tissue, then the signs.

:func:`draw_knee` draws a right knee (medial on the viewer's right) in the canvas frame of
:mod:`engine.phantom.canvas` as attenuation (air 0, cortex about 1 above soft tissue) with a
lesion mask. Drawing is vectorised numpy/OpenCV over precomputed coordinate grids, and bones
are shaded only inside their bounding boxes.

The film's random stream is consumed in a fixed order (osteophytes, trabecular texture, then
the joint-line signs), so a film's bytes depend only on its seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from engine.phantom.anatomy import Anatomy
from engine.phantom.bone import add_bone, interp32
from engine.phantom.canvas import CANVAS_H, CANVAS_W, CX, CY, XS, XX, YY
from engine.phantom.joint_signs import draw_joint_line_signs, draw_osteophyte
from engine.phantom.lesions import MASK_BITS, Lesions
from engine.phantom.texture import texture_tile

# The condyles are extended downwards and the plateau upwards by this much (px) when a
# bone's thickness is measured (see _shade_bones).
_ARTICULAR_EXTENSION = 40.0


@dataclass(frozen=True)
class JointSurfaces:
    """The articular surfaces as 1-D profiles over the canvas columns.

    Attributes:
        xm, xl: centre columns of the medial and lateral compartments.
        ax_m, ax_l: half-widths of the two compartments (condyles).
        t_m, t_l: (W,) each column's position across a compartment (-1..1 inside it).
        hwt: half-width of the tibial plateau.
        yt: (W,) row of the tibial plateau (inf beyond the plateau).
        yf: (W,) row of the femoral condyles' lowest edge (-inf beyond the condyles).
        yc_m, yc_l: rows of the condyles' centres.
        ry_m, ry_l: condyle heights.
    """

    xm: float
    xl: float
    ax_m: float
    ax_l: float
    t_m: np.ndarray
    t_l: np.ndarray
    hwt: float
    yt: np.ndarray
    yf: np.ndarray
    yc_m: float
    yc_l: float
    ry_m: float
    ry_l: float


class _Femur(NamedTuple):
    pixels: np.ndarray  # (H, W) bool, the femur without osteophytes
    notch: np.ndarray  # (H, W) bool, the intercondylar notch cut out of it
    extension: np.ndarray  # (H, W) bool, condyles extended down (for thickness only)


class _Tibia(NamedTuple):
    pixels: np.ndarray  # (H, W) bool, the tibia without osteophytes
    half_width: np.ndarray  # (H, 1) half-width per row (the fibula sits beside it)
    extension: np.ndarray  # (H, W) bool, plateau extended up (for thickness only)


def draw_knee(
    anat: Anatomy, les: Lesions, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Draw a right knee on the canvas.

    Returns:
        Attenuation (Hc, Wc) float32 (air 0, cortex about 1 above soft tissue) and the
        lesion mask (Hc, Wc) uint8 with MASK_BITS flags.
    """
    mask = np.zeros((CANVAS_H, CANVAS_W), np.uint8)
    surfaces = joint_surfaces(anat, les)
    femur = _femur(anat, surfaces)
    tibia = _tibia(anat, surfaces)
    fibula = _fibula(anat, tibia.half_width)

    # Osteophytes: spurs from the articular margins, part of their bone.
    osteo_f = np.zeros((CANVAS_H, CANVAS_W), np.uint8)
    osteo_t = np.zeros((CANVAS_H, CANVAS_W), np.uint8)
    for site, length in les.osteophytes:
        target = osteo_f if site.startswith("fem") else osteo_t
        draw_osteophyte(target, site, length, surfaces, rng)
    femur_u8 = femur.pixels.view(np.uint8) | osteo_f
    tibia_u8 = tibia.pixels.view(np.uint8) | osteo_t
    if les.osteophytes:
        spurs = ((osteo_f | osteo_t) > 0) & ~femur.pixels & ~tibia.pixels
        mask[spurs] |= MASK_BITS["osteophytes"]

    bone = _shade_bones(anat, surfaces, femur, femur_u8, tibia, tibia_u8, fibula, rng)
    _add_patella(bone, anat)
    att = _soft_tissue(anat) + bone
    draw_joint_line_signs(att, mask, anat, les, surfaces, femur_u8, tibia_u8, rng)
    return att.astype(np.float32, copy=False), mask


def joint_surfaces(anat: Anatomy, les: Lesions) -> JointSurfaces:
    """The tibial plateau and the femoral condyles above it, one row per column.

    Each condyle's lowest point sits one (narrowed) joint-space width above the plateau.
    """
    ax = (anat.half_width - anat.notch_width / 2.0) / 2.0
    ax_m, ax_l = ax * (1.0 + anat.medial_bias), ax * (1.0 - anat.medial_bias)
    xm = CX + anat.notch_width / 2.0 + ax_m
    xl = CX - anat.notch_width / 2.0 - ax_l
    t_m = (XS - xm) / ax_m
    t_l = (XS - xl) / ax_l
    hwt = anat.half_width + anat.tibia_extra
    yt = _tibial_plateau(anat, les, t_m, t_l, hwt)

    # Condyles: superellipses; deformity flattens them.
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
    return JointSurfaces(
        xm=xm,
        xl=xl,
        ax_m=ax_m,
        ax_l=ax_l,
        t_m=t_m,
        t_l=t_l,
        hwt=hwt,
        yt=yt,
        yf=yf,
        yc_m=yc_m,
        yc_l=yc_l,
        ry_m=ry_m,
        ry_l=ry_l,
    )


def _tibial_plateau(
    anat: Anatomy, les: Lesions, t_m: np.ndarray, t_l: np.ndarray, hwt: float
) -> np.ndarray:
    """(W,) float32 row of the plateau: a concave medial and a slightly convex lateral
    compartment, the tibial spines between them, rounded corners, inf beyond its edges."""
    in_m, in_l = np.abs(t_m) < 1.0, np.abs(t_l) < 1.0
    yt = np.full(CANVAS_W, CY, np.float32)
    yt += np.where(in_m, anat.concavity_med * (1.0 - t_m**2), 0.0)
    yt -= np.where(in_l, anat.convexity_lat * (1.0 - t_l**2), 0.0)
    spine_h = anat.spine_h + les.spine_sharpening
    spine_w = anat.spine_w / (1.0 + 0.08 * les.spine_sharpening)  # spines peak as they grow
    for sgn in (-1.0, 1.0):
        yt -= spine_h * np.exp(-(((XS - (CX + sgn * anat.spine_sep)) / spine_w) ** 2))
    # Grade 4 deformity: the worse compartment's plateau sinks and tilts.
    if les.deform > 0:
        worse_med = les.jsw_med / anat.jsw_med <= les.jsw_lat / anat.jsw_lat
        t_w, in_w = (t_m, in_m) if worse_med else (t_l, in_l)
        yt += np.where(in_w, les.deform * (4.0 * (1.0 - t_w**2) + 3.0 * t_w), 0.0)
    corner_r = 8.0
    dx = np.abs(XS - CX)
    k = dx - (hwt - corner_r)
    yt += np.where(k > 0, corner_r - np.sqrt(np.maximum(corner_r**2 - k**2, 0.0)), 0.0)
    return np.where(dx <= hwt, yt, np.inf).astype(np.float32)


def _superellipse_arc(t: np.ndarray, p: float, p_inner: float, inner_sign: float) -> np.ndarray:
    """Lower half of a superellipse: 1 at the centre, 0 at |t| = 1, nan outside.

    The half facing the notch (``sign(t) == inner_sign``) uses ``p_inner``: condyles are
    rounder on the notch side, which makes the notch an arch rather than a slot.
    """
    a = np.abs(t)
    pp = np.where(np.sign(t) == inner_sign, p_inner, p)
    return np.where(a <= 1.0, np.power(np.maximum(1.0 - a**pp, 0.0), 1.0 / pp), np.nan)


def _condyle_centre_rows(s: JointSurfaces) -> np.ndarray:
    """(W,) float32: the medial condyle's centre row right of the axis, the lateral's left."""
    return np.where(XS > CX, s.yc_m, s.yc_l).astype(np.float32)


def _femur(anat: Anatomy, s: JointSurfaces) -> _Femur:
    """The femur: a shaft flaring like a trumpet into the two condyles, notch cut out."""
    yc_x = _condyle_centre_rows(s)
    y_col = YY[:, :1]
    u = np.clip((y_col - (min(s.yc_m, s.yc_l) - anat.femur_flare_len)) / anat.femur_flare_len, 0, 1)
    flare = u**1.8  # metaphysis flares like a trumpet towards the condyles
    x_right = CX + anat.femur_shaft_hw + (s.xm + s.ax_m - CX - anat.femur_shaft_hw) * flare
    x_left = CX - anat.femur_shaft_hw - (CX - s.xl + s.ax_l - anat.femur_shaft_hw) * flare
    condyle_cols = (np.abs(s.t_m) <= 1.0) | (np.abs(s.t_l) <= 1.0)
    femur = ((yc_x > YY) & (x_left < XX) & (x_right > XX)) | ((yc_x <= YY) & (s.yf > YY))
    notch = _intercondylar_notch(anat, s)
    femur &= ~notch
    extension = (yc_x <= YY) & (s.yf + _ARTICULAR_EXTENSION > YY) & condyle_cols & ~notch
    return _Femur(pixels=femur, notch=notch, extension=extension)


def _intercondylar_notch(anat: Anatomy, s: JointSurfaces) -> np.ndarray:
    """(H, W) bool: an arch cut between the condyles, rising from their lowest points to a
    rounded roof."""
    y_col = YY[:, :1]
    yc_avg = (s.yc_m + s.yc_l) / 2.0
    roof = yc_avg - 0.4 * (s.ry_m + s.ry_l) / 2.0
    vv = np.clip((y_col - roof) / (yc_avg - roof), 0.0, 1.0)
    arch_hw = (anat.notch_width / 2.0 + 1.0) * np.sqrt(vv)
    return (np.abs(XX - CX) < arch_hw) & (y_col > roof)


def _tibia(anat: Anatomy, s: JointSurfaces) -> _Tibia:
    """The tibia: the plateau narrowing into the shaft below it."""
    y_col = YY[:, :1]
    ut = np.clip((y_col - (CY + 12.0)) / anat.tibia_flare_len, 0.0, 1.0)
    hw_t = anat.tibia_shaft_hw + (s.hwt - anat.tibia_shaft_hw) * (1.0 - ut) ** 1.6
    in_tibia_cols = np.abs(XX - CX) < hw_t
    tibia = (s.yt < YY) & in_tibia_cols
    extension = (s.yt - _ARTICULAR_EXTENSION < YY) & in_tibia_cols
    return _Tibia(pixels=tibia, half_width=hw_t, extension=extension)


def _fibula(anat: Anatomy, tibia_half_width: np.ndarray) -> np.ndarray:
    """(H, W) bool: the head overlapping the lateral tibial condyle and the shaft running down
    beside the tibia, narrowing."""
    y_col = YY[:, :1]
    fy = CY + anat.fib_dy
    hw_t_at_head = float(np.interp(fy, y_col[:, 0], tibia_half_width[:, 0]))
    fx = CX - hw_t_at_head - anat.fib_rx * (0.1 + anat.fib_dx)
    fr0 = max(0, int(fy - anat.fib_ry) - 1)  # nothing of the fibula lies above this row
    fxx, fyy, fy_col = XX[fr0:], YY[fr0:], y_col[fr0:]
    fib_head = ((fxx - fx) / anat.fib_rx) ** 2 + ((fyy - fy) / anat.fib_ry) ** 2 < 1.0
    fib_axis = interp32(fy_col, [fy, fy + 90.0], [fx - 1.0, CX - anat.tibia_shaft_hw - 13.0])
    fib_hw = interp32(fy_col, [fy, fy + 45.0], [0.75 * anat.fib_rx, anat.fib_shaft_hw])
    fibula = np.zeros((CANVAS_H, CANVAS_W), bool)
    fibula[fr0:] = fib_head | ((fyy > fy) & (np.abs(fxx - fib_axis) < fib_hw))
    return fibula


def _shade_bones(
    anat: Anatomy,
    s: JointSurfaces,
    femur: _Femur,
    femur_u8: np.ndarray,
    tibia: _Tibia,
    tibia_u8: np.ndarray,
    fibula: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """(H, W) float32 attenuation of femur, tibia and fibula: cortex and textured core.

    Args:
        anat: the patient's anatomy.
        s: the joint surfaces.
        femur, tibia: the bones' shapes.
        femur_u8, tibia_u8: (H, W) uint8 bone pixels including osteophytes.
        fibula: (H, W) bool fibula pixels.
        rng: the film's random stream (the texture window).
    """
    # Trabecular texture: band-pass noise, a little elongated along the bone axis (the
    # principal trabeculae run vertically), fading out in the shafts, which are mostly
    # cortical tube (and get replicated beyond the canvas).
    y_col = YY[:, :1]
    tex = texture_tile(anat.tex_sigma, rng)
    fade = interp32(y_col, [0.0, CY - 120.0, CY + 110.0, float(CANVAS_H)], [0.2, 1.0, 1.0, 0.2])
    tex = 1.0 + (0.24 * fade) * tex

    cortex_f = interp32(
        y_col,
        [0.0, min(s.yc_m, s.yc_l) - anat.femur_flare_len, CY],
        [anat.cortex_shaft, anat.cortex_shaft, anat.cortex_epi],
    )
    cortex_t = interp32(
        y_col,
        [CY, CY + anat.tibia_flare_len, float(CANVAS_H)],
        [anat.cortex_epi, anat.cortex_shaft, anat.cortex_shaft],
    )
    # Thickness comes from the distance to the bone's *sides*: an articular surface is a
    # plate seen end-on, with full bone depth right beneath it, so for the distance
    # transform the condyles are extended downwards and the plateau upwards.
    femur_body = femur_u8 | femur.extension.view(np.uint8)
    tibia_body = tibia_u8 | tibia.extension.view(np.uint8)
    bone = np.zeros((CANVAS_H, CANVAS_W), np.float32)
    add_bone(bone, femur_body, femur_u8, 34.0, cortex_f, tex, anat.bone_density)
    add_bone(bone, tibia_body, tibia_u8, 34.0, cortex_t, tex, anat.bone_density)
    fib_u8 = fibula.view(np.uint8)
    add_bone(bone, fib_u8, fib_u8, 12.0, np.float32(1.6), tex, 0.7 * anat.bone_density)
    # In an AP film the notch is lucent but not empty (the trochlea lies in front of it),
    # so it is refilled faintly below the condyles' centres.
    yc_avg = (s.yc_m + s.yc_l) / 2.0
    refill = np.clip((yc_avg + 4.0 - y_col) / 16.0, 0.0, 1.0)
    bone += (0.2 * anat.bone_density) * femur.notch * refill
    return bone


def _add_patella(bone: np.ndarray, anat: Anatomy) -> None:
    """Add the patella, a faint oval over the distal femur, in place (in its box only)."""
    h, w = bone.shape
    py0 = max(0, int(CY + anat.pat_dy - anat.pat_ry) - 1)
    py1 = min(h, int(CY + anat.pat_dy + anat.pat_ry) + 2)
    px0 = max(0, int(CX + anat.pat_dx - anat.pat_rx) - 1)
    px1 = min(w, int(CX + anat.pat_dx + anat.pat_rx) + 2)
    pxx, pyy = XX[py0:py1, px0:px1], YY[py0:py1, px0:px1]
    pd_ = ((pxx - CX - anat.pat_dx) / anat.pat_rx) ** 2 + (
        (pyy - CY - anat.pat_dy) / anat.pat_ry
    ) ** 2
    pat = np.sqrt(np.maximum(1.0 - pd_, 0.0))
    # Chord through an ellipsoid plus a thin cortical rim.
    bone[py0:py1, px0:px1] += anat.pat_density * (pat + 0.8 * (pat > 0) * (1.0 - pat) ** 6)


def _soft_tissue(anat: Anatomy) -> np.ndarray:
    """(H, W) attenuation of the leg: a cylinder, a little wider at the thigh.

    The leg stays inside the canvas, so the canvas edge columns are air and replicating
    them beyond the canvas continues air, not a block of tissue.
    """
    ws = anat.soft_hw + 10.0 * (1.0 - YY[:, :1] / CANVAS_H)
    return 0.4 * np.sqrt(np.maximum(1.0 - ((XX - CX - anat.soft_dx) / ws) ** 2, 0.0))
