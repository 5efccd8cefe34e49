"""Which knee detector an import uses: the classical one or a trained YOLO detector.

`choose_detector` turns a choice (``latest``, ``classical`` or a trained detector's key) into
a `DetectorInfo`, reading the registry's records only (`engine.detect.registry`); a trained
detector is loaded once per process (`knee_detector`), on CPU, and ultralytics is imported
only then, never for a classical import.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.detect.registry import CLASSICAL, LATEST, DetectorRecord, choose_record
from engine.detect.yolo import (
    YOLO_EXTRA,
    KneeDetector,
    YoloUnavailableError,
    load_detector,
    yolo_available,
)


@dataclass(frozen=True)
class DetectorInfo:
    """Which knee detector locates the knees, and how it scored on held-out boxes.

    Attributes:
        name: 'classical' (`engine.detect.detect_knee_box`) or 'YOLOv8n' (a trained
            detector, `engine.detect.yolo`).
        key: 'classical', or the trained detector's key (its folder's name).
        held_out_iou: Mean IoU on the detector's held-out films (a trained detector's only).
        held_out_map: mAP at IoU 0.5 on them (ultralytics' ``map50``; trained only).
        folder: The trained detector's folder ('' for the classical detector).
        trained_on: What a trained detector was trained on, in words.
    """

    name: str
    key: str = CLASSICAL
    held_out_iou: float | None = None
    held_out_map: float | None = None
    folder: str = ""
    trained_on: str = ""

    @property
    def trained(self) -> bool:
        """A trained YOLO detector (not the classical fallback)."""
        return self.key != CLASSICAL


CLASSICAL_DETECTOR = DetectorInfo("classical")


def trained_detector_info(record: DetectorRecord, detectors_dir: Path) -> DetectorInfo:
    """The `DetectorInfo` of a trained detector's record (`DetectorRecord`)."""
    held = record.held_out or {}

    def score(name: str) -> float | None:
        value = held.get(name)
        return None if value is None or value != value else float(value)  # NaN: not scored

    return DetectorInfo(
        name="YOLOv8n",
        key=record.key,
        held_out_iou=score("mean_iou"),
        held_out_map=score("map50"),
        folder=str(Path(detectors_dir) / record.key),
        trained_on=record.trained_on,
    )


def choose_detector(detectors_dir: Path, choice: str = LATEST) -> DetectorInfo:
    """The detector an import uses: ``latest`` (the newest trained detector in
    ``detectors_dir``, the classical one when none is trained), ``classical``, or a trained
    detector's key. Reads records only: ultralytics is not imported here.

    Raises:
        ValueError: No trained detector has that key (the message lists the known ones).
    """
    if choice == LATEST and not yolo_available():
        return CLASSICAL_DETECTOR  # trained detectors need ultralytics: the `yolo` extra
    record = choose_record(detectors_dir, choice)
    if record is not None and not yolo_available():
        raise YoloUnavailableError(f"detector {choice!r}: {YOLO_EXTRA}")
    return CLASSICAL_DETECTOR if record is None else trained_detector_info(record, detectors_dir)


def detector_from_params(params: dict[str, Any]) -> DetectorInfo:
    """The detector a folder dataset's params name (``detector`` and ``detectors_dir``);
    the classical detector when they name none (datasets imported before detectors).

    Raises:
        ValueError: The named detector is not in its folder (any more).
    """
    key = str(params.get("detector") or CLASSICAL)
    if key == CLASSICAL:
        return CLASSICAL_DETECTOR
    if not params.get("detectors_dir"):
        raise ValueError(
            f"dataset.detector: {key!r} needs dataset.detectors_dir (the detectors folder)"
        )
    detectors_dir = Path(str(params["detectors_dir"])).expanduser()
    try:
        return choose_detector(detectors_dir, key)
    except ValueError as exc:
        raise ValueError(f"dataset.detector: {exc}") from exc


@functools.lru_cache(maxsize=2)
def loaded_detector(folder: str) -> KneeDetector:
    """A trained detector loaded once per process (CPU)."""
    return load_detector(Path(folder), device="cpu")


def knee_detector(detector: DetectorInfo) -> KneeDetector | None:
    """The trained detector to pass to `engine.detect.find_knees` (None: classical)."""
    return loaded_detector(detector.folder) if detector.trained else None


def detector_note(detector: DetectorInfo = CLASSICAL_DETECTOR) -> str:
    """The import report's note on which detector located the knees."""
    if detector.trained:
        scores = ", ".join(
            f"{what} {value:.3f}"
            for what, value in (
                ("held-out mean IoU", detector.held_out_iou),
                ("mAP50", detector.held_out_map),
            )
            if value is not None
        )
        return (
            f"knees located by the trained YOLOv8n detector {detector.key} "
            f"({detector.trained_on}{'; ' + scores if scores else ''})"
        )
    return (
        "knees located by the classical detector (no trained detector chosen or none "
        "trained); its confidence is how much of the film's contrast is large structure "
        "(noise and blank films score near 0)"
    )
