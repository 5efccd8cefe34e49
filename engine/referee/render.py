"""The referee's phantom datasets, rendered ahead of the training that reads them.

Rendering is CPU work and training GPU work, so the datasets are drawn by worker processes
while the parent trains: each worker renders a whole dataset (one process per dataset, in
order), and the parent takes them as they finish.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from pathlib import Path

import cv2

from engine.datasets import build_phantom_cache
from engine.phantom import PhantomSpec
from engine.spawn import spawn_pool

#: The referee's caches are cropped to the detected knee, as a study's are.
DETECTOR = "classical"


def cache_path(root: Path, spec: PhantomSpec, image_size: int) -> Path:
    """Where one phantom's cache lives under ``root``."""
    return Path(root) / f"phantom-{spec.seed}-{spec.n_images}x{image_size}px"


def build_one(spec: PhantomSpec, image_size: int, root: Path, *, workers: int = 1) -> Path:
    """Render one phantom into its cache (reused when complete) and return the folder."""
    out = cache_path(root, spec, image_size)
    return build_phantom_cache(spec, image_size, out, workers=workers, detector=DETECTOR)


def _build_job(job: tuple[PhantomSpec, int, Path]) -> Path:
    spec, image_size, root = job
    return build_one(spec, image_size, root)


def _init_worker() -> None:
    cv2.setNumThreads(1)  # one process per core; cv2's own threads would oversubscribe


def dataset_caches(
    specs: Sequence[PhantomSpec], image_size: int, root: Path, *, workers: int
) -> Generator[Path, None, None]:
    """Each spec's cache folder, in order, rendered ahead by ``workers`` processes.

    With ``workers`` 1 each is rendered in this process when asked for. Closing the iterator
    early (the referee stopped at its time limit) stops the workers.
    """
    jobs = [(spec, image_size, Path(root)) for spec in specs]
    if workers <= 1:
        for job in jobs:
            yield _build_job(job)
        return
    pool = spawn_pool(workers, _init_worker)
    try:
        yield from pool.imap(_build_job, jobs)
    finally:
        pool.terminate()
        pool.join()
