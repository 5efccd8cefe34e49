"""The labels-CSV grammar: one row per film, or per knee, and how each cell is read.

The CSV has one row per film, or per knee: ``image`` (path inside the folder),
``patient_id``, optionally ``side`` (L/R, left/right: the patient's side), ``kl`` (0–4,
empty for CPPD-only films), ``cppd`` (0–3) and the knee's box ``x0, y0, x1, y1`` (film
pixels). A bilateral film listed twice, once with side R and once with side L, is two
images, ``<id>_R`` and ``<id>_L`` (`knee_image_id`); a film listed once keeps its id
(`image_id_for`).

The cells are read here once (`parse_grade`, `normalise_side`, `label_box_problem`,
`per_knee_films`), by two readers: `read_labels` stops at the first problem (a dataset
spec's labels, read when its cache is built by `engine.datasets.build_folder_cache`);
`engine.films.check.check_import` reports every problem of a folder at once, in any of the
layouts of `engine.films.layouts`, and an import registers the good films as a labels CSV
`read_labels` reads like any other. A crop review file (`write_review_csv`,
`read_review_csv`) lists films to leave out and boxes to crop around.
"""

from __future__ import annotations

import hashlib
import logging
import posixpath
import re
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.films.decode import FILM_SUFFIXES
from engine.films.reading import film_path_refusal
from engine.vocab import TASK_INFO, Box

log = logging.getLogger(__name__)

REQUIRED_COLUMNS = ("image", "patient_id")
GRADE_RANGES = {t.column: (0, t.top_grade) for t in TASK_INFO.values()}
# How a labels CSV may write a knee's side (any case); stored as 'L' or 'R'. A film's left is
# the patient's left (radiological convention: the patient's left knee is shown on the
# film's right), as DICOM's ImageLaterality records it.
SIDE_WORDS = {"l": "L", "left": "L", "r": "R", "right": "R"}
SIDES_ALLOWED = "L, R, left or right (any case), or empty"
# Optional columns of a labels CSV: the knee's box in film pixels (x1, y1 exclusive), one row
# per knee; a row with a box is cropped around it instead of the detector's.
LABEL_BOX_COLUMNS = ("x0", "y0", "x1", "y1")
# Rows a labels CSV may hold (films, or knees of films listed per knee). Public knee-film
# collections list tens of thousands of knees; a CSV of more is a mistake or an attack (a
# million rows took 205 s and 2 GB to check before this cap), refused after reading this
# many rows and one more, never the rest (issue 31, bench/RESULTS.md).
MAX_LABEL_ROWS = 100_000
# Column of a labels file naming films the import fixed as the test set ("test"; empty for
# the rest): a grade-per-folder layout's own test folder, when the import keeps it.
GIVEN_SPLIT = "given_split"
# The bidirectional controls (Unicode's Bidi_Control property): they reorder how the text
# around them is shown, so "knee\u202egnp.exe" reads as "kneeexe.png".
BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


# Unicode's control characters (category Cc: U+0000-U+001F and U+007F-U+009F) and the
# bidirectional controls, as one pattern: the import checks every path and id with it.
_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f" + "".join(sorted(BIDI_CONTROLS)) + "]")


def _hidden(ch: str) -> bool:
    return ch in BIDI_CONTROLS or unicodedata.category(ch) == "Cc"


def hidden_characters(text: str) -> list[str]:
    """The control characters (NUL, escape, newline, ...: Unicode's Cc) and bidirectional
    controls in ``text``, each once, as ``U+XXXX`` (empty: the text shows what it holds).
    A name or id holding one shows other than it is, or drives a terminal."""
    if not _HIDDEN.search(text):
        return []
    return [f"U+{ord(ch):04X}" for ch in dict.fromkeys(text) if _hidden(ch)]


def escaped(text: str) -> str:
    """``text`` with every control and bidirectional control written as an escape
    (``\\u202e``, ``\\x00``), so a report shows a name as it is and a terminal or page
    never obeys it; other text (accents, any script) is left as it is."""
    if not _HIDDEN.search(text):
        return text
    return "".join(
        ch.encode("unicode_escape").decode("ascii") if _hidden(ch) else ch for ch in text
    )


