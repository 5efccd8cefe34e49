"""Decoding the films of an import and locating their knees (the import check's film half).

`inspect_files` decodes every file once (in worker processes when there are many) and
returns a small `FilmCheck` per file: its size, whether it decodes, its pixel hash (for
copies under two names), its DICOM tags and, where asked, the knees the detector finds
(with their sides). `film_knees` / `locate_knees` are the one place the import asks for
knees; `knee_for_side` picks the knee a labels row is cropped around.

The detector is a `DetectorInfo`: the classical one, or a trained YOLO detector chosen by
`choose_detector` (newest, by key) from ``$SOFTGRADE_HOME/detectors``. A trained one is
loaded once per process (`knee_detector`; in the pool's initializer for workers), on CPU;
ultralytics is imported only then, never for a classical import.
"""

from __future__ import annotations

import functools
import hashlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.detect import Box, KneeDetection, assign_sides, detect_knee_box, find_knees
from engine.importing import FILM_FORMATS, MIN_FILM_SIDE, grey_film, is_dicom, read_dicom
from engine.spawn import spawn_pool

# Fewer films than this are decoded in this process: starting workers costs more.
PARALLEL_FROM = 200
#: The classical detector's key (`DetectorInfo.key`); `engine.yolo.CLASSICAL` says the same.
CLASSICAL = "classical"

Progress = Callable[[int, int, float], None]
"""Called as films are decoded: (films done, films in all, films per second)."""


@dataclass(frozen=True)
class FilmCheck:
    """What decoding one file found (small: workers send these back, never pixels).

    ``knees`` are the knees found, from the viewer's left to right: (the patient's side, 'R',
    'L' or '' when the film does not say; the detector's confidence). ``knee_confidence`` is
    the most confident one's (None when knees were not looked for).
    """

    file: str
    size_bytes: int
    error_kind: str = ""
    error: str = ""
    width_px: int = 0
    height_px: int = 0
    pixels_hash: str = ""
    knee_confidence: float | None = None
    n_knees: int = 0
    knees: tuple[tuple[str, float], ...] = ()
    patient_tag: str = ""
    laterality_tag: str = ""
    uid_tag: str = ""

    @property
    def ok(self) -> bool:
        """Decoded, big enough (knee problems are reported separately)."""
        return not self.error_kind


@dataclass(frozen=True)
class DetectorInfo:
    """Which knee detector locates the knees, and how it scored on held-out boxes.

    Attributes:
        name: 'classical' (`engine.detect.detect_knee_box`) or 'YOLOv8n' (a trained
            detector, `engine.yolo`).
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


def trained_detector_info(record: Any, detectors_dir: Path) -> DetectorInfo:
    """The `DetectorInfo` of a trained detector's record (`engine.yolo.DetectorRecord`)."""
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


def choose_detector(detectors_dir: Path, choice: str = "latest") -> DetectorInfo:
    """The detector an import uses: ``latest`` (the newest trained detector in
    ``detectors_dir``, the classical one when none is trained), ``classical``, or a trained
    detector's key. Reads records only: ultralytics is not imported here.

    Raises:
        ValueError: No trained detector has that key (the message lists the known ones).
    """
    from engine.yolo import choose_detector as choose_record

    record = choose_record(detectors_dir, choice)
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
def _loaded_detector(folder: str) -> Any:
    """A trained detector loaded once per process (CPU)."""
    from engine.yolo import load_detector

    return load_detector(Path(folder), device="cpu")


def knee_detector(detector: DetectorInfo) -> Any:
    """The trained detector to pass to `engine.detect.find_knees` (None: classical)."""
    return _loaded_detector(detector.folder) if detector.trained else None


# -- decoding --------------------------------------------------------------------------------


