"""Decoding the films of an import and locating their knees (the import check's film half).

`inspect_files` decodes every file once (in worker processes when there are many) and
returns a small `FilmCheck` per file: its size, whether it decodes, its pixel hash (for
copies under two names), its DICOM tags and, where asked, the knees the detector finds.
`locate_knees` is the one place the import asks for knees; `best_knee` gives the crop's.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.detect import Box, detect_knee_box, find_knees
from engine.importing import FILM_FORMATS, MIN_FILM_SIDE, grey_film, is_dicom, read_dicom

# Fewer films than this are decoded in this process: starting workers costs more.
PARALLEL_FROM = 200

Progress = Callable[[int, int, float], None]
"""Called as films are decoded: (films done, films in all, films per second)."""


@dataclass(frozen=True)
class FilmCheck:
    """What decoding one file found (small: workers send these back, never pixels)."""

    file: str
    size_bytes: int
    error_kind: str = ""
    error: str = ""
    width_px: int = 0
    height_px: int = 0
    pixels_hash: str = ""
    knee_confidence: float | None = None
    n_knees: int = 0
    patient_tag: str = ""
    laterality_tag: str = ""
    uid_tag: str = ""

    @property
    def ok(self) -> bool:
        """Decoded, big enough (knee problems are reported separately)."""
        return not self.error_kind


@dataclass(frozen=True)
class DetectorInfo:
    """Which knee detector located the knees, and how it scored on held-out boxes.

    Attributes:
        name: 'classical' (`engine.detect.detect_knee_box`) or a trained detector's name.
        held_out_iou: Mean IoU on held-out boxes (a trained detector's only).
        held_out_map: mAP on held-out boxes (a trained detector's only).
    """

    name: str
    held_out_iou: float | None = None
    held_out_map: float | None = None


CLASSICAL_DETECTOR = DetectorInfo("classical")


# -- decoding --------------------------------------------------------------------------------


def inspect_files(
    root: Path,
    files: Sequence[str],
    *,
    detect: bool = True,
    workers: int | None = None,
    progress: Progress | None = None,
) -> dict[str, FilmCheck]:
    """Decode every file once (in ``workers`` processes; see `check_import`).

    Returns:
        file → its `FilmCheck`, for every file.
    """
    total = len(files)
    if workers is None:
        workers = _default_workers() if total >= PARALLEL_FROM else 1
    tasks = [(str(root), f, detect) for f in files]
    start = time.perf_counter()
    out: dict[str, FilmCheck] = {}
    if workers <= 1 or total < 2:
        results = map(_inspect_task, tasks)
        pool = None
    else:
        # spawn: safe from a threaded caller (Streamlit) and loads no torch into workers.
        pool = multiprocessing.get_context("spawn").Pool(workers, initializer=_init_worker)
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


def _init_worker() -> None:
    import cv2

    cv2.setNumThreads(1)  # one film per process at a time; threads would only contend


def _inspect_task(task: tuple[str, str, bool]) -> FilmCheck:
    root, file, detect = task
    return inspect_film(Path(root) / file, file, detect=detect)


class _FilmError(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def inspect_film(path: Path, file: str, *, detect: bool = True) -> FilmCheck:
    """Decode one film and measure what the checks need; never raises for a bad file."""
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
    except Exception as exc:  # noqa: BLE001 - any decoder failure means "cannot be read"
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
    knees = locate_knees(film, laterality=tags[1] or None)
    confidence = max((c for _, c in knees), default=0.0)
    return FilmCheck(**base, knee_confidence=confidence, n_knees=len(knees))


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


def locate_knees(film: np.ndarray, laterality: str | None = None) -> list[tuple[Box, float]]:
    """The knees found on a film, each a box and the detector's confidence (0 to 1).

    The one place the import asks for knees: `engine.detect.find_knees` (the classical
    detector with its own confidence; a trained detector once imports are given one).
    """
    found = find_knees(film, laterality=laterality)
    return [(tuple(k.box), float(k.confidence)) for k in found]


def best_knee(film: np.ndarray) -> tuple[Box, float]:
    """The knee a crop is taken around: the most confident of `locate_knees`, and its
    confidence (the classical box with confidence 0 when no knee is found at all)."""
    knees = locate_knees(film)
    if not knees:
        return detect_knee_box(film), 0.0
    box, confidence = max(knees, key=lambda knee: knee[1])
    return tuple(int(round(v)) for v in box), confidence


def current_detector() -> DetectorInfo:
    """The detector `locate_knees` uses: imports call `find_knees` without a trained
    detector, so the classical one (a trained YOLO detector is not wired into imports yet)."""
    return CLASSICAL_DETECTOR


def detector_note() -> str:
    """The import report's note on which detector located the knees."""
    from engine import detect

    if getattr(detect, "find_knees", None) is not None:
        return "knees located by engine.detect.find_knees (its confidence is reported)"
    return (
        "knees located by the classical detector; its confidence is how much of the film's "
        "contrast is large structure (noise and blank films score near 0)"
    )