def read_labels(folder: Path, labels_csv: Path) -> pd.DataFrame:
    """Read and check the labels CSV; ValueError names the first problem found."""
    if not folder.is_dir():
        raise ValueError(f"dataset.path: {folder} is not a folder")
    if not labels_csv.is_file():
        raise ValueError(f"dataset.labels_csv: {labels_csv} does not exist")
    table = pd.read_csv(
        labels_csv, dtype={"image": str, "patient_id": str}, nrows=MAX_LABEL_ROWS + 1
    )
    if len(table) > MAX_LABEL_ROWS:
        raise ValueError(too_many_rows(labels_csv))
    missing = [c for c in REQUIRED_COLUMNS if c not in table]
    if missing:
        raise ValueError(
            f"dataset.labels_csv: column {missing[0]!r} is missing; needed: image, patient_id, "
            "and kl and/or cppd (optional: side)"
        )
    if "kl" not in table and "cppd" not in table:
        raise ValueError("dataset.labels_csv: needs a 'kl' or a 'cppd' column of grades")
    _refuse_hidden_characters(table)
    for column, (low, high) in GRADE_RANGES.items():
        if column not in table:
            table[column] = pd.NA
        parsed = [parse_grade(value, high) for value in table[column]]
        bad = [i for i, (_, message) in enumerate(parsed) if message]
        if bad:
            row = bad[0]
            raise ValueError(
                f"dataset.labels_csv: row {row + 2} has {column}="
                f"{_as_written(table[column].iloc[row])}; "
                f"allowed: whole numbers {low} to {high} or empty"
            )
        table[column] = pd.array([grade for grade, _ in parsed], dtype="Int64")
        table[f"{column}_true"] = pd.array([pd.NA] * len(table), dtype="Int64")
    refused = [
        (str(name), r)
        for name in table["image"]
        if (r := film_path_refusal(folder, str(name))) is not None and r.kind != "missing_file"
    ]
    if refused:
        name, why = refused[0]
        raise ValueError(f"dataset.labels_csv: {len(refused)} listed films are refused, e.g. {why}")
    absent = [name for name in table["image"] if not (folder / name).is_file()]
    if absent:
        raise ValueError(f"dataset.path: {len(absent)} listed films are missing, e.g. {absent[0]}")
    sides = table["side"] if "side" in table else pd.Series([None] * len(table))
    table["side"] = [_side_of_row(value, i) for i, value in enumerate(sides)]
    per_knee = per_knee_films(table)
    table["image_id"] = [
        knee_image_id(image, side) if image in per_knee else image_id_for(image)
        for image, side in zip(table["image"], table["side"], strict=True)
    ]
    twice = table["image"][table["image"].duplicated() & ~table["image"].isin(per_knee)]
    if not twice.empty:
        raise ValueError(
            f"dataset.labels_csv: {twice.iloc[0]} is listed twice; keep one row per film, or "
            "one row per knee of a film showing both (side R and side L)"
        )
    knee_ids = set(table.loc[table["image"].isin(per_knee), "image_id"])
    clash = table["image_id"].duplicated(keep=False) & table["image_id"].isin(knee_ids)
    if clash.any():
        raise ValueError(
            f"dataset.labels_csv: {', '.join(table['image'][clash])} share the image id "
            f"{table['image_id'][clash].iloc[0]!r}; rename one of the films"
        )
    _read_label_boxes(table)
    table["source"] = table["image"].map(lambda n: str(folder / n))
    if GIVEN_SPLIT in table:
        table[GIVEN_SPLIT] = table[GIVEN_SPLIT].fillna("").astype(str)
    return table


def too_many_rows(csv_path: Path) -> str:
    """The one message for a labels CSV over `MAX_LABEL_ROWS` rows."""
    return (
        f"labels CSV {csv_path} lists more than {MAX_LABEL_ROWS:,} films (rows); an import "
        f"holds at most {MAX_LABEL_ROWS:,}. Check that this is the labels file, or import the "
        "films in parts"
    )


def _refuse_hidden_characters(table: pd.DataFrame) -> None:
    """ValueError naming the first film path or patient id that holds a control or
    bidirectional-control character (the import check names every one)."""
    for column in REQUIRED_COLUMNS:
        for i, value in enumerate(table[column]):
            if isinstance(value, str) and (hidden := hidden_characters(value)):
                raise ValueError(
                    f"dataset.labels_csv: row {i + 2} has {column} {escaped(value)}, which "
                    f"holds {', '.join(hidden)}; ids and paths may not hold control characters"
                )


def per_knee_films(table: pd.DataFrame) -> set[str]:
    """Films listed once per knee: two rows of one patient, side R and side L (sides as
    `normalise_side` reads them; empty or None for none)."""
    named = table[
        table["image"].notna() & (table["image"] != "") & table["image"].duplicated(keep=False)
    ]
    return {
        str(image)
        for image, group in named.groupby("image", sort=False)
        if len(group) == 2
        and sorted(group["side"].fillna("")) == ["L", "R"]
        and group["patient_id"].astype(str).nunique() == 1
    }


