"""The folder layouts an import understands, each read into one listing of films.

Three layouts (README, "Bring your own films"):

- ``csv``: a folder of films (DICOM, PNG, JPEG, TIFF; sub-folders allowed) and a labels CSV
  with one row per film (or per knee of a bilateral film, with its ``side``): ``image``
  (its path inside the folder), ``patient_id``, optional ``side``, ``kl`` and/or ``cppd``,
  and optional knee box ``x0, y0, x1, y1`` (film pixels).
- ``grade_folders``: the layout public knee OA sets ship in, ``ROOT/{0..4}/*`` or
  ``ROOT/{train,val,test}/{0..4}/*``. The KL grade is the folder's name. There are no
  patient ids, so a patient is read from the file-name stem where the name allows it:
  ``9001104_1.png`` (OAI style: patient, then a number) and ``9001104L.png`` /
  ``knee_07_R.png`` (patient, then the side) group by the patient part; any other name is
  its own patient. What that means for leakage: two films of one person whose names do not
  share that patient part are treated as two patients and may land on both sides of a
  split. The import's same-pixels check still catches a film copied under two names, but
  not two different films of one person; give a labels CSV with ``patient_id`` to rule that
  out. The layout's own split is either ignored (default: every seed draws its own
  70/30 split, as the paper does) or its ``test`` folder becomes the test set of every
  seed (``layout_split="test"``); the report records which.
- ``dicom``: a folder of DICOM files whose PatientID and ImageLaterality (or Laterality)
  tags say whose knee and which side, and a CSV of grades keyed by ``sop_instance_uid``
  (SOPInstanceUID) or by ``image`` (file name), with ``kl`` and/or ``cppd`` (optional
  ``side`` and ``patient_id`` where the tags lack them).

A reader returns a `Listing`: one row per listed film with its CSV line, raw cells as
written (checked later, all at once, by `engine.films.check`), and the files to decode.
"""

from __future__ import annotations

import csv
import os
import posixpath
import re
import stat
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from engine.films.decode import FILM_SUFFIXES, looks_like_dicom
from engine.films.labels import GIVEN_SPLIT, LABEL_BOX_COLUMNS, MAX_LABEL_ROWS, too_many_rows
from engine.films.progress import (
    EVERY_ROWS,
    PARSE_PROGRESS_FROM,
    PARSING_CSV,
    READING_ROWS,
    RowsProgress,
    RowTicker,
)
from engine.films.reading import DANGLING_LINK, FilmRefused, film_path_refusal
from engine.vocab import KL, TASK_INFO

LAYOUTS: tuple[str, ...] = ("csv", "grade_folders", "dicom")
LAYOUT_SPLITS: tuple[str, ...] = ("ignore", "test")
DEFAULT_LABELS = "labels.csv"
GRADE_COLUMNS: tuple[str, ...] = tuple(t.column for t in TASK_INFO.values())
# Column names a CSV may use (any case, spaces around ignored), mapped to ours.
_ALIASES = {
    "image": "image",
    "file": "image",
    "filename": "image",
    "file_name": "image",
    "patient_id": "patient_id",
    "patientid": "patient_id",
    "patient": "patient_id",
    "side": "side",
    "laterality": "side",
    "sop_instance_uid": "sop_instance_uid",
    "sopinstanceuid": "sop_instance_uid",
    **{c: c for c in GRADE_COLUMNS},
    **{c: c for c in LABEL_BOX_COLUMNS},
}
# The columns of a listing's rows (cells as written, as strings; '' when empty).
ROW_COLUMNS = (
    "row",
    "image",
    "patient_id",
    "side",
    *GRADE_COLUMNS,
    GIVEN_SPLIT,
    *LABEL_BOX_COLUMNS,
)
LAYOUT_HELP = (
    "a labels CSV (image, patient_id, optional side, kl and/or cppd; default PATH/labels.csv), "
    "grade folders (PATH/0..4/* or PATH/train|val|test/0..4/*), or DICOM files with a CSV "
    "of grades keyed by sop_instance_uid or image"
)
_OAI_STEM = re.compile(r"^(?P<patient>\d+)_(?P<number>\d+)$")
_SIDE_STEM = re.compile(
    r"^(?P<patient>\d+|.+[_\- ])(?P<side>l|r|left|right)$",
    re.IGNORECASE,
)


