"""Random texture without per-film filtering: trabecular bone and film noise.

Both are windows cut at random from per-process banks made once from fixed seeds, so every
process draws the same bytes and no film pays for filtering fresh noise.
"""

from __future__ import annotations

import functools

import cv2
import numpy as np

from engine.phantom.canvas import CANVAS_H, CANVAS_W
from engine.phantom.spec import STREAM_TEXTURE

_TEX_SIGMAS = (0.8, 1.05, 1.3)


@functools.cache
def _texture_bank(sigma: float) -> np.ndarray:
    """(2 Hc, 2 Wc) unit-variance trabecular texture for one grain size, made once per
    process from a fixed seed (so every process has the same bank).

    Band-pass noise, a little elongated along the bone axis (principal trabeculae run
    vertically); made at half resolution and enlarged.
    """
    h, w = 2 * CANVAS_H, 2 * CANVAS_W
    noise = np.random.default_rng([STREAM_TEXTURE, int(sigma * 100)]).standard_normal(
        (h // 2, w // 2), dtype=np.float32
    )
    fine = cv2.GaussianBlur(noise, (0, 0), sigmaX=0.6 * sigma, sigmaY=1.1 * sigma)
    coarse = cv2.GaussianBlur(noise, (0, 0), sigmaX=1.8 * sigma, sigmaY=2.8 * sigma)
    tex: np.ndarray = cv2.resize(fine - coarse, (w, h), interpolation=cv2.INTER_LINEAR)
    tex /= float(tex.std())
    tex.setflags(write=False)
    return tex


def texture_tile(sigma: float, rng: np.random.Generator) -> np.ndarray:
    """(Hc, Wc) texture: a random window of the bank nearest ``sigma``, randomly flipped.

    Cutting windows from a bank instead of filtering fresh noise for every film saves a
    millisecond a film; with random offsets and flips no two films share a texture.
    """
    bank = _texture_bank(min(_TEX_SIGMAS, key=lambda v: abs(v - sigma)))
    oy = int(rng.integers(0, bank.shape[0] - CANVAS_H + 1))
    ox = int(rng.integers(0, bank.shape[1] - CANVAS_W + 1))
    tile = bank[oy : oy + CANVAS_H, ox : ox + CANVAS_W]
    return tile[:, ::-1] if rng.random() < 0.5 else tile


@functools.cache
def _noise_bank(shape: tuple[int, int]) -> np.ndarray:
    """(2 H, 2 W) unit normal noise for films of ``shape``, fixed seed, made once a process."""
    h, w = shape
    noise = np.random.default_rng([STREAM_TEXTURE, 1, h, w]).standard_normal(
        (2 * h, 2 * w), dtype=np.float32
    )
    noise.setflags(write=False)
    return noise


def film_noise(shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """(H, W) unit noise: a random window of the noise bank, with a random sign."""
    bank = _noise_bank(shape)
    oy = int(rng.integers(0, shape[0] + 1))
    ox = int(rng.integers(0, shape[1] + 1))
    tile = bank[oy : oy + shape[0], ox : ox + shape[1]]
    return -tile if rng.random() < 0.5 else tile
