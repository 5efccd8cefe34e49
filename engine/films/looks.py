"""A film's look as a small perceptual hash, to find one film saved twice in other ways.

The import's exact-pixel hash (`FilmCheck.pixels_hash`) misses a film re-exported as JPEG or
scaled down; under another patient that copy is a leak between training and test sets.
`look_hash` is a perceptual hash (pHash) of the decoded grey film: the film averaged down to
32 x 32 (area averaging, so scale and JPEG noise wash out), its 2-D cosine transform, and one
bit per low frequency of the 16 x 16 corner (the constant term left out): is it above their
median? A JPEG re-export or a 75 % downscale of a film differs from it in at most 6 of these
255 bits (phantom films, measured); two different films, even two phantoms, in 60 or more.
`near_pairs` compares every pair, vectorised (a second for 10,000 films).
"""

from __future__ import annotations

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
    # Averaged down as uint8 first (a float copy of the whole film would cost more than
    # the rest of the hash); the 32 x 32 means lose less than a grey level.
    small = cv2.resize(np.ascontiguousarray(film), (_GRID, _GRID), interpolation=cv2.INTER_AREA)
    low = cv2.dct(small.astype(np.float32))[:_CORNER, :_CORNER].ravel()[1:]
    bits = low > np.median(low)
    return int.from_bytes(np.packbits(bits).tobytes(), "big")


def hash_distance(a: int, b: int) -> int:
    """Bits in which two look hashes differ."""
    return (a ^ b).bit_count()


def near_pairs(hashes: Mapping[str, int], max_bits: int = NEAR_BITS) -> list[tuple[str, str, int]]:
    """Pairs of names whose hashes differ in at most ``max_bits`` bits, each once, sorted.

    Every pair is compared, as one matrix product: with each hash a row of 0/1 bits, the
    bits two hashes differ in are ``ones(a) + ones(b) - 2 a.b``, so a block of rows against
    all of them is a float32 matrix product (exact: at most 255), a block at a time.

    Returns:
        ``[(name, other name, bits), ...]`` with name < other name.
    """
    names = [n for n, v in hashes.items() if v]
    if len(names) < 2:
        return []
    packed = np.frombuffer(b"".join(hashes[n].to_bytes(32, "big") for n in names), np.uint8)
    bits = np.unpackbits(packed.reshape(len(names), 32), axis=1).astype(np.float32)
    ones = bits.sum(axis=1)
    found = []
    block = 1024
    for start in range(0, len(names), block):
        part = bits[start : start + block]
        differ = ones[start : start + block, None] + ones[None, :] - 2.0 * (part @ bits.T)
        rows, cols = np.nonzero(differ <= max_bits + 0.5)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            i = start + r
            if c > i:
                a, b = sorted((names[i], names[c]))
                found.append((a, b, int(round(float(differ[r, c])))))
    return sorted(found)