class ImportSourceError(ValueError):
    """The folder, the CSV or the layout cannot be read at all (one message, nothing checked)."""


@dataclass
class Listing:
    """What a layout lists: rows to check and files to decode.

    Attributes:
        layout: One of `LAYOUTS`.
        root: The folder imported; every ``image`` is a path inside it.
        labels_csv: The CSV read (None for grade folders).
        rows: One row per listed film (`ROW_COLUMNS`): ``row`` is the CSV line (header is
            line 1; NA without a CSV), other cells are strings as written ('' when empty).
            For ``dicom``, ``image`` holds the key until `resolve_dicom` maps it to a file.
        files: Paths inside ``root`` to decode, in a stable order.
        unlisted: Film files in ``root`` no row lists (reported, not imported).
        key: For ``dicom``: the CSV's key column (``sop_instance_uid`` or ``image``).
        short_rows: (line, cells, header cells) of CSV rows with the wrong number of cells.
        layout_split: 'test', 'ignored', or None when the layout has no split of its own.
        notes: What the reader decided that the user should know (e.g. patient ids).
        near_names: Listed names with no file → the file whose name differs only in case
            or Unicode normalisation (said in the missing-file problem).
        missing: Listed names found missing while listing (nothing behind them), so the
            check does not resolve them again.
    """

    layout: str
    root: Path
    labels_csv: Path | None
    rows: pd.DataFrame
    files: list[str]
    unlisted: list[str] = field(default_factory=list)
    key: str = "image"
    short_rows: list[tuple[int, int, int]] = field(default_factory=list)
    layout_split: str | None = None
    notes: list[str] = field(default_factory=list)
    near_names: dict[str, str] = field(default_factory=dict)
    missing: frozenset[str] = frozenset()


def read_listing(
    root: Path,
    *,
    labels_csv: Path | None = None,
    layout: str = "auto",
    layout_split: str = "ignore",
    rows_progress: RowsProgress | None = None,
) -> Listing:
    """Read a folder in its layout (``auto``: the layout is recognised, see `detect_layout`);
    ``rows_progress`` is told as a labels CSV's films are looked up (`READING_ROWS`).

    Raises:
        ImportSourceError: No such folder or CSV, a CSV that is not a readable table or lacks
            a needed column, or a folder in no known layout.
    """
    if layout not in ("auto", *LAYOUTS):
        raise ImportSourceError(
            f"layout {layout!r} is not known; allowed: auto, {', '.join(LAYOUTS)}"
        )
    if layout_split not in LAYOUT_SPLITS:
        raise ImportSourceError(
            f"layout split {layout_split!r} is not known; allowed: {', '.join(LAYOUT_SPLITS)}"
        )
    root = Path(root).expanduser()
    if not root.is_dir():
        what = "does not exist" if not root.exists() else "is not a folder"
        raise ImportSourceError(f"{root} {what}; give the folder of films to import")
    if labels_csv is not None:
        labels_csv = Path(labels_csv).expanduser()
        if not labels_csv.is_file():
            raise ImportSourceError(f"labels CSV {labels_csv} does not exist")
    _check_labels_file(root, labels_csv)
    chosen = detect_layout(root, labels_csv) if layout == "auto" else layout
    listing = _read_layout(root, labels_csv, chosen, layout_split, rows_progress)
    if len(listing.rows) + len(listing.short_rows) > MAX_LABEL_ROWS:  # grade folders' films
        raise ImportSourceError(
            f"{root} lists more than {MAX_LABEL_ROWS:,} films; an import holds at most "
            f"{MAX_LABEL_ROWS:,}. Import the films in parts"
        )
    if listing.rows.empty and not listing.short_rows:
        where = listing.labels_csv or f"the grade folders of {root}"
        raise ImportSourceError(f"no film is listed in {where}; give {LAYOUT_HELP}")
    return listing