def inspect_files(
    root: Path,
    files: Sequence[str],
    *,
    detect: bool = True,
    workers: int | None = None,
    progress: Progress | None = None,
    detector: DetectorInfo = CLASSICAL_DETECTOR,
) -> dict[str, FilmCheck]:
    """Decode every file once (in ``workers`` processes; see `check_import`).

    A trained ``detector`` is loaded once per worker process (CPU, one thread each), when the
    pool starts; the classical detector needs no loading, and ultralytics is then never
    imported.

    Returns:
        file → its `FilmCheck`, for every file.
    """
    total = len(files)
    if workers is None:
        workers = _default_workers() if total >= PARALLEL_FROM else 1
    folder = detector.folder if detect and detector.trained else ""
    tasks = [(str(root), f, detect, folder) for f in files]
    start = time.perf_counter()
    out: dict[str, FilmCheck] = {}
    if workers <= 1 or total < 2:
        results = map(_inspect_task, tasks)
        pool = None
    else:
        # spawn: safe from a threaded caller (Streamlit) and loads no torch into workers;
        # spawn_pool keeps a Streamlit page (sys.modules["__main__"]) out of the children.
        pool = spawn_pool(workers, _init_worker, (folder,))
        chunk = max(1, min(32, total // (workers * 8)))
        results = pool.imap_unordered(_inspect_task, tasks, chunksize=chunk)
    try:
        for done, check in enumerate(results, start=1):
            out[check.file] = check
            if progress is not None:
                progress(done, total, done / max(time.perf_counter() - start, 1e-9))
    except BaseException:
        if pool is not None:
            pool.terminate()  # interrupted: the remaining films need not be decoded
        raise
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    return out


def _default_workers() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(8, cpus))


def _init_worker(detector_folder: str = "") -> None:
    import cv2

    cv2.setNumThreads(1)  # one film per process at a time; threads would only contend
    if detector_folder:
        _loaded_detector(detector_folder)  # once per worker, not once per film
        import ultralytics.utils.torch_utils as torch_utils

        torch_utils.NUM_THREADS = 1  # the detector's inference threads, per worker


def _inspect_task(task: tuple[str, str, bool, str]) -> FilmCheck:
    root, file, detect, folder = task
    detector = DetectorInfo("YOLOv8n", key=Path(folder).name, folder=folder) if folder else None
    return inspect_film(
        Path(root) / file, file, detect=detect, detector=detector or CLASSICAL_DETECTOR
    )


class _FilmError(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def inspect_film(
    path: Path, file: str, *, detect: bool = True, detector: DetectorInfo = CLASSICAL_DETECTOR
) -> FilmCheck:
    """Decode one film and measure what the checks need; never raises for a bad file
    (a trained detector that cannot be loaded does raise: it is no film's fault)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return FilmCheck(file, 0, "unreadable", f"cannot be read ({exc.strerror or exc})")
    if not data:
        return FilmCheck(file, 0, "empty_file", "empty file (0 bytes)")
    tags = ("", "", "")
    try:
        if is_dicom(data[:132]):
            film, dicom_tags = _decode_dicom(data, file)
            tags = (dicom_tags.patient_id, dicom_tags.laterality, dicom_tags.sop_instance_uid)
        else:
            film = _decode_pillow(data)
    except _FilmError as exc:
        return FilmCheck(file, len(data), exc.kind, str(exc))
    except Exception as exc:  # any decoder failure means "cannot be read"
        return FilmCheck(file, len(data), "unreadable", f"cannot be decoded ({exc})")
    h, w = film.shape
    digest = hashlib.blake2b(f"{h}x{w}".encode(), digest_size=16)
    digest.update(np.ascontiguousarray(film).data)
    base = {
        "file": file,
        "size_bytes": len(data),
        "width_px": w,
        "height_px": h,
        "pixels_hash": digest.hexdigest(),
        "patient_tag": tags[0],
        "laterality_tag": tags[1],
        "uid_tag": tags[2],
    }
    if min(h, w) < MIN_FILM_SIDE:
        return FilmCheck(
            **base,
            error_kind="too_small",
            error=f"{w} x {h} px; a film needs at least {MIN_FILM_SIDE} px a side",
        )
    if not detect:
        return FilmCheck(**base)
    laterality = tags[1] or None
    knees = locate_knees(film, laterality=laterality, detector=detector)
    confidence = max((c for _, c in knees), default=0.0)
    sided = assign_sides([KneeDetection(box, c) for box, c in knees], _known_tag(laterality))
    return FilmCheck(
        **base,
        knee_confidence=confidence,
        n_knees=len(knees),
        knees=tuple((k.side or "", float(k.confidence)) for k in sided),
    )


def _known_tag(laterality: str | None) -> str:
    """A DICOM laterality tag `engine.detect` understands ('' for any other value)."""
    tag = (laterality or "").strip().upper()
    return tag if tag in ("R", "L", "B", "U") else ""


def _decode_dicom(data: bytes, file: str) -> tuple[np.ndarray, object]:
    try:
        return read_dicom(data, file)
    except ValueError as exc:
        message = str(exc).removeprefix(file).lstrip(": ")
        raise _FilmError("unreadable", message) from exc


def _decode_pillow(data: bytes) -> np.ndarray:
    import io

    from PIL import Image, UnidentifiedImageError

    allowed = ", ".join(("DICOM", *FILM_FORMATS))
    try:
        image = Image.open(io.BytesIO(data))
    except UnidentifiedImageError as exc:
        what = "a text file" if _looks_like_text(data) else "no image SoftGrade can read"
        raise _FilmError("unreadable", f"{what}, not a film (allowed: {allowed})") from exc
    with image:
        if image.format not in FILM_FORMATS:
            raise _FilmError("unreadable", f"a {image.format} image; give a {allowed} film")
        try:
            return grey_film(image)
        except OSError as exc:
            raise _FilmError(
                "unreadable", f"a {image.format} whose data is cut short or corrupt ({exc})"
            ) from exc


def _looks_like_text(data: bytes) -> bool:
    head = data[:512]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(ch.isprintable() or ch in "\r\n\t" for ch in text)


# -- knee localisation -----------------------------------------------------------------------


def film_knees(
    film: np.ndarray,
    laterality: str | None = None,
    detector: DetectorInfo = CLASSICAL_DETECTOR,
) -> list[KneeDetection]:
    """The knees found on a film, from the viewer's left to right, with their sides.

    `engine.detect.find_knees` with the chosen detector (up to two knees; sides from their
    position, or the film's DICOM laterality tag; see `engine.detect`).
    """
    return find_knees(
        film, detector=knee_detector(detector), laterality=_known_tag(laterality) or None
    )


def locate_knees(
    film: np.ndarray,
    laterality: str | None = None,
    detector: DetectorInfo = CLASSICAL_DETECTOR,
) -> list[tuple[Box, float]]:
    """The knees found on a film, each a box and the detector's confidence (0 to 1), from
    the viewer's left to right (`film_knees` without the sides).

    The one place the import check asks for knees.
    """
    found = film_knees(film, laterality=laterality, detector=detector)
    return [(tuple(k.box), float(k.confidence)) for k in found]


def knee_for_side(knees: Sequence[KneeDetection], side: str | None) -> tuple[Box, float] | None:
    """The knee a row of the labels is cropped around, and its confidence.

    With a side (L/R) and that side among the knees: that knee. Otherwise the most
    confident knee (a single-knee film's knee, whatever side its row gives; the import check
    reports a row without a side on a film with two knees). None when no knee was found.
    """
    if not knees:
        return None
    chosen = next((k for k in knees if side and k.side == side), None)
    if chosen is None:
        chosen = max(knees, key=lambda k: k.confidence)
    return tuple(int(round(v)) for v in chosen.box), float(chosen.confidence)


def best_knee(
    film: np.ndarray,
    side: str | None = None,
    *,
    laterality: str | None = None,
    detector: DetectorInfo = CLASSICAL_DETECTOR,
) -> tuple[Box, float]:
    """The knee a crop is taken around (`knee_for_side`) and its confidence (the classical
    box with confidence 0 when no knee is found at all)."""
    chosen = knee_for_side(film_knees(film, laterality=laterality, detector=detector), side)
    return chosen if chosen is not None else (detect_knee_box(film), 0.0)


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
