"""The dataset cache format: one folder per (dataset, image size), written once, read by all.

A dataset is prepared once per image size: images are cropped to the knee, resized and cached
as one ``(N, S, S)`` uint8 array file (``images.npy``) with ``meta.csv`` beside it (and
``masks.npy`` for the phantom). Training processes memory-map that file, so many slots share
one copy in the page cache. ``manifest.json`` is written last and marks the cache complete;
both builders (`engine.datasets.phantom_cache`, `engine.datasets.folder_cache`) write
through `image_cache_writer`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.config import DatasetSpec

#: The files of a dataset cache; ``manifest.json`` is written last and marks it complete.
IMAGE_CACHE_FILES = ("images.npy", "masks.npy", "meta.csv")


@dataclass(frozen=True)
class PreparedDataset:
    """A cached dataset: ``images`` (N, S, S) uint8 (memory-mapped) and one meta row each."""

    images: np.ndarray
    meta: pd.DataFrame
    cache_dir: Path


def cache_dir_for(spec: DatasetSpec, image_size: int, root: Path) -> Path:
    """Where the prepared arrays of ``spec`` at ``image_size`` live under ``root``."""
    digest = hashlib.sha1(f"{spec.key}|{image_size}".encode()).hexdigest()[:12]
    return root / f"{spec.kind}-{image_size}px-{digest}"


@dataclass
class ImageCacheDraft:
    """A dataset cache being written: fill ``images`` (and ``masks``), then :meth:`commit`.

    Attributes:
        out_dir: the cache folder.
        images: (N, S, S) uint8, memory-mapped onto ``images.npy.partial``.
        masks: (N, S, S) uint8 on ``masks.npy.partial``, or None for a cache without masks.
    """

    out_dir: Path
    images: np.memmap
    masks: np.memmap | None
    committed: bool = False

    def commit(self, meta: pd.DataFrame, manifest: dict[str, Any]) -> None:
        """Write ``meta.csv``, move every file into place, then write the manifest.

        Args:
            meta: one row per image, in image order.
            manifest: what the cache holds (written with ``"complete": true`` added, last
                and atomically: only then does the cache look complete).
        """
        if len(meta) != len(self.images):
            raise ValueError(f"meta has {len(meta)} rows for {len(self.images)} images")
        for array in (self.images, self.masks):
            if array is not None:
                array.flush()
        meta.to_csv(_partial(self.out_dir / "meta.csv"), index=False)
        for name in IMAGE_CACHE_FILES:
            if _partial(self.out_dir / name).exists():
                os.replace(_partial(self.out_dir / name), self.out_dir / name)
        manifest_path = self.out_dir / "manifest.json"
        text = json.dumps(manifest | {"complete": True}, indent=2, sort_keys=True)
        _partial(manifest_path).write_text(text)
        os.replace(_partial(manifest_path), manifest_path)  # last: now the cache is complete
        self.committed = True


@contextmanager
def image_cache_writer(
    out_dir: Path, n_images: int, image_size: int, *, with_masks: bool = False
) -> Iterator[ImageCacheDraft]:
    """Write a dataset cache (``images.npy``, optional ``masks.npy``, ``meta.csv``,
    ``manifest.json``) so that it looks complete only once every file is written.

    The old manifest is removed first; the arrays are memory-mapped ``.partial`` files the
    caller fills (so a large cache never has to fit in memory); ``draft.commit(meta,
    manifest)`` moves them into place and writes the manifest last. If the block raises or
    ends without a commit, the partial files are removed and the folder holds no manifest,
    so an interrupted build never looks complete. Used by the phantom's and the imported
    folder's cache builders alike.

    Args:
        out_dir: cache folder (created if missing).
        n_images: number of images N.
        image_size: side S of the cached images.
        with_masks: also write (N, S, S) uint8 lesion masks.

    Yields:
        The draft to fill and commit.

    Raises:
        RuntimeError: The block ended without committing the draft.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "manifest.json").unlink(missing_ok=True)
    shape = (n_images, image_size, image_size)
    names = ("images.npy", "masks.npy") if with_masks else ("images.npy",)
    arrays = {
        name: np.lib.format.open_memmap(_partial(out_dir / name), "w+", np.uint8, shape)
        for name in names
    }
    draft = ImageCacheDraft(out_dir, images=arrays["images.npy"], masks=arrays.get("masks.npy"))
    try:
        yield draft
        if not draft.committed:
            raise RuntimeError(f"the cache in {out_dir} was filled but never committed")
    finally:
        for name in (*IMAGE_CACHE_FILES, "manifest.json"):
            _partial(out_dir / name).unlink(missing_ok=True)


def _partial(path: Path) -> Path:
    """Where ``path`` is written before it is moved into place."""
    return path.with_name(path.name + ".partial")


def open_prepared(cache_dir: Path) -> PreparedDataset:
    """Open a complete cache: memory-mapped images and their meta rows."""
    manifest = cache_dir / "manifest.json"
    if not manifest.exists() or not json.loads(manifest.read_text()).get("complete"):
        raise ValueError(f"{cache_dir} is not a complete dataset cache")
    images = np.load(cache_dir / "images.npy", mmap_mode="r")
    meta = pd.read_csv(cache_dir / "meta.csv", dtype={"image_id": str, "patient_id": str})
    for col in ("kl", "kl_true", "cppd", "cppd_true"):
        if col in meta:
            meta[col] = meta[col].astype("Int64")
    return PreparedDataset(images=images, meta=meta, cache_dir=cache_dir)


def load_masks(cache_dir: Path) -> np.ndarray | None:
    """The lesion masks (N, S, S) uint8 of a phantom cache (memory-mapped), else None.

    Each pixel holds :data:`engine.phantom.MASK_BITS` flags; imported films have no masks.
    """
    path = cache_dir / "masks.npy"
    return np.load(path, mmap_mode="r") if path.exists() else None