# A labels CSV larger than this is refused before it is read (a million rows is ~60 MB).
MAX_LABELS_BYTES = 256 * 2**20


def _check_labels_file(root: Path, labels_csv: Path | None) -> None:
    """The labels CSV in the folder (``labels.csv``) must stay inside it (a link out is
    refused unread, as a film's would be: its cells would be echoed in messages); any
    labels CSV must be a regular file of at most `MAX_LABELS_BYTES`. A CSV named by the
    person is confined to the data roots by the caller (`jobs.services.access.confine_import_path`).

    Raises:
        ImportSourceError: One of those; nothing is read.
    """
    path = labels_csv if labels_csv is not None else root / DEFAULT_LABELS
    if not os.path.lexists(path):
        return
    if labels_csv is None:
        refusal = film_path_refusal(root, DEFAULT_LABELS)
        if refusal is not None and refusal.kind == "outside_folder":
            raise ImportSourceError(f"labels CSV {path}: {refusal.reason}")
    try:
        info = os.stat(path)
    except OSError:
        return
    if not stat.S_ISREG(info.st_mode):
        raise ImportSourceError(f"labels CSV {path} is not a regular file; it is not read")
    if info.st_size > MAX_LABELS_BYTES:
        raise ImportSourceError(
            f"labels CSV {path} has {info.st_size / 2**20:,.0f} MiB; at most "
            f"{MAX_LABELS_BYTES / 2**20:.0f} MiB is read"
        )


def _read_layout(
    root: Path,
    labels_csv: Path | None,
    layout: str,
    layout_split: str,
    rows_progress: RowsProgress | None = None,
) -> Listing:
    csv_path = labels_csv if labels_csv is not None else root / DEFAULT_LABELS
    if layout == "grade_folders":
        if labels_csv is not None:
            raise ImportSourceError(
                "grade folders take their grades from the folder names; leave out the labels "
                "CSV, or choose another layout"
            )
        return _grade_folder_listing(root, layout_split)
    if not csv_path.is_file():
        raise ImportSourceError(
            f"no labels CSV: {csv_path} does not exist; a {layout} import needs one (give its path)"
        )
    if layout == "dicom":
        return _dicom_listing(root, csv_path)
    return _csv_listing(root, csv_path, rows_progress)


# Rows of a CSV read to recognise its layout (the first listed film that can be read decides
# whether the films are DICOM).
_SNIFFED_ROWS = 20


def detect_layout(root: Path, labels_csv: Path | None = None) -> str:
    """Which layout ``root`` is in.

    A CSV (the one given, else ``root/labels.csv``) keyed by ``sop_instance_uid``, or by
    ``image`` over DICOM files, makes ``dicom``; one with ``image`` and ``patient_id`` over
    other films makes ``csv``; without a CSV, sub-folders named by grade make
    ``grade_folders``.

    Raises:
        ImportSourceError: None of these; the message lists the layouts.
    """
    csv_path = labels_csv if labels_csv is not None else root / DEFAULT_LABELS
    if csv_path.is_file():
        # The header and the first rows decide; the whole CSV is read once, by its layout.
        header, rows = read_csv_rows(csv_path, max_rows=_SNIFFED_ROWS)
        if "sop_instance_uid" in header:
            return "dicom"
        if "image" in header and _first_listed_is_dicom(root, header, rows):
            return "dicom"
        if "image" in header and "patient_id" in header:
            return "csv"
        if "image" in header:
            raise ImportSourceError(
                f"{csv_path}: column 'patient_id' is missing; needed unless the films are "
                "DICOM files whose PatientID tag says whose knee it is"
            )
        raise ImportSourceError(
            f"{csv_path} has columns {', '.join(header) or '(none)'}; a labels CSV needs image, "
            "patient_id and kl and/or cppd (a DICOM grades CSV: sop_instance_uid or image, "
            "and kl and/or cppd)"
        )
    if _grade_dirs(root):
        return "grade_folders"
    raise ImportSourceError(f"{root} is in no layout SoftGrade knows; give {LAYOUT_HELP}")


