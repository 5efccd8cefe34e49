"""The registry of trained knee detectors: their records and folders, read without ultralytics.

A trained detector lives in ``<detectors>/<key>/`` (``SOFTGRADE_HOME/detectors`` in the
app): ``detector.pt`` and ``record.json`` (:class:`DetectorRecord`: what it was trained on,
image size, epochs, held-out IoU and mAP, when). The key hashes what decides the weights:
every film's pixels, every box and the training settings; training again on the same input
returns the stored detector. Choosing a detector (`choose_record`) reads records only, so
an import that uses the classical detector never imports ultralytics.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

WEIGHTS_FILE = "detector.pt"
RECORD_FILE = "record.json"
#: A detector's input side is a whole number of its largest stride (YOLOv8's is 32 px).
DETECTOR_STRIDE = 32


def detector_size_problem(image_size: object) -> str:
    """What is wrong with a detector's training and inference size ('' when nothing is: a
    whole multiple of `DETECTOR_STRIDE` px, at least one stride)."""
    whole = isinstance(image_size, int) and not isinstance(image_size, bool)
    if not whole or image_size < DETECTOR_STRIDE or image_size % DETECTOR_STRIDE:
        return (
            f"image size {image_size!r} must be a multiple of {DETECTOR_STRIDE}, at least "
            f"{DETECTOR_STRIDE}"
        )
    return ""


def detector_key(
    films: Sequence[np.ndarray], boxes: Sequence[Sequence[Sequence[int]]], settings: dict
) -> str:
    """Short hash of what decides a detector: every film's pixels, every box, the settings."""
    h = hashlib.sha256()
    for film, film_boxes in zip(films, boxes, strict=True):
        h.update(f"{film.shape}".encode())
        h.update(hashlib.sha1(np.ascontiguousarray(film).tobytes()).digest())
        h.update(json.dumps([[int(v) for v in b] for b in film_boxes]).encode())
    h.update(json.dumps(settings, sort_keys=True).encode())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class DetectorRecord:
    """What a trained detector is and how well it placed boxes on films it never saw.

    Attributes:
        key: hash of the training input (films' pixels, boxes, settings); its folder name.
        path: the weights file.
        trained_on: what the films were, in words (e.g. "phantom seed=101, 200 films").
        model: the ultralytics architecture file (trained from scratch).
        image_size: training and inference image size (px, the film's longer side).
        epochs: training epochs.
        n_films / n_train / n_held_out: films given, trained on, held out.
        n_knees: knee boxes over all films.
        held_out: :class:`engine.detect.DetectionMetrics` on the held-out films (through
            :func:`engine.detect.find_knees`) plus ultralytics' ``map50`` and ``map50_95``.
        train_seconds: wall time of the training itself.
        device: where it was trained.
        ultralytics_version: the library version.
        created_at: ISO 8601 UTC time the record was written.
        settings: the training settings that went into ``key``.
    """

    key: str
    path: str
    trained_on: str
    model: str
    image_size: int
    epochs: int
    n_films: int
    n_train: int
    n_held_out: int
    n_knees: int
    held_out: dict[str, float]
    train_seconds: float
    device: str
    ultralytics_version: str
    created_at: str
    settings: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        """The record as indented JSON."""
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> DetectorRecord:
        """A record from :meth:`to_json` output."""
        return cls(**json.loads(text))


def find_detector(detectors_dir: Path, key: str) -> Path | None:
    """The folder of the detector with ``key`` if it is complete, else None."""
    folder = Path(detectors_dir) / key
    done = (folder / WEIGHTS_FILE).is_file() and (folder / RECORD_FILE).is_file()
    return folder if done else None


#: Detector choices besides a trained detector's key: the newest trained one (classical when
#: none is trained), or the classical detector (`engine.detect.detect_knee_box`).
LATEST = "latest"
CLASSICAL = "classical"


def read_record(folder: Path) -> DetectorRecord:
    """The record of a trained detector's folder (no ultralytics needed)."""
    return DetectorRecord.from_json((Path(folder) / RECORD_FILE).read_text())


def list_detectors(detectors_dir: Path) -> list[DetectorRecord]:
    """Every complete trained detector in ``detectors_dir``, newest first.

    Complete: its folder is named by its key and holds weights and a readable record;
    ultralytics' config folder and a training still being written (``.<key>.partial``) are
    not detectors. Newest is by the record's ``created_at`` (ISO 8601 UTC), then key.
    """
    folder = Path(detectors_dir)
    if not folder.is_dir():
        return []
    records = []
    for entry in folder.iterdir():
        if entry.name.startswith(".") or find_detector(folder, entry.name) is None:
            continue
        try:
            record = read_record(entry)
        except (OSError, ValueError, TypeError) as exc:
            logger.warning("skipping detector folder %s: unreadable record (%s)", entry, exc)
            continue
        if record.key == entry.name:
            records.append(record)
    return sorted(records, key=lambda r: (r.created_at, r.key), reverse=True)


def latest_detector(detectors_dir: Path) -> DetectorRecord | None:
    """The newest complete trained detector in ``detectors_dir`` (None: none is trained)."""
    found = list_detectors(detectors_dir)
    return found[0] if found else None


def choose_record(detectors_dir: Path, choice: str = LATEST) -> DetectorRecord | None:
    """The trained detector a choice names, or None for the classical detector.

    Args:
        detectors_dir: ``SOFTGRADE_HOME/detectors``.
        choice: ``"latest"`` (the newest trained detector; classical when none is trained),
            ``"classical"``, or a trained detector's key.

    Raises:
        ValueError: ``choice`` is no trained detector's key; the message lists the keys.
    """
    choice = (choice or LATEST).strip()
    if choice == CLASSICAL:
        return None
    if choice == LATEST:
        return latest_detector(detectors_dir)
    for record in list_detectors(detectors_dir):
        if record.key == choice:
            return record
    known = [f"{r.key} ({r.trained_on}, {r.created_at})" for r in list_detectors(detectors_dir)]
    listed = "; ".join(known) if known else f"none is trained in {detectors_dir}"
    raise ValueError(
        f"no trained detector {choice!r}; choose {LATEST}, {CLASSICAL} or a trained "
        f"detector's key: {listed}"
    )
