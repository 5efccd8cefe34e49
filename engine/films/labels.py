"""Importing real radiographs: a folder of DICOM/PNG/JPEG/TIFF films and a labels CSV.

The CSV has one row per film, or per knee: ``image`` (path inside the folder),
``patient_id``, optionally ``side`` (L/R, left/right: the patient's side), ``kl`` (0–4,
empty for CPPD-only films), ``cppd`` (0–3) and the knee's box ``x0, y0, x1, y1`` (film
pixels). A bilateral film listed twice, once with side R and once with side L, is two
images, ``<id>_R`` and ``<id>_L`` (`knee_image_id`); a film listed once keeps its id
(`image_id_for`). Each image is read as grey, cropped to its knee (the box a crop review
set, else the labels' box, else the detector's knee of its side,
`engine.import_check.knee_for_side`), resized and written to the same cache layout as the
phantom (``images.npy``, ``meta.csv``, then ``manifest.json`` last).

`read_labels` stops at the first problem; `engine.import_check.check_import` reports every
problem of a folder at once, in any of the layouts of `engine.import_layouts`, and an
import registers the good films as a labels CSV this module reads like any other.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image, UnidentifiedImageError

from engine.data import image_cache_writer
from engine.detect import Box, crop_and_resize, detect_knee_box
from engine.vocab import TASK_INFO

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
# Column of a labels file naming films the import fixed as the test set ("test"; empty for
# the rest): a grade-per-folder layout's own test folder, when the import keeps it.
GIVEN_SPLIT = "given_split"
FILM_FORMATS = ("PNG", "JPEG", "TIFF")
# File extensions of films (DICOM files often have none, or a UID's last number).
FILM_SUFFIXES = (".dcm", ".dicom", ".png", ".jpg", ".jpeg", ".tif", ".tiff")
MIN_FILM_SIDE = 64
# Modes of films deeper than 8 bits (16-bit PNG/TIFF exports of radiographs, float TIFFs).
_DEEP_MODES = ("I;16", "I;16B", "I;16L", "I;16N", "I", "F")


def grey_film(image: Image.Image) -> np.ndarray:
    """A film as (H, W) uint8 grey.

    8-bit and colour films are converted as they are. Deeper films (16-bit, float) are
    windowed to their own 0.5-99.5 percentile range: Pillow's plain conversion would clip
    every value above 255 to white, which is most of a 16-bit radiograph.
    """
    if image.mode not in _DEEP_MODES:
        return np.asarray(image.convert("L"))
    return _window(np.asarray(image, dtype=np.float32))


def _window(values: np.ndarray) -> np.ndarray:
    """Deep pixel values to uint8 over their own 0.5-99.5 percentile range."""
    lo, hi = np.percentile(values, [0.5, 99.5])
    scaled = np.clip((values - lo) / max(float(hi - lo), 1e-6), 0.0, 1.0)
    return (scaled * 255.0 + 0.5).astype(np.uint8)


def is_dicom(head: bytes) -> bool:
    """Whether bytes start like a DICOM Part 10 file (128-byte preamble, then 'DICM')."""
    return head[128:132] == b"DICM"


@dataclass(frozen=True)
class DicomTags:
    """What a DICOM file's header says about whose knee it shows (empty strings if absent)."""

    patient_id: str
    laterality: str  # ImageLaterality (0020,0062), else Laterality (0020,0060): 'L', 'R' or ''
    sop_instance_uid: str


def dicom_film(source: bytes | Path, name: str) -> np.ndarray:
    """A DICOM radiograph as (H, W) uint8 grey, as a reader would see it.

    The modality LUT (rescale slope and intercept) and the file's own display window (VOI
    LUT, window centre and width) are applied, MONOCHROME1 films (where high values are dark)
    are inverted so bone is bright, and the result is mapped to 0-255 over its own 0.5-99.5
    percentile range.

    Raises:
        ValueError: Not readable, no image, several frames, or pixels compressed in a way
            pydicom cannot decode here; the message names the file and what to do.
    """
    return read_dicom(source, name)[0]


def read_dicom(source: bytes | Path, name: str) -> tuple[np.ndarray, DicomTags]:
    """A DICOM radiograph as `dicom_film` reads it, with the tags an import needs.

    Raises:
        ValueError: As `dicom_film`.
    """
    import pydicom
    from pydicom.errors import InvalidDicomError
    from pydicom.pixels import apply_modality_lut, apply_voi_lut

    try:
        ds = pydicom.dcmread(io.BytesIO(source) if isinstance(source, bytes) else source)
    except (InvalidDicomError, OSError, ValueError) as exc:
        raise ValueError(f"{name} is not a DICOM file SoftGrade can read ({exc})") from exc
    if "PixelData" not in ds:
        raise ValueError(f"{name} is a DICOM file without an image (no pixel data)")
    try:
        pixels = ds.pixel_array
    except (NotImplementedError, RuntimeError, ValueError) as exc:
        syntax = getattr(getattr(ds, "file_meta", None), "TransferSyntaxUID", None)
        how = syntax.name if syntax is not None else "an unknown transfer syntax"
        raise ValueError(
            f"{name}: its pixels are stored as {how}, which cannot be decoded here; "
            "export the film uncompressed (or as PNG)"
        ) from exc
    frames = int(getattr(ds, "NumberOfFrames", 1) or 1)
    if frames > 1 or pixels.ndim != 2:
        raise ValueError(
            f"{name} holds {frames} frame(s) of shape {pixels.shape}; give one grey film per file"
        )
    values = apply_voi_lut(apply_modality_lut(pixels, ds), ds).astype(np.float32)
    if str(getattr(ds, "PhotometricInterpretation", "")) == "MONOCHROME1":
        values = values.max() - values
    laterality = str(ds.get("ImageLaterality", "") or ds.get("Laterality", "") or "")
    tags = DicomTags(
        patient_id=str(ds.get("PatientID", "") or "").strip(),
        laterality=laterality.strip().upper(),
        sop_instance_uid=str(ds.get("SOPInstanceUID", "") or "").strip(),
    )
    return _window(values), tags