def _first_listed_is_dicom(
    root: Path, header: list[str], rows: list[tuple[int, list[str]]]
) -> bool:
    col = header.index("image")
    for _, cells in rows[:_SNIFFED_ROWS]:
        name = _clean_relative(cells[col]) if col < len(cells) else ""
        if not name or film_path_refusal(root, name) is not None:
            continue  # outside the folder, not a regular file, missing: never opened
        with open(os.path.realpath(root / name), "rb") as handle:
            return looks_like_dicom(handle.read(132))
    return False


def _texts(values: list[str], index: pd.Index) -> pd.Series:
    """Cells as a column of plain Python strings: pandas would store a list of strings as
    Arrow-backed strings, which the checks' loops over cells read several times slower."""
    return pd.Series(values, index=index, dtype=object)


def read_csv_rows(
    path: Path, max_rows: int | None = None, rows_progress: RowsProgress | None = None
) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """A CSV's header (our column names, see `_ALIASES`) and its rows with their lines.

    Lines count as in a text editor (the header is line 1); blank lines are skipped. Rows are
    read as they come: at most ``max_rows`` (all, by default), never past `MAX_LABEL_ROWS`.
    A CSV of `PARSE_PROGRESS_FROM` bytes or more tells ``rows_progress`` the bytes parsed
    (`PARSING_CSV`): first 0, before any row, so a waiting person sees the parse start.

    Raises:
        ImportSourceError: Not UTF-8 text, not a CSV, empty, a column named twice, or more
            than `MAX_LABEL_ROWS` rows (the rest is not read).
    """
    try:
        delimiter = csv_delimiter(path)
        with path.open(newline="", encoding="utf-8-sig") as handle:
            parsed = _parse_teller(rows_progress, handle.buffer, os.fstat(handle.fileno()).st_size)
            reader = csv.reader(handle, delimiter=delimiter)
            lines: list[tuple[int, list[str]]] = []
            for cells in reader:
                if any(c.strip() for c in cells):
                    lines.append((reader.line_num, cells))
                    if max_rows is not None and len(lines) > max_rows:  # and the header
                        break
                    if len(lines) > MAX_LABEL_ROWS + 1:  # the header and one row too many
                        raise ImportSourceError(too_many_rows(path))
                    if len(lines) % EVERY_ROWS == 0:
                        parsed(done=False)
            else:
                parsed(done=True)
    except UnicodeDecodeError as exc:
        raise ImportSourceError(
            f"labels CSV {path} is not UTF-8 text (byte {exc.start}); save it as CSV (UTF-8)"
        ) from exc
    except csv.Error as exc:
        raise ImportSourceError(
            f"labels CSV {path} is not a CSV file SoftGrade can read ({exc})"
        ) from exc
    if not lines:
        raise ImportSourceError(
            f"labels CSV {path} is empty; it needs a header and one row per film"
        )
    header = [_ALIASES.get(c.strip().lower(), c.strip().lower()) for c in lines[0][1]]
    named_twice = sorted({c for c in header if c and header.count(c) > 1})
    if named_twice:
        raise ImportSourceError(
            f"labels CSV {path}: column {named_twice[0]!r} appears twice; keep one"
        )
    return header, lines[1:]


def _parse_teller(rows_progress: RowsProgress | None, raw: Any, size: int) -> Callable[..., None]:
    """What `read_csv_rows` calls as it parses: tells ``rows_progress`` the bytes of ``raw``
    (the file under the text reader, read in chunks ahead of the rows) parsed so far, out of
    ``size``; says 0 at once. Does nothing for a CSV under `PARSE_PROGRESS_FROM` bytes."""
    if rows_progress is None or size < PARSE_PROGRESS_FROM:
        return lambda *, done: None
    rows_progress(PARSING_CSV, 0, size)

    def tell(*, done: bool) -> None:
        # The chunk read ahead is counted as parsed; the last byte only once at the end.
        rows_progress(PARSING_CSV, size if done else min(raw.tell(), size - 1), size)

    return tell


