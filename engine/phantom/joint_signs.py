"""Signs drawn at the joint: osteophytes on the bone margins, and everything drawn in the
band of rows around the joint line (subchondral plates, physeal scars, joint space,
sclerosis, cysts and chondrocalcinosis).

Everything in the band is drawn only in rows ``WIN_R0:WIN_R1`` of the canvas, which is
where lesions live; this saves most of the drawing time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import cv2
import numpy as np

from engine.phantom.anatomy import Anatomy
from engine.phantom.canvas import CANVAS_W, CX, CY, WIN_R0, WIN_R1, XS, XX, YY
from engine.phantom.lesions import MASK_BITS, Lesions

if TYPE_CHECKING:
    from engine.phantom.knee import JointSurfaces


def draw_osteophyte(
    osteo: np.ndarray, site: str, length: float, s: JointSurfaces, rng: np.random.Generator
) -> None:
    """Fill one marginal spur into ``osteo`` in place.

    A spur grows from the joint margin: its base runs from the articular surface round the
    corner onto the side of the bone, and its tip points outwards and towards the joint
    line (down for the femur, up for the tibia), like marginal lipping.

    Args:
        osteo: (H, W) uint8 canvas the spur is filled into (1 inside).
        site: one of ``OSTEOPHYTE_SITES`` ('fem_med', 'fem_lat', 'tib_med', 'tib_lat').
        length: spur length in canvas pixels.
        s: the joint surfaces.
        rng: the film's random stream (the tip's jitter).
    """
    side = 1.0 if site.endswith("med") else -1.0

    def at(xq: float, surface: np.ndarray) -> float:
        return float(surface[int(np.clip(round(xq), 0, CANVAS_W - 1))])

    if site.startswith("fem"):
        xc_, a = (s.xm, s.ax_m) if side > 0 else (s.xl, s.ax_l)
        x1, x_corner = xc_ + side * 0.8 * a, xc_ + side * 0.97 * a
        y1, y_corner = at(x1, s.yf), at(x_corner, s.yf)
        p2 = [xc_ + side * 1.01 * a, y_corner - 7.0 - 0.5 * length]
        direction = np.array([side, 0.4])
    else:
        x1, x_corner = CX + side * (s.hwt - 10.0), CX + side * (s.hwt - 1.5)
        y1, y_corner = at(x1, s.yt), at(x_corner, s.yt)
        p2 = [CX + side * (s.hwt + 0.5), y_corner + 7.0 + 0.5 * length]
        direction = np.array([side, -0.4])
    if not (np.isfinite(y1) and np.isfinite(y_corner)):
        return
    direction /= np.linalg.norm(direction)
    corner = np.array([x_corner, y_corner])
    tip = corner + direction * length + rng.normal(0.0, 0.5, size=2)
    pts = np.array([[x1, y1], tip, p2, corner - direction * 3.0])
    cv2.fillPoly(osteo, [np.round(pts * 16).astype(np.int32)], 1, cv2.LINE_8, shift=4)


class _Band(NamedTuple):
    """Views of the canvas rows around the joint line (writes go through to the canvas)."""

    yw: np.ndarray  # (R, W) row coordinates
    bone: np.ndarray  # (R, W) bool, femur or tibia (with osteophytes)
    att: np.ndarray  # (R, W) attenuation (a view)
    mask: np.ndarray  # (R, W) lesion mask (a view)


def draw_joint_line_signs(
    att: np.ndarray,
    mask: np.ndarray,
    anat: Anatomy,
    les: Lesions,
    s: JointSurfaces,
    femur_u8: np.ndarray,
    tibia_u8: np.ndarray,
    rng: np.random.Generator,
) -> None:
    """Draw, in place, what lies in the band of rows around the joint line.

    Args:
        att: (H, W) canvas attenuation, added to.
        mask: (H, W) canvas lesion mask, flags OR-ed in.
        anat: the patient's anatomy.
        les: the film's lesions.
        s: the joint surfaces.
        femur_u8, tibia_u8: (H, W) uint8 bone pixels including osteophytes.
        rng: the film's random stream (scars, then deposits).
    """
    win = slice(WIN_R0, WIN_R1)
    band = _Band(
        yw=YY[win],
        bone=(femur_u8[win] | tibia_u8[win]).astype(bool),
        att=att[win],
        mask=mask[win],
    )
    _add_subchondral_plates(band, anat, s)
    _add_physeal_scars(band, s, femur_u8, tibia_u8, rng)
    _mark_joint_space(band, s)
    _add_sclerosis(band, les, s)
    _cut_cysts(band, les, s)
    if les.calc_amp > 0:
        _add_calcifications(band, les, s, rng)


def _add_subchondral_plates(band: _Band, anat: Anatomy, s: JointSurfaces) -> None:
    """The thin dense line along each articular surface."""
    yw, yt, yf = band.yw, s.yt, s.yf
    plate_t = anat.cortex_epi * 0.8
    plate = ((yw > yt[None, :]) & (yw < yt[None, :] + plate_t)) | (
        (yw < yf[None, :]) & (yw > yf[None, :] - plate_t)
    )
    band.att[...] += (0.45 * anat.bone_density) * (plate & band.bone)


def _add_physeal_scars(
    band: _Band,
    s: JointSurfaces,
    femur_u8: np.ndarray,
    tibia_u8: np.ndarray,
    rng: np.random.Generator,
) -> None:
    """Faint wavy bright lines across both metaphyses: a normal finding that gives the model
    a horizontal bright line that is *not* disease."""
    att_w, yw = band.att, band.yw
    wave = np.sin(XS * float(rng.uniform(0.03, 0.06)) + float(rng.uniform(0, 6.28)))
    for y_scar, bone_u8 in (
        ((s.yc_m + s.yc_l) / 2.0 - float(rng.uniform(6.0, 16.0)), femur_u8),
        (CY + float(rng.uniform(20.0, 30.0)), tibia_u8),
    ):
        r0 = max(0, int(y_scar) - 9 - WIN_R0)
        r1 = min(att_w.shape[0], int(y_scar) + 10 - WIN_R0)
        line = np.exp(-0.5 * ((yw[r0:r1] - (y_scar + 3.0 * wave)[None, :]) / 1.3) ** 2)
        att_w[r0:r1] += 0.07 * line * bone_u8[WIN_R0 + r0 : WIN_R0 + r1]


def _mark_joint_space(band: _Band, s: JointSurfaces) -> None:
    """Mask the joint space: between condyle and plateau in each compartment's central part."""
    yw, yt, yf = band.yw, s.yt, s.yf
    gap_cols = ((np.abs(s.t_m) < 0.8) | (np.abs(s.t_l) < 0.8)) & np.isfinite(yt)
    joint_space = (yw > yf[None, :]) & (yw < yt[None, :]) & gap_cols[None, :] & ~band.bone
    band.mask[joint_space] |= MASK_BITS["joint_space"]


