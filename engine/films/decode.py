"""Decoding films: DICOM, PNG, JPEG or TIFF bytes to one grey uint8 array.

Deep films (16-bit PNG/TIFF exports, DICOM) are windowed to their own 0.5-99.5 percentile
range; DICOM goes through its modality and VOI lookup tables, and MONOCHROME1 is inverted so
bone is bright. pydicom is imported only when a DICOM film is read.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

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