def csv_delimiter(path: Path) -> str:
    """',' or ';': a header line with semicolons and no comma is read with ';' (spreadsheets
    in locales with a decimal comma save CSV that way).

    Raises:
        UnicodeDecodeError: Not UTF-8.
    """
    with path.open(newline="", encoding="utf-8-sig") as handle:
        for line in handle:
            if line.strip():
                return ";" if ";" in line and "," not in line else ","
    return ","


def _table(
    header: list[str],
    rows: list[tuple[int, list[str]]],
    tick: Callable[[], None] = lambda: None,
) -> tuple[pd.DataFrame, list[tuple[int, int, int]]]:
    """Rows as a frame of `ROW_COLUMNS` strings; rows of the wrong width set apart.
    ``tick`` is called once per row (a `RowTicker`'s: the frame of 100,000 rows takes a
    second)."""
    records, short = [], []
    for line, cells in rows:
        tick()
        if len(cells) != len(header):
            short.append((line, len(cells), len(header)))
            continue
        cell = dict(zip(header, (c.strip() for c in cells), strict=True))
        records.append({"row": line, **{c: cell.get(c, "") for c in ROW_COLUMNS[1:]}})
    # Plain Python strings: the checks loop over cells, which Arrow-backed strings slow down.
    frame = pd.DataFrame.from_records(records, columns=list(ROW_COLUMNS)).astype(object)
    frame["row"] = frame["row"].astype("Int64")
    return frame, short


def _need_grades(path: Path, header: list[str]) -> None:
    if not any(c in header for c in GRADE_COLUMNS):
        raise ImportSourceError(
            f"labels CSV {path} has no grade column; give {' and/or '.join(GRADE_COLUMNS)}"
        )


def _csv_listing(root: Path, path: Path, rows_progress: RowsProgress | None = None) -> Listing:
    header, rows = read_csv_rows(path, rows_progress=rows_progress)
    for needed in ("image", "patient_id"):
        if needed not in header:
            raise ImportSourceError(
                f"labels CSV {path}: column {needed!r} is missing; needed: image, patient_id, "
                "and kl and/or cppd (optional: side)"
            )
    _need_grades(path, header)
    # Two passes of the rows: making the table, then looking each film up in the folder.
    ticker = RowTicker(rows_progress, READING_ROWS, len(rows), passes=2)
    table, short = _table(header, rows, ticker.tick)
    listed = [_clean_relative(name) for name in table["image"]]
    table["image"] = _texts(listed, table.index)
    # Outside paths, links out, FIFOs and devices go on to the film check, which names them
    # without opening them (`film_path_refusal`); only names with nothing behind them are
    # missing.
    real_root = os.path.realpath(root)  # once, not once per listed name
    present: list[str] = []
    missing: list[str] = []
    for name in dict.fromkeys(listed):
        ticker.tick()
        if name:
            refusal = film_path_refusal(root, name, real_root=real_root)
            (present if _behind(refusal) else missing).append(name)
    ticker.done()
    in_folder = film_files(root, skip=path)
    unlisted = sorted(set(in_folder) - set(listed))
    notes = []
    if csv_delimiter(path) == ";":
        notes.append(f"{path.name} separates its cells with ';' and was read that way")
    return Listing(
        "csv",
        root,
        path,
        table,
        present,
        unlisted=unlisted,
        short_rows=short,
        notes=notes,
        near_names=near_names(missing, in_folder),
        missing=frozenset(missing),
    )


def _behind(refusal: FilmRefused | None) -> bool:
    """Whether a listed name is something to check (a file, a link, a FIFO ...), inside the
    folder or not; False only when nothing is there (``refusal``: its `film_path_refusal`)."""
    return refusal is None or refusal.kind != "missing_file" or refusal.reason == DANGLING_LINK


def near_names(missing: list[str], files: list[str]) -> dict[str, str]:
    """For listed names with no file: the folder's file whose name differs only in Unicode
    normalisation (NFC / NFD: 'é' as one character or as 'e' and an accent) or in case."""
    by_key: dict[str, str] = {}
    for f in files:
        by_key.setdefault(unicodedata.normalize("NFC", f).casefold(), f)
    found = {}
    for name in missing:
        other = by_key.get(unicodedata.normalize("NFC", name).casefold())
        if other is None:
            continue
        same_form = unicodedata.normalize("NFC", other) == unicodedata.normalize("NFC", name)
        how = "in Unicode normalisation (NFC / NFD) only" if same_form else "in case"
        if not same_form and unicodedata.normalize("NFC", name) != name:
            how = "in case and Unicode normalisation"
        found[name] = f"the folder has {other!r}, whose name differs {how}"
    return found


