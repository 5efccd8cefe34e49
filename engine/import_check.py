"""The import check: every row and every film of a folder, all problems at once.

`check_import` reads a folder in one of the layouts of `engine.import_layouts`, decodes
every film once (in worker processes when there are many), and returns an `ImportReport`:
one row per problem (file, CSV line, problem, what to do) and the good films, i.e. those a
dataset registered from this import would hold. Nothing is queued or stored here.

What is checked:

- each film: not empty, decodable (DICOM, PNG, JPEG, TIFF), at least ``MIN_FILM_SIDE`` px a
  side, and a knee found on it with enough confidence (`locate_knees`);
- each row: the listed file exists, a patient id, grades whole numbers in the task's range
  (`engine.vocab`), at least one grade, a side in `SIDE_WORDS` or empty, the row's cell
  count;
- across rows: exact duplicate rows, one film listed in several rows, the same decoded
  pixels under two names (a leak between splits when the patients differ), a patient with
  more than two knees or two of one side, films in the folder that no row lists;
- the dataset: grades of a task too rare for every split to get one.

Severity: an ``error`` keeps its film (or row) out of the dataset and blocks registration
unless bad films are skipped; a ``warning`` leaves the film in and is kept in the report.
"""

from __future__ import annotations

import hashlib
import logging
import math
import multiprocessing
import os
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from engine.detect import Box, detect_knee_box
from engine.import_layouts import (
    GRADE_COLUMNS,
    Listing,
    read_listing,
    resolve_dicom,
)
from engine.importing import (
    FILM_FORMATS,
    GIVEN_SPLIT,
    MIN_FILM_SIDE,
    SIDES_ALLOWED,
    grey_film,
    image_id_for,
    is_dicom,
    normalise_side,
    read_dicom,
)
from engine.vocab import TASK_INFO, TEST_FRACTION, TRAIN_FRACTION, VAL_FRACTION

log = logging.getLogger(__name__)

#: Columns of `ImportReport.problems`.
PROBLEM_COLUMNS = ("file", "row", "severity", "kind", "problem", "action")
#: Columns of `ImportReport.films` (the good films; ``given_split`` only with a fixed test set).
FILM_COLUMNS = (
    "image",
    "image_id",
    "patient_id",
    "side",
    *GRADE_COLUMNS,
    "width_px",
    "height_px",
    "knee_confidence",
    "pixels_hash",
)
# Below this detector confidence no knee counts as found (the film is left out); below the
# second the crop is kept but flagged for a look.
KNEE_NOT_FOUND = 0.25
KNEE_LOW_CONFIDENCE = 0.5
# A grade needs this many films for the smallest split (validation: 30 % of the 70 %
# kept after the test holdout) to expect at least one of them.
_SMALLEST_SPLIT = min(TEST_FRACTION, TRAIN_FRACTION, (1 - TEST_FRACTION) * VAL_FRACTION)
MIN_FILMS_PER_GRADE = math.ceil(1 / _SMALLEST_SPLIT)
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


@dataclass(frozen=True, eq=False)  # holds frames: compare their parts, not reports
class ImportReport:
    """Everything `check_import` found.

    Attributes:
        root: The folder checked.
        layout: 'csv', 'grade_folders' or 'dicom'.
        labels_csv: The CSV read (None for grade folders).
        layout_split: 'test' (the layout's test folder is every seed's test set), 'ignored',
            or None when the layout has no split of its own.
        problems: One row per problem (`PROBLEM_COLUMNS`); ``row`` is the CSV line (header
            = line 1), NA when the problem has no row; sorted by row, then file.
        films: The good films (`FILM_COLUMNS`), one per image, in CSV / folder order.
        n_files: Files decoded.
        n_rows: Listed rows (CSV rows, or films found in grade folders).
        notes: What the layout decided that a user should know (patients, splits, detector).
        checked_s: Wall time of the check.
        left_out: Listed films (paths inside ``root``) that are not among the good films.
        detector: The knee detector that located the knees (`current_detector`).
    """

    root: Path
    layout: str
    labels_csv: Path | None
    layout_split: str | None
    problems: pd.DataFrame
    films: pd.DataFrame
    n_files: int
    n_rows: int
    notes: tuple[str, ...] = ()
    checked_s: float = 0.0
    left_out: tuple[str, ...] = field(default=())
    detector: DetectorInfo = CLASSICAL_DETECTOR

    @property
    def n_errors(self) -> int:
        """Problems that keep a film or row out."""
        return int((self.problems["severity"] == "error").sum())

    @property
    def n_warnings(self) -> int:
        """Problems that leave the film in."""
        return int((self.problems["severity"] == "warning").sum())

    @property
    def clean(self) -> bool:
        """No problem at all."""
        return self.problems.empty

    @property
    def all_good(self) -> bool:
        """No error: every listed film would be registered."""
        return self.n_errors == 0


