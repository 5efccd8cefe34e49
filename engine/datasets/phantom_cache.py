"""The phantom's dataset cache: every film rendered in worker processes, cropped to the knee
and written as ``images.npy``, ``masks.npy``, ``meta.csv`` and, last, ``manifest.json``.

It lives outside `engine.phantom` because it crops with the knee detector, and
`engine.detect` draws its training sets from the phantom.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pandas as pd

import engine.detect.classical
import engine.phantom
from engine.datasets.cache import IMAGE_CACHE_FILES, image_cache_writer
from engine.detect.classical import box_iou, crop_and_resize, detect_knee_box
from engine.phantom import PhantomSpec, phantom_labels, render_film
from engine.spawn import spawn_pool

logger = logging.getLogger(__name__)

#: Human-readable generator version, recorded in cache manifests. Caches are also keyed
#: on a fingerprint of the source of engine.phantom, this module and the classical detector
#: (see _code_fingerprint), so any change to the drawing, the cropping or the detector
#: rebuilds them.
PHANTOM_VERSION = 1

# Per-process state for pool workers, set once by _init_worker (spawn-safe: everything
# arrives pickled through initargs, nothing relies on inherited globals).
_WORKER: dict[str, Any] = {}


def _init_worker(spec: PhantomSpec, labels: pd.DataFrame, image_size: int, detector: str) -> None:
    cv2.setNumThreads(1)  # one process per core; cv2's own threads would oversubscribe
    _WORKER.update(spec=spec, labels=labels, image_size=image_size, detector=detector)


def _render_range(bounds: tuple[int, int]) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """Render films [start, stop): crops (n, S, S), mask crops (n, S, S), boxes (n, 8)."""
    start, stop = bounds
    spec: PhantomSpec = _WORKER["spec"]
    labels: pd.DataFrame = _WORKER["labels"]
    size: int = _WORKER["image_size"]
    n = stop - start
    images = np.empty((n, size, size), np.uint8)
    masks = np.empty((n, size, size), np.uint8)
    boxes = np.empty((n, 8), np.int64)
    records = labels.iloc[start:stop].to_dict("records")
    for j, row in enumerate(records):
        film, mask, true_box = render_film(spec, row)
        det_box = detect_knee_box(film) if _WORKER["detector"] == "classical" else true_box
        images[j] = crop_and_resize(film, det_box, size)
        masks[j] = crop_and_resize(mask, det_box, size, nearest=True)
        boxes[j, :4] = true_box
        boxes[j, 4:] = det_box
    return start, images, masks, boxes


def fingerprinted_sources() -> list[Path]:
    """The source files whose bytes key a phantom cache: every module of `engine.phantom` (in
    name order, as when this module lived in that package), this module (the cropping) and
    the classical detector's module (the box it crops to). Nothing else, so changes elsewhere
    in engine/ leave phantom caches valid."""
    package = Path(engine.phantom.__file__).resolve().parent
    detector = Path(engine.detect.classical.__file__).resolve()
    return [*sorted(package.glob("*.py")), Path(__file__).resolve(), detector]


@functools.cache
def _code_fingerprint() -> str:
    """Short hash of the code that decides a cache's bytes (`fingerprinted_sources`)."""
    digest = hashlib.sha256()
    for path in fingerprinted_sources():
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _manifest(spec: PhantomSpec, image_size: int, detector: str) -> dict[str, Any]:
    return {
        "kind": "softgrade-phantom-cache",
        "phantom_version": PHANTOM_VERSION,
        "code_fingerprint": _code_fingerprint(),
        "spec": spec.to_dict(),
        "image_size": image_size,
        "detector": detector,
        "files": list(IMAGE_CACHE_FILES),
    }


def is_complete_cache(out_dir: Path, spec: PhantomSpec, image_size: int, detector: str) -> bool:
    """Whether ``out_dir`` holds a finished cache of exactly this spec, size and detector."""
    path = Path(out_dir) / "manifest.json"
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    want = _manifest(spec, image_size, detector)
    if not found.get("complete") or {k: found.get(k) for k in want} != want:
        return False
    return all((Path(out_dir) / f).is_file() for f in IMAGE_CACHE_FILES)


