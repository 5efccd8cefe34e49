"""Decoding the films of an import and locating their knees (the import check's film half).

`inspect_files` decodes every file once (in worker processes when there are many) and
returns a small `FilmCheck` per file: its size, whether it decodes, its pixel hash (for
copies under two names), its DICOM tags and, where asked, the knees the detector finds
(with their sides). `film_knees` / `locate_knees` are the one place the import asks for
knees; `knee_for_side` picks the knee a labels row is cropped around.

The detector is a `engine.detect.DetectorInfo`: the classical one, or a trained YOLO
detector chosen by `engine.detect.choose_detector` (newest, by key) from
``$SOFTGRADE_HOME/detectors``. A trained one is loaded once per process
(`engine.detect.knee_detector`; in the pool's initializer for workers), on CPU; ultralytics
is imported only then, never for a classical import.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.detect import (
    CLASSICAL_DETECTOR,
    DetectorInfo,
    KneeDetection,
    assign_sides,
    detect_knee_box,
    find_knees,
    knee_detector,
    loaded_detector,
)
from engine.films.decode import MIN_FILM_SIDE, decode_bytes
from engine.films.looks import look_hash
from engine.films.reading import FilmRefused, film_path_refusal, read_capped
from engine.spawn import spawn_pool
from engine.vocab import Box

# Fewer films than this are decoded in this process: starting workers costs more.
PARALLEL_FROM = 200

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
    look_hash: int = 0
    notes: tuple[tuple[str, str], ...] = ()

    @property
    def ok(self) -> bool:
        """Decoded, big enough (knee problems are reported separately)."""
        return not self.error_kind


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
        results: Iterator[FilmCheck] = map(_inspect_task, tasks)
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
        loaded_detector(detector_folder)  # once per worker, not once per film
        import ultralytics.utils.torch_utils as torch_utils

        torch_utils.NUM_THREADS = 1  # the detector's inference threads, per worker


def _inspect_task(task: tuple[str, str, bool, str]) -> FilmCheck:
    root, file, detect, folder = task
    detector = DetectorInfo("YOLOv8n", key=Path(folder).name, folder=folder) if folder else None
    return inspect_film(
        Path(root) / file,
        file,
        detect=detect,
        detector=detector or CLASSICAL_DETECTOR,
        root=Path(root),
    )


def inspect_film(
    path: Path,
    file: str,
    *,
    detect: bool = True,
    detector: DetectorInfo = CLASSICAL_DETECTOR,
    root: Path | None = None,
) -> FilmCheck:
    """Decode one film and measure what the checks need; never raises for a bad file
    (a trained detector that cannot be loaded does raise: it is no film's fault).

    With ``root`` (the imported folder), ``file`` must stay inside it (`film_path_refusal`:
    no absolute path, ``..`` or link leading out, only regular files) or it is never opened;
    the file is read through `read_capped` and decoded through `decode_bytes` (pixel caps
    from the header before decoding).
    """
    refusal = film_path_refusal(root, file) if root is not None else None
    if refusal is not None:
        return FilmCheck(file, 0, refusal.kind, refusal.reason)
    try:
        data = read_capped(path, file)
    except FilmRefused as exc:
        return FilmCheck(file, 0, exc.kind, exc.reason)
    if not data:
        return FilmCheck(file, 0, "empty_file", "empty file (0 bytes)")
    try:
        decoded = decode_bytes(data, file)
    except FilmRefused as exc:
        return FilmCheck(file, len(data), exc.kind, exc.reason)
    except Exception as exc:  # any decoder failure means "cannot be read"
        return FilmCheck(file, len(data), "unreadable", f"cannot be decoded ({exc})")
    film, tags = decoded.film, decoded.tags
    h, w = film.shape
    digest = hashlib.blake2b(f"{h}x{w}".encode(), digest_size=16)
    digest.update(np.ascontiguousarray(film).data)
    base = {
        "file": file,
        "size_bytes": len(data),
        "width_px": w,
        "height_px": h,
        "pixels_hash": digest.hexdigest(),
        "look_hash": look_hash(film),
        "patient_tag": tags.patient_id,
        "laterality_tag": tags.laterality,
        "uid_tag": tags.sop_instance_uid,
        "notes": decoded.notes,
    }
    if min(h, w) < MIN_FILM_SIDE:
        return FilmCheck(
            **base,
            error_kind="too_small",
            error=f"{w} x {h} px; a film needs at least {MIN_FILM_SIDE} px a side",
        )
    if not detect:
        return FilmCheck(**base)
    laterality = tags.laterality or None
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
    return [(k.box, float(k.confidence)) for k in found]


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
    x0, y0, x1, y1 = (int(round(v)) for v in chosen.box)
    return (x0, y0, x1, y1), float(chosen.confidence)


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
