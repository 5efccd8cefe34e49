"""The import check: every row and every film of a folder, all problems at once.

`check_import` reads a folder in one of the layouts of `engine.films.layouts`, decodes
every film once (in worker processes when there are many), and returns an `ImportReport`:
one row per problem (file, CSV line, problem, what to do) and the good films, i.e. those a
dataset registered from this import would hold. Nothing is queued or stored here.

What is checked:

- each film: not empty, decodable (DICOM, PNG, JPEG, TIFF), at least ``MIN_FILM_SIDE`` px a
  side, and a knee found on it with enough confidence (`locate_knees`, with the chosen
  detector, `choose_detector`); a film showing two knees is graded per knee (one row per
  side), and a row without a side on such a film is an error;
- a knee box the labels give (``x0, y0, x1, y1``): all four or none, whole pixels,
  x1 > x0 and y1 > y0, on the film;
- each row: the listed file exists, a patient id, grades whole numbers in the task's range
  (`engine.vocab`), at least one grade, a side in `SIDE_WORDS` or empty, the row's cell
  count;
- across rows: exact duplicate rows, one film listed in several rows (other than once per
  knee: two rows of one patient with sides R and L), two films with one image id, the same decoded
  pixels under two names (a leak between splits when the patients differ), a patient with
  more than two knees or two of one side, films in the folder that no row lists;
- the dataset: grades of a task too rare for every split to get one.

Severity: an ``error`` keeps its film (or row) out of the dataset and blocks registration
unless bad films are skipped; a ``warning`` leaves the film in and is kept in the report.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from engine.detect import CLASSICAL_DETECTOR, DetectorInfo, detector_note
from engine.films.inspection import FilmCheck, Progress, inspect_files
from engine.films.labels import GIVEN_SPLIT, LABEL_BOX_COLUMNS, write_named_by_content
from engine.films.layouts import GRADE_COLUMNS, Listing, read_listing, resolve_dicom
from engine.films.progress import RowsProgress
from engine.films.rows import find_problems

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
        detector: The knee detector that located the knees (`choose_detector`).
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


def check_import(
    source: Path | str,
    *,
    labels_csv: Path | str | None = None,
    layout: str = "auto",
    layout_split: str = "ignore",
    detect: bool = True,
    workers: int | None = None,
    progress: Progress | None = None,
    detector: DetectorInfo = CLASSICAL_DETECTOR,
    rows_progress: RowsProgress | None = None,
) -> ImportReport:
    """Check every row and every film of a folder before anything is queued.

    Args:
        source: The folder of films.
        labels_csv: The labels CSV (default ``source/labels.csv``; none for grade folders).
        layout: 'auto' or one of `engine.films.layouts.LAYOUTS`.
        layout_split: For grade folders with train/val/test: 'ignore' their split, or make
            the 'test' folder every seed's test set.
        detect: Locate the knee on each film (off only to time decoding alone).
        workers: Decoding processes (default: the CPUs this process may use, at most 8,
            from `PARALLEL_FROM` films on; fewer are decoded in this process).
        progress: Called as films are decoded with (done, total, films per second).
        detector: The knee detector (`choose_detector`; the CLI and the Launch page choose
            the newest trained one); the classical detector by default.
        rows_progress: Called as a labels CSV's rows are read and checked with (phase, rows
            done, rows in all) (`engine.films.progress`): before and after the films, a CSV
            of 100,000 rows takes seconds.

    Raises:
        engine.films.layouts.ImportSourceError: The folder or CSV cannot be read at all, or
            the folder is in no known layout (one message; nothing checked).
    """
    start = time.perf_counter()
    listing = read_listing(
        Path(source),
        labels_csv=Path(labels_csv) if labels_csv is not None else None,
        layout=layout,
        layout_split=layout_split,
        rows_progress=rows_progress,
    )
    checks = inspect_files(
        listing.root,
        listing.files,
        detect=detect,
        workers=workers,
        progress=progress,
        detector=detector,
    )
    rows = listing.rows
    if listing.layout == "dicom":
        tags = {
            f: (c.patient_tag, c.laterality_tag, c.uid_tag)
            for f, c in checks.items()
            if c.uid_tag or c.patient_tag
        }
        rows = resolve_dicom(listing, tags)
    report = _build_report(
        listing, rows, checks, detect=detect, detector=detector, rows_progress=rows_progress
    )
    return replace(report, checked_s=time.perf_counter() - start, detector=detector)


def _build_report(
    listing: Listing,
    rows: pd.DataFrame,
    checks: dict[str, FilmCheck],
    *,
    detect: bool,
    detector: DetectorInfo,
    rows_progress: RowsProgress | None = None,
) -> ImportReport:
    found = find_problems(listing, rows, checks, rows_progress)
    notes = list(listing.notes)
    if detect:
        notes.append(detector_note(detector))
    return ImportReport(
        root=listing.root,
        layout=listing.layout,
        labels_csv=listing.labels_csv,
        layout_split=listing.layout_split,
        problems=found.problems,
        films=found.films,
        n_files=len(checks),
        n_rows=len(rows) + len(listing.short_rows),
        notes=tuple(notes),
        left_out=found.left_out,
    )


# -- registering -----------------------------------------------------------------------------


def clean_labels(report: ImportReport) -> pd.DataFrame:
    """The good films as a labels CSV table: image, patient_id, side, kl, cppd (and
    ``given_split`` where the layout's test folder is the test set, and the knee box
    ``x0, y0, x1, y1`` where the labels give boxes). A film listed once per knee keeps
    its two rows."""
    columns = ["image", "patient_id", "side", *GRADE_COLUMNS]
    if GIVEN_SPLIT in report.films:
        columns.append(GIVEN_SPLIT)
    columns += [c for c in LABEL_BOX_COLUMNS if c in report.films]
    return report.films[columns].copy()


def write_clean_labels(report: ImportReport, out_root: Path) -> Path:
    """Write the good films' labels CSV under ``out_root`` and return its path.

    The file is named by its content (``out_root/<sha1>/labels.csv``), so importing the same
    films with the same labels again gives the same file, hence the same dataset spec, cache
    and splits; any change gives a new one.
    """
    text = clean_labels(report).to_csv(index=False)
    digest = hashlib.sha1(f"{report.root}\n{text}".encode()).hexdigest()[:12]
    return write_named_by_content(Path(out_root) / digest / "labels.csv", text)