def _dicom_listing(root: Path, path: Path) -> Listing:
    header, rows = read_csv_rows(path)
    key = "sop_instance_uid" if "sop_instance_uid" in header else "image"
    if key not in header:
        raise ImportSourceError(
            f"labels CSV {path}: a DICOM grades CSV is keyed by sop_instance_uid or image"
        )
    _need_grades(path, header)
    table, short = _table(header, rows)
    if key == "sop_instance_uid":
        uid_col = header.index("sop_instance_uid")
        by_line = {line: cells[uid_col].strip() for line, cells in rows if uid_col < len(cells)}
        table["image"] = _texts([by_line.get(int(line), "") for line in table["row"]], table.index)
    else:
        table["image"] = _texts([_clean_relative(name) for name in table["image"]], table.index)
    files = film_files(root, skip=path)
    notes = [
        "patient ids and sides come from each DICOM file's PatientID and ImageLaterality "
        "(or Laterality) tags; a patient_id or side in the CSV is used where a tag is empty, "
        "and one that contradicts the tag is reported"
    ]
    return Listing("dicom", root, path, table, files, key=key, short_rows=short, notes=notes)


def film_files(root: Path, *, skip: Path | None = None) -> list[str]:
    """Paths inside ``root`` of files that may be films, sorted; hidden ones are left out.

    A film has a film extension, none, or a number for one (DICOM files named by UID).
    """
    found = []
    skip_resolved = skip.resolve() if skip is not None else None
    top = str(root)
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        inside = os.path.relpath(dirpath, top)
        for name in filenames:
            if name.startswith("."):
                continue
            suffix = os.path.splitext(name)[1].lower()
            if suffix and suffix not in FILM_SUFFIXES and not suffix[1:].isdigit():
                continue
            skipped = skip_resolved is not None and name == skip_resolved.name
            if skipped and Path(dirpath, name).resolve() == skip_resolved:
                continue
            found.append(name if inside == "." else f"{inside}/{name}".replace(os.sep, "/"))
    return sorted(found)


def _clean_relative(name: str) -> str:
    """A listed path as a clean relative POSIX path ('./a.png' → 'a.png')."""
    name = name.strip().replace("\\", "/")
    return posixpath.normpath(name) if name else ""


# -- grade folders ---------------------------------------------------------------------------


def _is_grade_name(name: str) -> bool:
    return name.isdigit()


def _grade_dirs(root: Path) -> list[tuple[str, Path]]:
    """(split, folder) of every grade folder: ROOT/<digits> or ROOT/<split>/<digits>.

    The split is '' for the flat layout. Folders named by any number count, so a folder '5'
    is reported as a grade out of range rather than silently skipped.
    """
    subdirs = sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    flat = [("", d) for d in subdirs if _is_grade_name(d.name)]
    if flat:
        return flat
    nested = []
    for split_dir in subdirs:
        nested += [
            (split_dir.name, d)
            for d in sorted(split_dir.iterdir())
            if d.is_dir() and _is_grade_name(d.name)
        ]
    return nested


def patient_from_stem(stem: str) -> tuple[str, str, bool]:
    """(patient id, side as written or '', whether the name gave the patient) of a file stem.

    ``9001104_1`` → ('9001104', '', True); ``9001104L`` and ``knee_07_R`` → the part before
    the side, and the side; any other stem is its own patient (False).
    """
    match = _OAI_STEM.match(stem)
    if match:
        return match["patient"], "", True
    match = _SIDE_STEM.match(stem)
    if match:
        return match["patient"].rstrip("_- "), match["side"], True
    return stem, "", False


