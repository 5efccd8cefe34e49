"""Preparing a dataset: the one place that chooses a cache builder by the dataset's kind."""

from __future__ import annotations

import os
from pathlib import Path

from engine.config import DatasetSpec
from engine.datasets.cache import PreparedDataset, cache_dir_for, open_prepared
from engine.datasets.folder_cache import build_folder_cache
from engine.datasets.phantom_cache import build_phantom_cache
from engine.phantom import PhantomSpec

#: Films one rendering process should have before another is worth starting: a spawned
#: renderer first imports the stack (~1.3 s of CPU) while a film takes ~0.012 s, so a small
#: phantom (a demo's or a test's 60 films) renders sooner in this process than in a pool
#: (bench/RESULTS.md, "Phantom rendering processes"); two processes pay off from ~200 films.
FILMS_PER_RENDER_PROCESS = 200


def phantom_render_processes(n_images: int, cpus: int | None = None) -> int:
    """How many processes render a phantom of ``n_images`` films: one per
    :data:`FILMS_PER_RENDER_PROCESS` films, at most one per CPU and at most 8, at least 1."""
    cpus = cpus if cpus is not None else (os.cpu_count() or 1)
    return max(1, min(8, cpus, n_images // FILMS_PER_RENDER_PROCESS))


def prepare_dataset(spec: DatasetSpec, image_size: int, root: Path) -> PreparedDataset:
    """Build (or reuse) the cache of ``spec`` at ``image_size`` and open it.

    Raises:
        ValueError: The dataset's parameters or files are invalid (message says which).
    """
    out = cache_dir_for(spec, image_size, root)
    if spec.kind == "phantom":
        phantom = PhantomSpec(**spec.params)
        workers = phantom_render_processes(phantom.n_images)
        build_phantom_cache(phantom, image_size, out, workers=workers)
    else:
        build_folder_cache(spec.params, image_size, out)
    return open_prepared(out)
