"""Bone in projection: attenuation from a dense cortical shell around a textured core.

Image formation follows X-ray physics loosely: each structure contributes an attenuation
equal to its chord length through a rounded body, so the cortex (a dense shell seen
tangentially) is brighter than the trabecular interior, and overlapping structures add.
"""

from __future__ import annotations

import cv2
import numpy as np


def shell_attenuation(
    d: np.ndarray, radius: float, cortex: np.ndarray | np.floating | float, texture: np.ndarray
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


def interp32(v: np.ndarray, xp: list[float], fp: list[float]) -> np.ndarray:
    """np.interp kept in float32 (float64 would spread through the canvas and halve speed)."""
    return np.interp(v, xp, fp).astype(np.float32)


def add_bone(
    out: np.ndarray,
    body: np.ndarray,
    bone: np.ndarray,
    radius: float,
    cortex: np.ndarray | np.floating,
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
    cortex_roi = cortex[y0:y1] if isinstance(cortex, np.ndarray) and cortex.ndim == 2 else cortex
    att = shell_attenuation(d, radius, cortex_roi, texture[y0:y1, x0:x1])
    out[y0:y1, x0:x1] += (density * att) * bone[y0:y1, x0:x1]