def _grade_folder_listing(root: Path, layout_split: str) -> Listing:
    dirs = _grade_dirs(root)
    records = []
    for split, folder in dirs:
        for name in film_files(folder):
            rel = (folder / name).relative_to(root).as_posix()
            patient, side, _ = patient_from_stem(Path(name).with_suffix("").name)
            given = "test" if layout_split == "test" and split == "test" else ""
            records.append(
                {
                    "row": pd.NA,
                    "image": rel,
                    "patient_id": patient,
                    "side": side,
                    KL.column: folder.name,
                    **{c: "" for c in GRADE_COLUMNS if c != KL.column},
                    GIVEN_SPLIT: given,
                    **{c: "" for c in LABEL_BOX_COLUMNS},
                    "_named": _,
                    "_split": split,
                }
            )
    table = pd.DataFrame.from_records(records, columns=[*ROW_COLUMNS, "_named", "_split"])
    splits = sorted({s for s in table["_split"] if s})
    has_test = "test" in splits
    notes = [_patient_note(table)]
    if splits:
        how = (
            "its test folder is the test set of every seed; the other films are split into "
            "training and validation per seed"
            if layout_split == "test" and has_test
            else "ignored: every seed draws its own stratified 70/30 split, as the paper does"
        )
        notes.append(f"the layout's own split ({', '.join(splits)}) is {how}")
    used = "test" if layout_split == "test" and has_test else ("ignored" if splits else None)
    table = table.drop(columns=["_named", "_split"]).astype(object)
    table["row"] = table["row"].astype("Int64")
    files = list(table["image"])
    return Listing("grade_folders", root, None, table, files, layout_split=used, notes=notes)


def _patient_note(table: pd.DataFrame) -> str:
    named = int(table["_named"].sum()) if len(table) else 0
    alone = len(table) - named
    return (
        "grade folders carry no patient ids: for "
        f"{named} film(s) the patient was read from the file name (9001104_1 and 9001104L "
        f"→ patient 9001104); {alone} other film(s) are each their own patient, so two films "
        "of one person under unrelated names could fall on both sides of a split; give a "
        "labels CSV with patient_id to rule that out"
    )


# -- DICOM -----------------------------------------------------------------------------------


def resolve_dicom(listing: Listing, tags: dict[str, tuple[str, str, str]]) -> pd.DataFrame:
    """The rows of a DICOM listing with files, patients and sides taken from the tags.

    Args:
        listing: A ``dicom`` listing.
        tags: file → (PatientID, laterality, SOPInstanceUID) of every DICOM file read.

    Returns:
        The rows with ``image`` a file (or '' when no file has the key), ``patient_id`` and
        ``side`` from the tags where present (else from the CSV), and ``tag_*`` / ``csv_*``
        kept for the checks (a CSV that contradicts the film's tags is a problem).
    """
    rows = listing.rows.copy()
    if listing.key == "sop_instance_uid":
        by_uid: dict[str, str] = {}
        for file, (_, _, uid) in sorted(tags.items()):
            by_uid.setdefault(uid, file)
        rows["key"] = rows["image"]
        rows["image"] = _texts(
            [by_uid.get(uid, "") if uid else "" for uid in rows["key"]], rows.index
        )
    else:
        rows["key"] = rows["image"]
    rows["tag_patient"] = [tags.get(f, ("", "", ""))[0] for f in rows["image"]]
    # Only R and L name one knee's side; B (both knees) and U (unpaired) leave the side to
    # the CSV (a bilateral film is listed once per knee with its side).
    rows["tag_side"] = [_one_side(tags.get(f, ("", "", ""))[1]) for f in rows["image"]]
    rows["csv_patient"] = rows["patient_id"]
    rows["csv_side"] = rows["side"]
    rows["patient_id"] = _tag_or_csv(rows["tag_patient"], rows["csv_patient"])
    rows["side"] = _tag_or_csv(rows["tag_side"], rows["csv_side"])
    return rows


def _one_side(tag: str) -> str:
    return tag if tag in ("R", "L") else ""


def _tag_or_csv(tag: pd.Series, written: pd.Series) -> list[str]:
    return [t or c for t, c in zip(tag, written, strict=True)]