def parse_grade(raw: object, top: int) -> tuple[int | None, str]:
    """(grade or None, '' or what is wrong) of a grade cell as written: a whole number 0 to
    ``top``, or empty (None, NaN or blank)."""
    if raw is None or (not isinstance(raw, str) and pd.isna(raw)):
        return None, ""
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


def _read_label_boxes(table: pd.DataFrame) -> None:
    """Box columns of a labels CSV as Int64 (NA: no box), in place; ValueError names the
    first bad row (the import check names every one)."""
    given = [c for c in LABEL_BOX_COLUMNS if c in table]
    if not given:
        return
    if len(given) < len(LABEL_BOX_COLUMNS):
        raise ValueError(
            f"dataset.labels_csv: box columns {', '.join(given)} without "
            f"{', '.join(c for c in LABEL_BOX_COLUMNS if c not in given)}; give all four "
            "(x0, y0, x1, y1, film pixels) or none"
        )
    for i in range(len(table)):
        cells = [table.at[table.index[i], c] for c in LABEL_BOX_COLUMNS]
        problem = label_box_problem(cells)
        if problem:
            raise ValueError(f"dataset.labels_csv: row {i + 2}: {problem}")
    for column in LABEL_BOX_COLUMNS:
        values = pd.to_numeric(table[column], errors="coerce")
        table[column] = values.round().astype("Int64")


def label_box_problem(cells: list[object]) -> str:
    """What is wrong with a row's box cells x0, y0, x1, y1 ('' when they are fine: all four
    empty, or four whole numbers from 0 with x1 > x0 and y1 > y0). Whether the box lies on
    the film is checked once the film is decoded."""
    empty = [c is None or pd.isna(c) or not str(c).strip() for c in cells]
    if all(empty):
        return ""
    if any(empty):
        return "a knee box needs all four of x0, y0, x1, y1 (film pixels), or none"
    try:
        values = [float(str(c).strip()) for c in cells]
    except ValueError:
        return f"box {', '.join(str(c) for c in cells)} is not four numbers"
    if any(not v.is_integer() or v < 0 for v in values):
        return f"box {', '.join(str(c) for c in cells)}: coordinates are whole pixels from 0"
    x0, y0, x1, y1 = values
    if x1 <= x0 or y1 <= y0:
        return f"box {int(x0)}, {int(y0)}, {int(x1)}, {int(y1)} needs x1 > x0 and y1 > y0"
    return ""


def row_box(row: Any) -> Box | None:
    """The knee box a labels row gives (`LABEL_BOX_COLUMNS`), or None."""
    cells: list[Any] = [getattr(row, c, None) for c in LABEL_BOX_COLUMNS]
    if any(c is None or pd.isna(c) for c in cells):
        return None
    x0, y0, x1, y1 = (int(c) for c in cells)
    return (x0, y0, x1, y1)


def labelled_boxes(folder: Path, labels_csv: Path) -> list[tuple[Path, list[Box]]]:
    """The knee boxes a labels CSV gives, per film, to train a detector on.

    A film is listed when every row of it gives a box (a bilateral film listed once per knee
    with only one box would teach the detector that its other knee is background).

    Args:
        folder: The film folder.
        labels_csv: Its labels CSV (columns as `read_labels` reads them, with x0, y0, x1, y1).

    Returns:
        ``[(film path, [box, ...]), ...]`` in CSV order, boxes ``(x0, y0, x1, y1)`` in film
        pixels (x1, y1 exclusive); empty when the CSV gives no boxes.

    Raises:
        ValueError: As `read_labels`.
    """
    table = read_labels(Path(folder), Path(labels_csv))
    if LABEL_BOX_COLUMNS[0] not in table:
        return []
    out: dict[str, list[Box | None]] = {}
    for row in table.itertuples(index=False):
        out.setdefault(str(row.source), []).append(row_box(row))
    return [
        (Path(source), [b for b in boxes if b is not None])
        for source, boxes in out.items()
        if all(b is not None for b in boxes)
    ]


def knee_image_id(image: str, side: str) -> str:
    """The id of one knee of a film listed once per knee: ``<image id>_<side>``
    ('films/0042_R' and 'films/0042_L' for films/0042.png listed with side R and side L).
    A film listed once keeps `image_id_for`, whatever its side."""
    return f"{image_id_for(image)}_{side}"


