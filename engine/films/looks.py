"""A film's look as a small perceptual hash, to find one film saved twice in other ways.

The import's exact-pixel hash (`FilmCheck.pixels_hash`) misses a film re-exported as JPEG or
scaled down; under another patient that copy is a leak between training and test sets.
`look_hash` is a perceptual hash (pHash) of the decoded grey film: the film averaged down to
32 x 32 (area averaging, so scale and JPEG noise wash out), its 2-D cosine transform, and one
bit per low frequency of the 16 x 16 corner (the constant term left out): is it above their
median? A JPEG re-export or a 75 % downscale of a film differs from it in at most 6 of these
255 bits (phantom films, measured); two different films, even two phantoms, in 60 or more.
`near_pairs` finds pairs within `NEAR_BITS` without comparing every pair: a hash is cut into
``NEAR_BITS + 1`` bands, and two hashes within ``NEAR_BITS`` bits agree on at least one band
whole (pigeonhole), so only films sharing a band are compared.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import cv2
import numpy as np

_GRID = 32
_CORNER = 16
HASH_BITS = _CORNER * _CORNER - 1
# Bits two films' look hashes may differ in and still count as one film (copies: 0-6,
# different films: 60 or more).
NEAR_BITS = 16


def look_hash(film: np.ndarray) -> int:
    """The film's 255-bit perceptual hash, as an int (0 for an empty film)."""
    if film.size == 0:
        return 0
    small = cv2.resize(
        np.ascontiguousarray(film, dtype=np.float32), (_GRID, _GRID), interpolation=cv2.INTER_AREA
    )
    low = cv2.dct(small)[:_CORNER, :_CORNER].ravel()[1:]
    bits = low > np.median(low)
    return int.from_bytes(np.packbits(bits).tobytes(), "big")


def hash_distance(a: int, b: int) -> int:
    """Bits in which two look hashes differ."""
    return (a ^ b).bit_count()


def near_pairs(hashes: Mapping[str, int], max_bits: int = NEAR_BITS) -> list[tuple[str, str, int]]:
    """Pairs of names whose hashes differ in at most ``max_bits`` bits (and not 0 bits of
    identical pixels' copies only: every pair within the bound), each once, sorted.

    Returns:
        ``[(name, other name, bits), ...]`` with name < other name.
    """
    bands = max_bits + 1
    width = -(-HASH_BITS // bands)
    mask = (1 << width) - 1
    buckets: dict[tuple[int, int], list[str]] = defaultdict(list)
    for name, value in hashes.items():
        if not value:
            continue
        for band in range(bands):
            buckets[(band, (value >> (band * width)) & mask)].append(name)
    found: dict[tuple[str, str], int] = {}
    for names in buckets.values():
        if len(names) < 2:
            continue
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                pair = (a, b) if a < b else (b, a)
                if pair in found:
                    continue
                bits = hash_distance(hashes[a], hashes[b])
                if bits <= max_bits:
                    found[pair] = bits
    return sorted((a, b, bits) for (a, b), bits in found.items())