def _add_sclerosis(band: _Band, les: Lesions, s: JointSurfaces) -> None:
    """Subchondral sclerosis: a bright band fading away from each articular surface."""
    yw, yt, yf = band.yw, s.yt, s.yf
    for amp_s, t_c in ((les.sclerosis_med, s.t_m), (les.sclerosis_lat, s.t_l)):
        if amp_s <= 0.005:
            continue
        colw = np.clip(1.0 - np.abs(t_c) ** 4, 0.0, 1.0)[None, :]
        thick = les.sclerosis_thick
        # Flat-topped with a soft lower edge: dense right under the plate, fading out.
        below = np.clip(1.4 - (yw - yt[None, :]) / thick, 0.0, 1.0) * (yw > yt[None, :])
        above = np.clip(1.4 - (yf[None, :] - yw) / thick, 0.0, 1.0) * (yw < yf[None, :])
        sclerosis = (below + above) * colw * band.bone
        band.att[...] += amp_s * sclerosis
        if amp_s >= 0.03:  # fainter bands are within normal bone density
            band.mask[sclerosis > 0.5] |= MASK_BITS["sclerosis"]


def _cut_cysts(band: _Band, les: Lesions, s: JointSurfaces) -> None:
    """Subchondral cysts: small lucent discs under the plateau of the worse compartment."""
    for cu, cv_, cr in les.cysts:
        worse_med = les.sclerosis_med >= les.sclerosis_lat
        x0 = s.xm + 0.6 * cu * s.ax_m if worse_med else s.xl + 0.6 * cu * s.ax_l
        y0 = float(s.yt[int(np.clip(round(x0), 0, CANVAS_W - 1))]) + cv_
        if np.isfinite(y0):
            disc = ((XX[WIN_R0:WIN_R1] - x0) ** 2 + (band.yw - y0) ** 2) < cr**2
            band.att[...] -= 0.18 * disc