def build_phantom_cache(
    spec: PhantomSpec,
    image_size: int,
    out_dir: Path,
    *,
    workers: int = 2,
    detector: str = "classical",
) -> Path:
    """Render the phantom, crop every film to its knee and cache the crops.

    Writes into ``out_dir``, through :func:`engine.datasets.cache.image_cache_writer`:
    ``images.npy`` (N, S, S) uint8, ``masks.npy`` (N, S, S) uint8 MASK_BITS flags (cropped the
    same way, nearest-neighbour), ``meta.csv`` (the :func:`phantom_labels` columns plus
    ``true_x0..true_y1``, ``det_x0..det_y1`` in film pixels and ``box_iou``), and last
    ``manifest.json`` with ``"complete": true``. The manifest is removed before anything else
    is written and written atomically at the end, so an interrupted build never looks
    complete. Output depends only on (spec, image_size, detector), not on ``workers``.

    Args:
        spec: the phantom.
        image_size: side S of the cached crops in pixels.
        out_dir: cache folder (created if missing).
        workers: processes to render with (spawned); 1 renders in this process.
        detector: 'classical' (crop to :func:`engine.detect.detect_knee_box`) or 'truth'
            (crop to the true knee box).

    Returns:
        ``out_dir``.
    """
    _check_cache_arguments(image_size, workers, detector)
    out_dir = Path(out_dir)
    if is_complete_cache(out_dir, spec, image_size, detector):
        logger.info("phantom cache %s is complete; reusing it", out_dir)
        return out_dir

    labels = phantom_labels(spec)
    n = len(labels)
    logger.info("rendering %d phantom films at %d px with %d worker(s)", n, image_size, workers)
    with image_cache_writer(out_dir, n, image_size, with_masks=True) as cache:
        masks = cache.masks
        assert masks is not None  # with_masks=True
        boxes = _render_all(spec, labels, image_size, detector, workers, cache.images, masks)
        meta = _meta_with_boxes(labels, boxes)
        cache.commit(meta, _manifest(spec, image_size, detector) | {"n_images": n})
    logger.info("phantom cache written to %s (mean box IoU %.3f)", out_dir, meta["box_iou"].mean())
    return out_dir


def _check_cache_arguments(image_size: int, workers: int, detector: str) -> None:
    if not isinstance(image_size, int) or not 16 <= image_size <= 1024:
        raise ValueError(f"{image_size=} must be an int in [16, 1024]")
    if detector not in ("classical", "truth"):
        raise ValueError(f"{detector=} must be 'classical' or 'truth'")
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"{workers=} must be a positive int")


def _render_all(
    spec: PhantomSpec,
    labels: pd.DataFrame,
    image_size: int,
    detector: str,
    workers: int,
    images: np.ndarray,
    masks: np.ndarray,
) -> np.ndarray:
    """Render every film into ``images`` and ``masks`` (in place), in worker processes.

    Returns:
        (N, 8) int64: each film's true box, then the box it was cropped to.
    """
    n = len(labels)
    boxes = np.empty((n, 8), np.int64)
    # Chunks small enough to balance two workers, large enough to amortise pickling.
    chunk = max(1, min(64, -(-n // (workers * 8))))
    ranges = [(s, min(n, s + chunk)) for s in range(0, n, chunk)]
    initargs = (spec, labels, image_size, detector)
    if workers == 1:
        saved = dict(_WORKER)
        _init_worker(*initargs)
        try:
            _store_results(map(_render_range, ranges), images, masks, boxes)
        finally:
            _WORKER.clear()
            _WORKER.update(saved)
    else:
        with spawn_pool(workers, _init_worker, initargs) as pool:
            _store_results(pool.imap_unordered(_render_range, ranges), images, masks, boxes)
    return boxes


def _meta_with_boxes(labels: pd.DataFrame, boxes: np.ndarray) -> pd.DataFrame:
    """The label rows plus each film's true and cropped box and their IoU."""
    meta = labels.copy()
    for j, name in enumerate(
        ["true_x0", "true_y0", "true_x1", "true_y1", "det_x0", "det_y0", "det_x1", "det_y1"]
    ):
        meta[name] = boxes[:, j]
    meta["box_iou"] = [round(box_iou(b[:4], b[4:]), 4) for b in boxes]
    return meta


def _store_results(results: Any, images: np.ndarray, masks: np.ndarray, boxes: np.ndarray) -> None:
    for start, imgs, msks, bxs in results:
        images[start : start + len(imgs)] = imgs
        masks[start : start + len(msks)] = msks
        boxes[start : start + len(bxs)] = bxs
