"""Preparing a dataset: the one place that chooses a cache builder by the dataset's kind."""

from __future__ import annotations

import os
from pathlib import Path

from engine.config import DatasetSpec
from engine.datasets.cache import PreparedDataset, cache_dir_for, open_prepared
from engine.datasets.folder_cache import build_folder_cache
from engine.datasets.phantom_cache import build_phantom_cache
from engine.phantom import PhantomSpec


def prepare_dataset(spec: DatasetSpec, image_size: int, root: Path) -> PreparedDataset:
    """Build (or reuse) the cache of ``spec`` at ``image_size`` and open it.

    Raises:
        ValueError: The dataset's parameters or files are invalid (message says which).
    """
    out = cache_dir_for(spec, image_size, root)
    if spec.kind == "phantom":
        workers = max(1, min(8, os.cpu_count() or 1))
        build_phantom_cache(PhantomSpec(**spec.params), image_size, out, workers=workers)
    else:
        build_folder_cache(spec.params, image_size, out)
    return open_prepared(out)