def image_id_for(image: str) -> str:
    """An image's id: its path inside the folder without a film extension ('0/9001104_1').

    For films at the top of the folder this is the file-name stem, as it always was; films
    in sub-folders keep their folder, so two folders may hold the same file name. Only film
    extensions go: DICOM files are often named by their UID ('1.2.840.5'), whose last part
    is no extension.
    """
    stem, suffix = posixpath.splitext(image.replace("\\", "/"))
    return stem if suffix.lower() in FILM_SUFFIXES else image.replace("\\", "/")


def normalise_side(value: object) -> str | None:
    """'L', 'R' or None (empty) for a side as a labels CSV may write it.

    Raises:
        ValueError: Any other value; the message says what is allowed.
    """
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return None
    text = str(value).strip()
    if not text:
        return None
    if text.lower() not in SIDE_WORDS:
        raise ValueError(f"side={text!r} is not a side; allowed: {SIDES_ALLOWED}")
    return SIDE_WORDS[text.lower()]


def _side_of_row(value: object, row: int) -> str | None:
    try:
        return normalise_side(value)
    except ValueError as exc:
        raise ValueError(f"dataset.labels_csv: row {row + 2} has {exc}") from exc


def _as_written(value: object) -> str:
    """A CSV cell as its author wrote it: 7 (not 7.0, which pandas reads), 'x' for text."""
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return repr(value) if isinstance(value, str) else str(value)


#: Columns of a crop review file (a dataset spec's ``review_csv``): one row per reviewed film,
#: ``action`` 'exclude' (leave it out) or 'box' (crop around x0, y0, x1, y1 in film pixels).
REVIEW_CSV_COLUMNS = ("image_id", "action", "x0", "y0", "x1", "y1")


def write_review_csv(reviews: pd.DataFrame, out_root: Path) -> Path:
    """Write crop review decisions as a review file named by its content.

    Args:
        reviews: One row per film with `REVIEW_CSV_COLUMNS` (box columns empty for
            'exclude').
        out_root: Folder of review files (``$SOFTGRADE_HOME/reviews``).

    Returns:
        ``out_root/<sha1>/review.csv``: the same decisions always give the same file, so a
        dataset spec naming it (and its cache and splits) changes exactly when they do.
    """
    table = reviews[list(REVIEW_CSV_COLUMNS)].sort_values("image_id", kind="stable")
    for column in ("x0", "y0", "x1", "y1"):
        table[column] = table[column].astype("Int64")
    text = table.to_csv(index=False)
    folder = Path(out_root) / hashlib.sha1(text.encode()).hexdigest()[:12]
    return write_named_by_content(folder / "review.csv", text)


def write_named_by_content(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` (whose folder is named by that text's hash) and return it.

    A file already holding the text is left untouched (importing the same films again writes
    nothing); otherwise it is written whole to a temporary file and renamed, so a reader
    never sees half a file.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text() != text:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return path


def read_review_csv(path: Path) -> tuple[set[str], dict[str, Box]]:
    """A review file as (image ids to leave out, image id → reviewed box).

    Raises:
        ValueError: The file is missing, lacks a column, or has an unknown action or a box
            that is not four whole coordinates with x1 > x0 and y1 > y0 (the row is named).
    """
    if not path.is_file():
        raise ValueError(f"dataset.review_csv: {path} does not exist")
    table = pd.read_csv(path, dtype={"image_id": str, "action": str})
    missing = [c for c in REVIEW_CSV_COLUMNS if c not in table]
    if missing:
        raise ValueError(
            f"dataset.review_csv: column {missing[0]!r} is missing; needed: "
            + ", ".join(REVIEW_CSV_COLUMNS)
        )
    excluded: set[str] = set()
    boxes: dict[str, Box] = {}
    for i, row in enumerate(table.itertuples(index=False)):
        where = f"dataset.review_csv: row {i + 2} ({row.image_id})"
        if row.action == "exclude":
            excluded.add(str(row.image_id))
            continue
        if row.action != "box":
            raise ValueError(f"{where} has action {row.action!r}; allowed: exclude, box")
        coords = (row.x0, row.y0, row.x1, row.y1)
        if any(pd.isna(v) or float(v) != int(v) for v in coords):
            raise ValueError(f"{where}: a box is four whole numbers x0, y0, x1, y1")
        x0, y0, x1, y1 = (int(v) for v in coords)
        if x1 <= x0 or y1 <= y0:
            raise ValueError(f"{where}: the box needs x1 > x0 and y1 > y0")
        boxes[str(row.image_id)] = (x0, y0, x1, y1)
    return excluded, boxes