def _add_calcifications(
    band: _Band, les: Lesions, s: JointSurfaces, rng: np.random.Generator
) -> None:
    """Chondrocalcinosis: thin lines parallel to the articular surface inside the gap
    (hyaline cartilage) and fuzzy meniscal triangles at the compartment margins."""
    calc = np.zeros_like(band.att)
    gap = np.where(np.isfinite(s.yf) & np.isfinite(s.yt), s.yt - s.yf, 0.0)
    for ext, t_c, (xc_, a_c, side) in (
        (les.calc_extent_med, s.t_m, (s.xm, s.ax_m, 1.0)),
        (les.calc_extent_lat, s.t_l, (s.xl, s.ax_l, -1.0)),
    ):
        cols = _segments_along(t_c, ext, les.calc_dotted, rng)
        if cols.any():
            _add_cartilage_lines(calc, band.yw, cols, les, s.yf, gap)
        men_amp = les.meniscus_amp[0 if side > 0 else 1]
        if men_amp > 0:
            _add_meniscus(calc, men_amp, xc_, a_c, side, s.yf, s.yt, les.calc_dotted, rng)
    band.att[...] += calc
    band.mask[calc > 0.04] |= MASK_BITS["calcifications"]


def _add_cartilage_lines(
    calc: np.ndarray,
    yw: np.ndarray,
    cols: np.ndarray,
    les: Lesions,
    yf: np.ndarray,
    gap: np.ndarray,
) -> None:
    """Add the hyaline deposit lines of one compartment to ``calc`` in place.

    Args:
        calc: (R, W) calcification density of the joint row band.
        yw: (R, W) row coordinates of the band.
        cols: (W,) 0/1 weights of the columns carrying a line (from :func:`_segments_along`).
        les: the film's lesions (line positions across the gap, density).
        yf: (W,) femoral surface rows.
        gap: (W,) joint-space height per column (0 where there is no joint).
    """
    sigma = 0.75
    alphas = [les.calc_alpha_fem] + ([les.calc_alpha_tib] if les.calc_tibial_line else [])
    # Draw only the block the lines can reach: their columns, and rows between the
    # surfaces there.
    c_idx = np.flatnonzero(cols)
    c0, c1 = int(c_idx[0]), int(c_idx[-1]) + 1
    for alpha in alphas:
        y_line = (yf + alpha * gap)[c0:c1]
        r0 = max(0, int(np.floor(y_line.min())) - 4 - WIN_R0)
        r1 = min(calc.shape[0], int(np.ceil(y_line.max())) + 5 - WIN_R0)
        prof = np.exp(-0.5 * ((yw[r0:r1, c0:c1] - y_line[None, :]) / sigma) ** 2)
        calc[r0:r1, c0:c1] += (les.calc_amp * cols[None, c0:c1]) * prof


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
        calc: (R, W) calcification density of the joint row band.
        amp: density of the triangle.
        xc, a: compartment centre and half-width (canvas px).
        side: +1 when the outer margin is at larger x, -1 otherwise.
        yf, yt: (W,) femoral and tibial surface rows.
        dotted: punctate rather than solid.
        rng: random generator.
    """
    x_out = xc + side * 0.9 * a
    x_in = xc + side * (0.9 - float(rng.uniform(0.28, 0.4))) * a
    xo = int(np.clip(round(x_out), 0, CANVAS_W - 1))
    xi = int(np.clip(round(x_in), 0, CANVAS_W - 1))
    if not (np.isfinite(yf[xo]) and np.isfinite(yt[xo]) and np.isfinite(yt[xi])):
        return
    top, bot = yf[xo] + 1.0, yt[xo] - 1.0
    mid = 0.5 * (yf[xi] + yt[xi]) if np.isfinite(yf[xi]) else 0.5 * (top + bot)
    if bot - top < 1.0:
        return
    pts = np.array([[x_out, top], [x_out, bot], [x_in, mid]]) - [0.0, WIN_R0]
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