def decode_film(data: bytes, name: str) -> np.ndarray:
    """Read an uploaded film (DICOM, PNG, JPEG or TIFF bytes) as (H, W) uint8 grey.

    Raises:
        ValueError: Not an image, another format, or smaller than ``MIN_FILM_SIDE`` pixels a
            side; the message names the file and what is allowed.
    """
    film = dicom_film(data, name) if is_dicom(data) else _pillow_film(io.BytesIO(data), name)
    if min(film.shape) < MIN_FILM_SIDE:
        h, w = film.shape
        raise ValueError(f"{name} is {w} x {h} px; a film needs at least {MIN_FILM_SIDE} px a side")
    return film


def read_film_file(path: Path) -> np.ndarray:
    """A film file of an imported folder (DICOM, PNG, JPEG or TIFF) as (H, W) uint8 grey."""
    with path.open("rb") as handle:
        head = handle.read(132)
    if is_dicom(head):
        return dicom_film(path, path.name)
    return _pillow_film(path, path.name)


def read_film_and_laterality(path: Path) -> tuple[np.ndarray, str]:
    """A film file as `read_film_file` reads it, with its DICOM laterality tag ('' if none)."""
    with path.open("rb") as handle:
        head = handle.read(132)
    if is_dicom(head):
        film, tags = read_dicom(path, path.name)
        return film, tags.laterality
    return _pillow_film(path, path.name), ""


def _pillow_film(source: io.BytesIO | Path, name: str) -> np.ndarray:
    allowed = ", ".join(("DICOM", *FILM_FORMATS))
    try:
        with Image.open(source) as image:
            if image.format not in FILM_FORMATS:
                raise ValueError(f"{name} is a {image.format} image; give a {allowed} film")
            return grey_film(image)
    except (UnidentifiedImageError, OSError) as exc:
        raise ValueError(
            f"{name} is not an image SoftGrade can read: give a {allowed} film"
        ) from exc


def read_labels(folder: Path, labels_csv: Path) -> pd.DataFrame:
    """Read and check the labels CSV; ValueError names the first problem found."""
    if not folder.is_dir():
        raise ValueError(f"dataset.path: {folder} is not a folder")
    if not labels_csv.is_file():
        raise ValueError(f"dataset.labels_csv: {labels_csv} does not exist")
    table = pd.read_csv(labels_csv, dtype={"image": str, "patient_id": str})
    missing = [c for c in REQUIRED_COLUMNS if c not in table]
    if missing:
        raise ValueError(
            f"dataset.labels_csv: column {missing[0]!r} is missing; needed: image, patient_id, "
            "and kl and/or cppd (optional: side)"
        )
    if "kl" not in table and "cppd" not in table:
        raise ValueError("dataset.labels_csv: needs a 'kl' or a 'cppd' column of grades")
    for column, (low, high) in GRADE_RANGES.items():
        if column not in table:
            table[column] = pd.NA
        grades = pd.to_numeric(table[column], errors="coerce").astype("Float64")
        bad = table[column].notna() & (
            grades.isna() | (grades < low) | (grades > high) | (grades % 1 != 0)
        )
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(
                f"dataset.labels_csv: row {row + 2} has {column}="
                f"{_as_written(table[column].iloc[row])}; "
                f"allowed: whole numbers {low} to {high} or empty"
            )
        table[column] = grades.astype("Int64")
        table[f"{column}_true"] = pd.array([pd.NA] * len(table), dtype="Int64")
    absent = [name for name in table["image"] if not (folder / name).is_file()]
    if absent:
        raise ValueError(f"dataset.path: {len(absent)} listed films are missing, e.g. {absent[0]}")
    sides = table["side"] if "side" in table else pd.Series([None] * len(table))
    table["side"] = [_side_of_row(value, i) for i, value in enumerate(sides)]
    per_knee = _per_knee_films(table)
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


def _per_knee_films(table: pd.DataFrame) -> set[str]:
    """Films listed once per knee: two rows of one patient, side R and side L."""
    counts = table["image"].value_counts()
    twice = counts[counts == 2].index
    per_knee = set()
    for image in twice:
        rows = table[table["image"] == image]
        one_patient = rows["patient_id"].astype(str).nunique() == 1
        if one_patient and sorted(rows["side"].fillna("")) == ["L", "R"]:
            per_knee.add(image)
    return per_knee


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
    cells = [getattr(row, c, None) for c in LABEL_BOX_COLUMNS]
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
#: Columns a folder cache's ``meta.csv`` adds per film: the box it was cropped around (film
#: pixels), the detector's confidence (empty for a reviewed or labelled box) and where the box
#: came from: 'detector', 'labels' (the labels CSV's box) or 'review' (a crop review's).
BOX_META_COLUMNS = ("x0", "y0", "x1", "y1", "knee_confidence", "box_source")

#: Called as films are cropped: (films done, films in all).
CacheProgress = Callable[[int, int], None]


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
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "review.csv"
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
    its side of the film (`engine.import_check.knee_for_side`; 'detector'). The detector is
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
    # engine.import_check imports this module.
    from engine.import_check import detector_from_params, film_knees, knee_for_side

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