@dataclass(frozen=True)
class Problem:
    """One row of the report."""

    file: str
    row: int | None
    severity: str
    kind: str
    problem: str
    action: str


def check_import(
    source: Path | str,
    *,
    labels_csv: Path | str | None = None,
    layout: str = "auto",
    layout_split: str = "ignore",
    detect: bool = True,
    workers: int | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Check every row and every film of a folder before anything is queued.

    Args:
        source: The folder of films.
        labels_csv: The labels CSV (default ``source/labels.csv``; none for grade folders).
        layout: 'auto' or one of `engine.import_layouts.LAYOUTS`.
        layout_split: For grade folders with train/val/test: 'ignore' their split, or make
            the 'test' folder every seed's test set.
        detect: Locate the knee on each film (off only to time decoding alone).
        workers: Decoding processes (default: the CPUs this process may use, at most 8,
            from `PARALLEL_FROM` films on; fewer are decoded in this process).
        progress: Called as films are decoded with (done, total, films per second).

    Raises:
        engine.import_layouts.ImportSourceError: The folder or CSV cannot be read at all, or
            the folder is in no known layout (one message; nothing checked).
    """
    start = time.perf_counter()
    listing = read_listing(
        Path(source),
        labels_csv=Path(labels_csv) if labels_csv is not None else None,
        layout=layout,
        layout_split=layout_split,
    )
    checks = inspect_files(
        listing.root, listing.files, detect=detect, workers=workers, progress=progress
    )
    rows = listing.rows
    if listing.layout == "dicom":
        tags = {
            f: (c.patient_tag, c.laterality_tag, c.uid_tag)
            for f, c in checks.items()
            if c.uid_tag or c.patient_tag
        }
        rows = resolve_dicom(listing, tags)
    report = _build_report(listing, rows, checks, detect=detect)
    return replace(report, checked_s=time.perf_counter() - start, detector=current_detector())


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

    The one place the import asks for knees: `engine.detect.find_knees` (the trained
    detector, or the classical fallback with its own confidence) where this build has it;
    otherwise the classical box scored by `structure_confidence`.
    """
    from engine import detect

    find_knees = getattr(detect, "find_knees", None)
    if find_knees is not None:
        found = find_knees(film, laterality=laterality)
        return [(tuple(k.box), float(k.confidence)) for k in found]
    return [(detect_knee_box(film), structure_confidence(film))]


def best_knee(film: np.ndarray) -> tuple[Box, float]:
    """The knee a crop is taken around: the most confident of `locate_knees`, and its
    confidence (the classical box with confidence 0 when no knee is found at all)."""
    knees = locate_knees(film)
    if not knees:
        return detect_knee_box(film), 0.0
    box, confidence = max(knees, key=lambda knee: knee[1])
    return tuple(int(round(v)) for v in box), confidence


def current_detector() -> DetectorInfo:
    """The detector `locate_knees` uses in this build.

    The classical one until `engine.detect.find_knees` exists. The YOLO wiring fills this
    in: the trained detector's name (its file key) and held-out IoU / mAP, which an import
    records with its report and a cache with its crops.
    """
    from engine import detect

    if getattr(detect, "find_knees", None) is None:
        return CLASSICAL_DETECTOR
    return DetectorInfo("engine.detect.find_knees")


def structure_confidence(film: np.ndarray) -> float:
    """How much a film looks like a radiograph rather than noise or a blank (0 to 1).

    The share of the film's contrast that survives a blur (at 128 px, sigma 3 px): bones and
    soft tissue are large structures and keep most of it (phantom films: 0.8-0.95), pixel
    noise loses nearly all (about 0.01), and a flat film has none. The classical detector
    returns a box on any film, so this is what keeps noise from being "found" as a knee
    until the detector reports its own confidence.
    """
    import cv2

    small = cv2.resize(film, (128, 128), interpolation=cv2.INTER_AREA).astype(np.float32)
    total = float(small.var())
    if total < 1.0:
        return 0.0
    kept = float(cv2.GaussianBlur(small, (0, 0), 3.0).var()) / total
    return float(np.clip((kept - 0.2) / 0.6, 0.0, 1.0))


# -- the checks ------------------------------------------------------------------------------


def _build_report(
    listing: Listing, rows: pd.DataFrame, checks: dict[str, FilmCheck], *, detect: bool
) -> ImportReport:
    problems: list[Problem] = []
    rows = rows.reset_index(drop=True)
    problems += _short_row_problems(listing)
    repeats = _exact_repeats(rows)
    problems += [
        Problem(
            rows.at[i, "image"],
            _row(rows.at[i, "row"]),
            "error",
            "duplicate_row",
            f"repeats row {_row(rows.at[first, 'row'])} exactly",
            f"delete row {_row(rows.at[i, 'row'])}",
        )
        for i, first in repeats.items()
    ]
    kept = rows.drop(index=list(repeats))
    parsed, row_problems, bad_rows = _parse_rows(kept, listing)
    problems += row_problems
    twice, twice_problems = _listed_twice(kept)
    problems += twice_problems
    missing, file_problems = _file_problems(kept, checks, listing)
    problems += file_problems
    bad_images = set(twice) | set(missing)
    bad_images |= {f for f, c in checks.items() if not c.ok}
    bad_images |= {f for f, c in checks.items() if c.ok and _no_knee(c)}
    first_rows = parsed[parsed["image"] != ""].drop_duplicates("image")
    pixel_out, pixel_problems = _same_pixels(first_rows, checks, bad_images)
    problems += pixel_problems
    bad_images |= pixel_out
    problems += _patient_problems(first_rows)
    good = first_rows[~first_rows["image"].isin(bad_images) & ~first_rows.index.isin(bad_rows)]
    films = _films_frame(good, checks, with_split=listing.layout_split == "test")
    problems += _rare_grade_problems(films)
    problems += _unlisted_problems(listing, kept)
    listed = list(dict.fromkeys(f for f in kept["image"] if f))
    registered = set(films["image"])
    left_out = tuple(f for f in listed if f not in registered)
    notes = list(listing.notes)
    if detect:
        notes.append(_detector_note())
    return ImportReport(
        root=listing.root,
        layout=listing.layout,
        labels_csv=listing.labels_csv,
        layout_split=listing.layout_split,
        problems=_problem_frame(problems),
        films=films,
        n_files=len(checks),
        n_rows=len(rows) + len(listing.short_rows),
        notes=tuple(notes),
        left_out=left_out,
    )


def _row(value: object) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def _short_row_problems(listing: Listing) -> list[Problem]:
    return [
        Problem(
            "",
            line,
            "error",
            "bad_row",
            f"row has {n} cell(s); the header has {m}",
            "fix the row's commas (quote a cell that holds a comma)",
        )
        for line, n, m in listing.short_rows
    ]


def _exact_repeats(rows: pd.DataFrame) -> dict[int, int]:
    """Index of each row that repeats an earlier row cell for cell → that earlier row."""
    cells = [c for c in rows.columns if c != "row"]
    first: dict[tuple, int] = {}
    repeats = {}
    for i, values in zip(rows.index, rows[cells].itertuples(index=False, name=None), strict=True):
        if values in first:
            repeats[i] = first[values]
        else:
            first[values] = i
    return repeats


def _parse_rows(rows: pd.DataFrame, listing: Listing) -> tuple[pd.DataFrame, list[Problem], set]:
    """Grades as integers and sides as L/R; problems for every cell that is neither."""
    problems: list[Problem] = []
    bad: set[int] = set()
    parsed = rows.copy()
    from_folder = listing.layout == "grade_folders"
    for column in GRADE_COLUMNS:
        task = next(t for t in TASK_INFO.values() if t.column == column)
        values = []
        for i, raw in zip(rows.index, rows[column], strict=True):
            grade, message = _grade(raw, task.top_grade)
            values.append(grade)
            if message:
                bad.add(i)
                where = " (its folder's name)" if from_folder else ""
                problems.append(
                    Problem(
                        rows.at[i, "image"],
                        _row(rows.at[i, "row"]),
                        "error",
                        "bad_grade",
                        f"{column}={raw}{where} is not a {task.name} grade: {message}",
                        f"use a whole number 0 to {task.top_grade}"
                        + ("" if from_folder else ", or leave it empty"),
                    )
                )
        parsed[column] = pd.array(values, dtype="Int64")
    sides = []
    records = dict(zip(rows.index, rows.to_dict("records"), strict=True))
    for i, record in records.items():
        side, problem = _side(record)
        sides.append(side or "")
        for found in (problem, _patient_conflict(record)):
            if found is not None:
                bad.add(i)
                problems.append(found)
    parsed["side"] = sides
    graded = parsed[list(GRADE_COLUMNS)].notna().any(axis=1)
    for i, record in records.items():
        image, line = record["image"], _row(record["row"])
        if not image:
            bad.add(i)
            what = "SOPInstanceUID" if listing.key == "sop_instance_uid" else "file"
            problems.append(
                Problem(
                    "",
                    line,
                    "error",
                    "no_file",
                    f"no {what} named in this row",
                    "name the film, or delete the row",
                )
            )
            continue
        if not str(record["patient_id"]).strip():
            bad.add(i)
            where = " (not in the CSV and no PatientID tag)" if listing.layout == "dicom" else ""
            problems.append(
                Problem(
                    image,
                    line,
                    "error",
                    "no_patient",
                    f"no patient id{where}",
                    "give every film its patient's id (both knees of a patient share it)",
                )
            )
        if not graded[i] and i not in bad:
            bad.add(i)
            problems.append(
                Problem(
                    image,
                    line,
                    "error",
                    "no_grade",
                    f"no grade: {' and '.join(GRADE_COLUMNS)} are all empty",
                    "give a grade, or delete the row",
                )
            )
    return parsed, problems, bad


def _grade(raw: str, top: int) -> tuple[int | None, str]:
    """(grade or None, '' or what is wrong) of a grade cell as written."""
    text = str(raw).strip()
    if not text:
        return None, ""
    try:
        value = float(text)
    except ValueError:
        return None, "not a number"
    if not value.is_integer():
        return None, "not a whole number"
    if not 0 <= value <= top:
        return None, f"outside 0 to {top}"
    return int(value), ""


def _side(row: dict) -> tuple[str | None, Problem | None]:
    image, line = row["image"], _row(row["row"])
    try:
        side = normalise_side(row["side"])
    except ValueError:
        return None, Problem(
            image,
            line,
            "error",
            "bad_side",
            f"side={row['side']} is not a side",
            f"use {SIDES_ALLOWED}",
        )
    tag, written = row.get("tag_side", ""), row.get("csv_side", "")
    if tag and written:
        try:
            written_side = normalise_side(written)
        except ValueError:
            written_side = None
        if written_side is not None and normalise_side(tag) != written_side:
            return None, Problem(
                image,
                line,
                "error",
                "side_conflict",
                f"side {written} in the CSV, but the film's laterality tag says {tag}",
                "correct the CSV's side (or the film's tag)",
            )
    return side, None


def _patient_conflict(row: dict) -> Problem | None:
    tag, written = row.get("tag_patient", ""), row.get("csv_patient", "")
    if not (tag and written) or tag == written:
        return None
    return Problem(
        row["image"],
        _row(row["row"]),
        "error",
        "patient_conflict",
        f"patient {written} in the CSV, but the film's PatientID tag says {tag}",
        "correct the CSV's patient_id (or the film's tag)",
    )


def _listed_twice(rows: pd.DataFrame) -> tuple[list[str], list[Problem]]:
    """Films listed in more than one (non-identical) row: every row is named."""
    named = rows[(rows["image"] != "") & rows["image"].duplicated(keep=False)]
    groups = named.groupby("image", sort=False).groups
    twice, problems = [], []
    for image, index in groups.items():
        if len(index) < 2:
            continue
        twice.append(image)
        lines = [_row(named.at[i, "row"]) for i in index]
        listed = ", ".join(str(n) for n in lines if n is not None)
        for i in index:
            problems.append(
                Problem(
                    image,
                    _row(named.at[i, "row"]),
                    "error",
                    "listed_twice",
                    f"listed in {len(index)} rows ({listed}) with different cells",
                    "keep the one right row for this film",
                )
            )
    return twice, problems


_FILM_ACTIONS = {
    "empty_file": "export the film again, or delete its row",
    "unreadable": "export the film again as DICOM, PNG, JPEG or TIFF, or delete its row",
    "too_small": f"give the full-size film (at least {MIN_FILM_SIDE} px a side), or delete its row",
}


def _file_problems(
    rows: pd.DataFrame, checks: dict[str, FilmCheck], listing: Listing
) -> tuple[list[str], list[Problem]]:
    """Missing, unreadable and knee-less films, once per film (on its first row)."""
    problems, missing = [], []
    for image, line in _first_lines(rows):
        check = checks.get(image)
        if check is None:
            missing.append(image)
            if listing.layout == "dicom" and listing.key == "sop_instance_uid":
                continue  # reported as the row's missing SOPInstanceUID below
            problems.append(
                Problem(
                    image,
                    line,
                    "error",
                    "missing_file",
                    "listed in the CSV but not in the folder"
                    + (" (a path must stay inside the folder)" if ".." in image.split("/") else ""),
                    "add the film to the folder, or correct or delete the row",
                )
            )
        elif not check.ok:
            problems.append(
                Problem(
                    image,
                    line,
                    "error",
                    check.error_kind,
                    check.error,
                    _FILM_ACTIONS[check.error_kind],
                )
            )
        elif check.knee_confidence is not None:
            problems += _knee_problems(check, line)
    if listing.layout == "dicom" and listing.key == "sop_instance_uid":
        for i in rows.index[(rows["image"] == "") & (rows["key"] != "")]:
            problems.append(
                Problem(
                    str(rows.at[i, "key"]),
                    _row(rows.at[i, "row"]),
                    "error",
                    "missing_file",
                    "no DICOM file in the folder has this SOPInstanceUID",
                    "add the film to the folder, or correct or delete the row",
                )
            )
    return missing, problems


def _first_lines(rows: pd.DataFrame) -> list[tuple[str, int | None]]:
    named = rows[rows["image"] != ""].drop_duplicates("image")
    return [(img, _row(line)) for img, line in zip(named["image"], named["row"], strict=True)]


def _no_knee(check: FilmCheck) -> bool:
    return check.knee_confidence is not None and (
        check.n_knees == 0 or check.knee_confidence < KNEE_NOT_FOUND
    )


def _knee_problems(check: FilmCheck, line: int | None) -> list[Problem]:
    conf = check.knee_confidence or 0.0
    if _no_knee(check):
        return [
            Problem(
                check.file,
                line,
                "error",
                "no_knee",
                f"no knee found (detector confidence {conf:.2f} < {KNEE_NOT_FOUND})",
                "check that this is a knee radiograph; leave it out, or crop it by hand",
            )
        ]
    if conf < KNEE_LOW_CONFIDENCE:
        return [
            Problem(
                check.file,
                line,
                "warning",
                "low_confidence",
                f"knee found with low confidence ({conf:.2f} < {KNEE_LOW_CONFIDENCE})",
                "look at its crop in crop review before training on it",
            )
        ]
    return []


def _same_pixels(
    first_rows: pd.DataFrame, checks: dict[str, FilmCheck], bad: set[str]
) -> tuple[set[str], list[Problem]]:
    """Listed films whose decoded pixels are identical: name both and their patients.

    Under different patients (or different grades) the copy is a leak between splits (or a
    contradiction) and every copy is left out; one patient's film listed under two names
    keeps its first name.
    """
    by_hash: dict[str, list[str]] = defaultdict(list)
    info = first_rows.set_index("image")
    for image in info.index:
        check = checks.get(image)
        if check is not None and check.pixels_hash and image not in bad:
            by_hash[check.pixels_hash].append(image)
    out: set[str] = set()
    problems = []
    for group in by_hash.values():
        if len(group) < 2:
            continue
        patients = {str(info.at[f, "patient_id"]) for f in group}
        grades = {tuple(info.loc[f, list(GRADE_COLUMNS)].astype(str)) for f in group}
        leak = len(patients) > 1
        conflict = leak or len(grades) > 1
        out |= set(group) if conflict else set(group[1:])
        for f in group:
            others = ", ".join(f"{o} (patient {info.at[o, 'patient_id']})" for o in group if o != f)
            what = (
                "one film under two patients, a leak between splits"
                if leak
                else "one film with two sets of grades"
                if conflict
                else "one film listed under two names"
            )
            problems.append(
                Problem(
                    f,
                    _row(info.at[f, "row"]),
                    "error",
                    "same_pixels",
                    f"same pixels as {others}, and this is patient {info.at[f, 'patient_id']}: "
                    f"{what}",
                    "keep one copy under its true patient and grades, delete the others",
                )
            )
    return out, problems


def _patient_problems(rows: pd.DataFrame) -> list[Problem]:
    """A patient with more than two knees, or two knees of one side (wrong ids, most likely)."""
    problems = []
    named = rows[rows["patient_id"].astype(str).str.strip() != ""]
    per_side = named[named["side"] != ""].groupby(["patient_id", "side"]).size()
    suspects = set(per_side[per_side > 1].index.get_level_values(0))
    counts = named["patient_id"].value_counts()
    suspects |= set(counts[counts > 2].index)
    named = named[named["patient_id"].isin(suspects)]  # few: the loop below stays short
    for patient, group in named.groupby("patient_id", sort=True):
        sides = [s for s in group["side"] if s]
        repeated = sorted({s for s in sides if sides.count(s) > 1})
        if len(group) <= 2 and not repeated:
            continue
        where = ", ".join(
            f"{img}" + (f" (row {_row(line)})" if _row(line) is not None else "")
            for img, line in zip(group["image"], group["row"], strict=True)
        )
        what = (
            f"patient {patient} has {len(group)} films: {where}; a patient has at most two knees"
            if len(group) > 2
            else f"patient {patient} has two {repeated[0]} knees: {where}"
        )
        for img, line in zip(group["image"], group["row"], strict=True):
            problems.append(
                Problem(
                    img,
                    _row(line),
                    "warning",
                    "too_many_knees",
                    what,
                    "check the patient ids and sides (the films stay together in one split)",
                )
            )
    return problems


def _films_frame(
    good: pd.DataFrame, checks: dict[str, FilmCheck], *, with_split: bool
) -> pd.DataFrame:
    films = pd.DataFrame(
        {
            "image": good["image"].astype(str),
            "image_id": good["image"].map(image_id_for).astype(str),
            "patient_id": good["patient_id"].astype(str),
            "side": good["side"].astype(str),
            **{c: good[c].astype("Int64") for c in GRADE_COLUMNS},
            "width_px": [checks[f].width_px for f in good["image"]],
            "height_px": [checks[f].height_px for f in good["image"]],
            "knee_confidence": [checks[f].knee_confidence for f in good["image"]],
            "pixels_hash": [checks[f].pixels_hash for f in good["image"]],
        }
    ).reset_index(drop=True)
    films["knee_confidence"] = films["knee_confidence"].astype("Float64")
    if with_split:
        films[GIVEN_SPLIT] = good[GIVEN_SPLIT].astype(str).to_numpy()
    return films


def _rare_grade_problems(films: pd.DataFrame) -> list[Problem]:
    """Grades of a task (one the dataset has) with too few films for every split to get one."""
    problems = []
    for task in TASK_INFO.values():
        grades = films[task.column].dropna()
        if grades.empty:
            continue
        counts = grades.astype(int).value_counts()
        for grade in task.grades:
            n = int(counts.get(grade, 0))
            if n >= MIN_FILMS_PER_GRADE:
                continue
            problems.append(
                Problem(
                    "",
                    None,
                    "warning",
                    "rare_grade",
                    f"{task.name} grade {grade}: {n} good film(s); every split expects one "
                    f"only from {MIN_FILMS_PER_GRADE} on (validation gets "
                    f"{(1 - TEST_FRACTION) * VAL_FRACTION:.0%} of them)",
                    "add films of this grade; otherwise some seeds train, select or test "
                    "without it (its metrics are then left out)",
                )
            )
    return problems


def _unlisted_problems(listing: Listing, rows: pd.DataFrame) -> list[Problem]:
    listed = set(rows["image"])
    if listing.layout == "csv":
        unlisted = listing.unlisted
    elif listing.layout == "dicom":
        unlisted = [f for f in listing.files if f not in listed]
    else:
        return []
    return [
        Problem(
            f,
            None,
            "warning",
            "unlisted",
            "in the folder but no row of the CSV lists it; it is not imported",
            "add a row for it if it should be imported",
        )
        for f in unlisted
    ]


def _detector_note() -> str:
    from engine import detect

    if getattr(detect, "find_knees", None) is not None:
        return "knees located by engine.detect.find_knees (its confidence is reported)"
    return (
        "knees located by the classical detector; its confidence is how much of the film's "
        "contrast is large structure (noise and blank films score near 0)"
    )


def _problem_frame(problems: list[Problem]) -> pd.DataFrame:
    frame = pd.DataFrame([p.__dict__ for p in problems], columns=list(PROBLEM_COLUMNS))
    frame["row"] = frame["row"].astype("Int64")
    frame["_no_row"] = frame["row"].isna()
    frame = frame.sort_values(["_no_row", "row", "file"], kind="stable").drop(columns="_no_row")
    return frame.reset_index(drop=True)


# -- registering -----------------------------------------------------------------------------


def clean_labels(report: ImportReport) -> pd.DataFrame:
    """The good films as a labels CSV table: image, patient_id, side, kl, cppd
    (and ``given_split`` where the layout's test folder is the test set)."""
    columns = ["image", "patient_id", "side", *GRADE_COLUMNS]
    if GIVEN_SPLIT in report.films:
        columns.append(GIVEN_SPLIT)
    return report.films[columns].copy()


def write_clean_labels(report: ImportReport, out_root: Path) -> Path:
    """Write the good films' labels CSV under ``out_root`` and return its path.

    The file is named by its content (``out_root/<sha1>/labels.csv``), so importing the same
    films with the same labels again gives the same file, hence the same dataset spec, cache
    and splits; any change gives a new one.
    """
    text = clean_labels(report).to_csv(index=False)
    digest = hashlib.sha1(f"{report.root}\n{text}".encode()).hexdigest()[:12]
    folder = Path(out_root) / digest
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "labels.csv"
    if not path.is_file() or path.read_text() != text:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return path
