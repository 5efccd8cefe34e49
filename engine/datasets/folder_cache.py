"""The folder cache builder: an imported folder's films cropped to their knees and cached.

Each image is read as grey, cropped to its knee (the box a crop review set, else the labels'
box, else the detector's knee of its side, `engine.films.knee_for_side`), resized and written
to the same cache layout as the phantom (`engine.datasets.cache`: ``images.npy``,
``meta.csv``, then ``manifest.json`` last).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.datasets.cache import image_cache_writer
from engine.detect import crop_and_resize, detect_knee_box, detector_from_params
from engine.films import (
    GIVEN_SPLIT,
    LABEL_BOX_COLUMNS,
    film_knees,
    image_id_for,
    knee_for_side,
    read_film_and_laterality,
    read_labels,
    read_review_csv,
    row_box,
)
from engine.vocab import Box

log = logging.getLogger(__name__)

#: Columns a folder cache's ``meta.csv`` adds per film: the box it was cropped around (film
#: pixels), the detector's confidence (empty for a reviewed or labelled box) and where the box
#: came from: 'detector', 'labels' (the labels CSV's box) or 'review' (a crop review's).
BOX_META_COLUMNS = ("x0", "y0", "x1", "y1", "knee_confidence", "box_source")

#: Called as films are cropped: (films done, films in all).
CacheProgress = Callable[[int, int], None]


def build_folder_cache(
    params: dict[str, Any],
    image_size: int,
    out_dir: Path,
    *,
    progress: CacheProgress | None = None,
) -> Path:
    """Crop, resize and cache an imported folder (idempotent, manifest written last).

    Each row of the labels (a film, or one knee of a film listed once per knee) is cropped
    around, in order of precedence: its reviewed box when the spec names a crop review
    (``params["review_csv"]``, see `read_review_csv`; box_source 'review'); the box its
    labels row gives (`LABEL_BOX_COLUMNS`; 'labels'); else the knee the detector finds on
    its side of the film (`engine.films.knee_for_side`; 'detector'). The detector is
    the one the params name (``detector``: a trained detector's key in ``detectors_dir``,
    or 'classical', the default), and the manifest records it, so a cache cropped by one
    detector is never reused for another. Films the review excludes are not in the cache,
    so no split of this dataset ever holds them. ``meta.csv`` records each film's box and
    its source (`BOX_META_COLUMNS`).

    Args:
        params: The folder dataset's parameters: ``path``, ``labels_csv`` and optionally
            ``review_csv``, ``detector`` and ``detectors_dir``.
        image_size: Side of the cached crops (px).
        out_dir: The cache folder.
        progress: Called after each film with (done, total).
    """
    folder = Path(params["path"]).expanduser()
    labels_csv = Path(params.get("labels_csv", folder / "labels.csv")).expanduser()
    table = read_labels(folder, labels_csv)
    review_digest = None
    excluded: set[str] = set()
    boxes: dict[str, Box] = {}
    if params.get("review_csv"):
        review_csv = Path(params["review_csv"]).expanduser()
        excluded, boxes = read_review_csv(review_csv)
        review_digest = hashlib.sha1(review_csv.read_bytes()).hexdigest()
        table = table[~table["image_id"].isin(excluded)].reset_index(drop=True)
    if table.empty:
        raise ValueError("dataset: the crop review excludes every film; keep at least one")
    detector = detector_from_params(params)
    # What decides the crops: films, grades, and (only where a CSV has them, so caches of
    # plain CSVs stay valid) the knees' ids and the boxes the labels give.
    hashed = ["image", "kl", "cppd"]
    if (table["image_id"] != table["image"].map(image_id_for)).any():
        hashed += ["side", "image_id"]
    hashed += [c for c in LABEL_BOX_COLUMNS if c in table]
    digest = hashlib.sha1(pd.util.hash_pandas_object(table[hashed]).values.tobytes()).hexdigest()
    manifest = {
        "kind": "folder",
        "path": str(folder),
        "image_size": image_size,
        "labels_sha1": digest,
        "review_sha1": review_digest,
        "detector": detector.key,
        "meta_columns": list(BOX_META_COLUMNS),
        "complete": True,
    }
    manifest_path = out_dir / "manifest.json"
    if manifest_path.exists() and json.loads(manifest_path.read_text()) == manifest:
        return out_dir
    placed = []
    film_of: dict[str, tuple[np.ndarray, str]] = {}  # the last film: a knee's pair is next
    with image_cache_writer(out_dir, len(table), image_size) as cache:
        for i, row in enumerate(table.itertuples(index=False)):
            if row.source not in film_of:
                film_of = {row.source: read_film_and_laterality(Path(row.source))}
            film, laterality = film_of[row.source]
            given = row_box(row)
            if row.image_id in boxes:
                box, confidence, where = boxes[row.image_id], None, "review"
            elif given is not None:
                box, confidence, where = given, None, "labels"
            else:
                knees = film_knees(film, laterality=laterality, detector=detector)
                found = knee_for_side(knees, row.side)
                box, confidence = found if found is not None else (detect_knee_box(film), 0.0)
                where = "detector"
            cache.images[i] = crop_and_resize(film, box, image_size)
            placed.append((*box, confidence, where))
            if progress is not None:
                progress(i + 1, len(table))
        columns = ["image_id", "patient_id", "side", "source", "kl", "kl_true", "cppd", "cppd_true"]
        columns += [GIVEN_SPLIT] if GIVEN_SPLIT in table else []
        boxes_placed = pd.DataFrame(placed, columns=list(BOX_META_COLUMNS))
        cache.commit(pd.concat([table[columns], boxes_placed], axis=1), manifest)
    log.info(
        "imported %d films from %s into %s with the %s detector (%d left out by crop review, "
        "%d reviewed boxes)",
        len(table),
        folder,
        out_dir,
        detector.key,
        len(excluded),
        len(boxes),
    )
    return out_dir
