"""Decoding films: DICOM, PNG, JPEG or TIFF bytes to one grey uint8 array.

Deep films (16-bit PNG/TIFF exports, DICOM) are windowed to their own 0.5-99.5 percentile
range; DICOM goes through its modality and VOI lookup tables, and MONOCHROME1 is inverted so
bone is bright. A film that still shows bone dark on a bright background (saved inverted, or
a DICOM whose pixels contradict its PhotometricInterpretation) is inverted back, and that is
said. pydicom is imported only when a DICOM film is read.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from engine.films.reading import MAX_FILM_BYTES, FilmRefused, read_capped

FILM_FORMATS = ("PNG", "JPEG", "TIFF")
# File extensions of films (DICOM files often have none, or a UID's last number).
FILM_SUFFIXES = (".dcm", ".dicom", ".png", ".jpg", ".jpeg", ".tif", ".tiff")
MIN_FILM_SIDE = 64
# Pixels a film may have, from its header, before anything is decoded: Pillow's own
# decompression-bomb limit (`PIL.Image.MAX_IMAGE_PIXELS`, ~89 M px) capped PNG before;
# every format (DICOM too) now stops at 50 M px (a 7000 x 7000 film; knee films are
# 10-20 M px), and at 128 MiB of samples (rows x columns x frames x bytes per sample).
MAX_FILM_PIXELS = min(50_000_000, Image.MAX_IMAGE_PIXELS or 50_000_000)
MAX_PIXEL_BYTES = 128 * 2**20
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
    values = np.asarray(image, dtype=np.float32)
    finite = np.isfinite(values)
    if not finite.all():
        bad_rows = int((~finite).any(axis=1).sum())
        raise FilmRefused(
            "not_finite",
            f"{(~finite).sum():,} pixels are NaN or infinite",
            f"{int((~finite).sum()):,} pixels in {bad_rows} row(s) are NaN or infinite (not "
            "numbers): a float export gone wrong; export the film again",
        )
    return _window(values)


def _window(values: np.ndarray) -> np.ndarray:
    """Deep pixel values to uint8 over their own 0.5-99.5 percentile range."""
    lo, hi = np.percentile(values, [0.5, 99.5])
    scaled = np.clip((values - lo) / max(float(hi - lo), 1e-6), 0.0, 1.0)
    return (scaled * 255.0 + 0.5).astype(np.uint8)


def is_dicom(head: bytes) -> bool:
    """Whether bytes start like a DICOM Part 10 file (128-byte preamble, then 'DICM')."""
    return head[128:132] == b"DICM"


def is_bare_dicom(head: bytes) -> bool:
    """Whether bytes start like a DICOM data set written without its preamble: a first
    element of group 0002 (file meta) or 0008 (identifying), little endian, then an explicit
    VR (two capital letters) or an implicit length. Such files are read with ``force``."""
    if len(head) < 8 or head[1:2] != b"\0" or head[0] not in (2, 8) or head[3] != 0:
        return False
    vr = head[4:6]
    return (vr.isalpha() and vr.isupper()) or head[6:8] == b"\0\0"


def looks_like_dicom(head: bytes) -> bool:
    """A DICOM file, with its preamble or without (`is_bare_dicom`)."""
    return is_dicom(head) or is_bare_dicom(head)


@dataclass(frozen=True)
class DicomTags:
    """What a DICOM file's header says about whose knee it shows (empty strings if absent)."""

    patient_id: str
    laterality: str  # ImageLaterality (0020,0062), else Laterality (0020,0060): 'L', 'R' or ''
    sop_instance_uid: str


NO_TAGS = DicomTags("", "", "")


@dataclass(frozen=True)
class DecodedFilm:
    """A decoded film, its DICOM tags (empty for other formats) and what decoding did to it
    that a person should know: (kind of `PROBLEM_KINDS`, what was done), e.g. an EXIF
    orientation applied."""

    film: np.ndarray
    tags: DicomTags = NO_TAGS
    notes: tuple[tuple[str, str], ...] = ()


def dicom_film(source: bytes | Path, name: str) -> np.ndarray:
    """A DICOM radiograph as (H, W) uint8 grey, as a reader would see it.

    The modality LUT (rescale slope and intercept) and the file's own display window (VOI
    LUT, window centre and width) are applied, MONOCHROME1 films (where high values are dark)
    are inverted so bone is bright, and the result is mapped to 0-255 over its own 0.5-99.5
    percentile range.

    Raises:
        FilmRefused: Not readable, no image, several frames, colour, pixels cut short, over
            the pixel cap, or compressed in a way that cannot be decoded here; the message
            names the file and what to do.
    """
    return read_dicom(source, name)[0]


def read_dicom(source: bytes | Path, name: str) -> tuple[np.ndarray, DicomTags]:
    """A DICOM radiograph as `dicom_film` reads it, with the tags an import needs.

    The header is checked before any pixel is decoded: rows x columns x frames x samples x
    bytes per sample must stay within `MAX_PIXEL_BYTES` (and rows x columns within
    `MAX_FILM_PIXELS`), so a small compressed file cannot make the decoder allocate
    gigabytes. A file without its 128-byte preamble is read all the same.

    Raises:
        FilmRefused: As `dicom_film`.
    """
    data = source if isinstance(source, bytes) else read_capped(source, name)
    decoded = _dicom_decoded(data, name)
    return decoded.film, decoded.tags


def _dicom_decoded(data: bytes, name: str) -> DecodedFilm:
    import pydicom
    from pydicom.errors import InvalidDicomError

    bare = not is_dicom(data)
    try:
        ds = pydicom.dcmread(io.BytesIO(data), force=bare)
    except (InvalidDicomError, OSError, ValueError, EOFError) as exc:
        raise _refuse("unreadable", name, f"not a DICOM file SoftGrade can read ({exc})") from exc
    except Exception as exc:  # pydicom's parser on hostile bytes: never a traceback
        raise _refuse("unreadable", name, f"not a DICOM file SoftGrade can read ({exc})") from exc
    if "PixelData" not in ds:
        raise _refuse("unreadable", name, "a DICOM file without an image (no pixel data)")
    _check_dicom_header(ds, name, len(data))
    if bare:
        _assume_transfer_syntax(ds)
    pixels = _dicom_pixels(ds, name)
    values = _dicom_values(ds, pixels, name)
    laterality = str(ds.get("ImageLaterality", "") or ds.get("Laterality", "") or "")
    tags = DicomTags(
        patient_id=str(ds.get("PatientID", "") or "").strip(),
        laterality=laterality.strip().upper(),
        sop_instance_uid=str(ds.get("SOPInstanceUID", "") or "").strip(),
    )
    notes: tuple[tuple[str, str], ...] = (
        (("no_preamble", "read as DICOM although it has no 128-byte preamble"),) if bare else ()
    )
    film, notes = _dicom_right_way_round(_window(values), ds, notes)
    return DecodedFilm(film, tags, notes)


def _dicom_right_way_round(
    film: np.ndarray, ds: Any, notes: tuple[tuple[str, str], ...]
) -> tuple[np.ndarray, tuple[tuple[str, str], ...]]:
    """The film with bone bright when its pixels contradict its PhotometricInterpretation
    (MONOCHROME1 pixels exported under MONOCHROME2, or inverted once already and still
    tagged MONOCHROME1): read as the tag says, bone is dark on a bright background
    (`engine.detect.inverted_polarity`, the check PNG, JPEG and TIFF films get). It is
    inverted back, and that is said, naming the tag."""
    from engine.detect import inverted_polarity

    if min(film.shape) < MIN_FILM_SIDE or not inverted_polarity(film):
        return film, notes
    tag = str(ds.get("PhotometricInterpretation", "") or "").strip() or "not given"
    said = (
        f"its PhotometricInterpretation is {tag}, yet read so the film shows bone dark on a "
        "bright background: its pixels have the other polarity; it is used inverted back"
    )
    return 255 - film, (*notes, ("polarity_tag", said))


def _header_int(ds: Any, keyword: str, default: int, name: str) -> int:
    raw = ds.get(keyword, default)
    try:
        value = int(raw if raw not in (None, "") else default)
    except (TypeError, ValueError) as exc:
        raise _refuse("unreadable", name, f"its {keyword} tag is not a number ({raw!r})") from exc
    if value < 0:
        raise _refuse("unreadable", name, f"its {keyword} tag is negative ({value})")
    return value


def _check_dicom_header(ds: Any, name: str, n_bytes: int) -> None:
    """Refuse a film by its header alone: too many pixels, several frames, colour, or
    uncompressed pixel data shorter than the header says."""
    rows = _header_int(ds, "Rows", 0, name)
    columns = _header_int(ds, "Columns", 0, name)
    frames = _header_int(ds, "NumberOfFrames", 1, name) or 1
    samples = _header_int(ds, "SamplesPerPixel", 1, name) or 1
    bits = _header_int(ds, "BitsAllocated", 16, name) or 16
    need = rows * columns * frames * samples * math.ceil(bits / 8)
    if rows * columns > MAX_FILM_PIXELS or need > MAX_PIXEL_BYTES:
        raise _refuse(
            "too_large",
            name,
            f"its header declares {columns} x {rows} px x {frames} frame(s) x {samples} "
            f"sample(s) of {bits} bits ({need / 2**20:,.0f} MiB decoded); a film may have at "
            f"most {MAX_FILM_PIXELS / 1e6:.0f} M px and {MAX_PIXEL_BYTES / 2**20:.0f} MiB; it "
            "is not decoded",
        )
    if frames > 1:
        raise _refuse(
            "several_pages",
            name,
            f"holds {frames} frame(s); give one grey film per file (only one would be used)",
        )
    photometric = str(ds.get("PhotometricInterpretation", "") or "").upper()
    if samples > 1 or photometric.startswith(("RGB", "YBR", "PALETTE")):
        raise _refuse(
            "colour_film",
            name,
            f"a colour image ({photometric or f'{samples} samples a pixel'}; a secondary "
            "capture or screenshot, not a grey radiograph)",
        )
    syntax = getattr(getattr(ds, "file_meta", None), "TransferSyntaxUID", None)
    compressed = syntax is not None and syntax.is_compressed
    if not compressed and rows and columns:
        have = len(ds.PixelData)
        expected = rows * columns * samples * math.ceil(bits / 8) if bits >= 8 else 0
        if have < expected:
            raise _refuse(
                "truncated",
                name,
                f"its pixel data is cut short: {have:,} of the {expected:,} bytes its header "
                f"declares ({columns} x {rows} px, {bits} bits); the file was truncated",
            )


def _assume_transfer_syntax(ds: Any) -> None:
    """A data set read without file meta: its transfer syntax is how it was read."""
    from pydicom.dataset import FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, ImplicitVRLittleEndian

    meta = getattr(ds, "file_meta", None) or FileMetaDataset()
    if "TransferSyntaxUID" not in meta:
        implicit = ds.original_encoding[0]
        meta.TransferSyntaxUID = ImplicitVRLittleEndian if implicit else ExplicitVRLittleEndian
    ds.file_meta = meta


def _dicom_pixels(ds: Any, name: str) -> np.ndarray:
    try:
        return ds.pixel_array
    except (NotImplementedError, RuntimeError, ValueError, AttributeError) as exc:
        syntax = getattr(getattr(ds, "file_meta", None), "TransferSyntaxUID", None)
        how = syntax.name if syntax is not None else "an unknown transfer syntax"
        if syntax is not None and str(syntax) in _JPEG_LOSSLESS and not _can_decode(syntax):
            raise _refuse(
                "unreadable",
                name,
                f"its pixels are stored as {how}, and no JPEG Lossless decoder is installed "
                "here (install python-gdcm, as requirements.txt does); export the film "
                "uncompressed (or as PNG)",
            ) from exc
        if syntax is not None and syntax.is_compressed and _can_decode(syntax):
            raise _refuse(
                "unreadable",
                name,
                f"its pixels are stored as {how} and do not decode (corrupt or cut short: "
                f"{exc}); export the film again",
            ) from exc
        raise _refuse(
            "unreadable",
            name,
            f"its pixels are stored as {how}, which cannot be decoded here; "
            "export the film uncompressed (or as PNG)",
        ) from exc


def _can_decode(syntax: Any) -> bool:
    """Whether a decoder for this transfer syntax is installed (pydicom's plugins)."""
    from pydicom.pixels import get_decoder

    try:
        return bool(get_decoder(syntax).is_available)
    except (NotImplementedError, ValueError):
        return False


def _dicom_values(ds: Any, pixels: np.ndarray, name: str) -> np.ndarray:
    from pydicom.pixels import apply_modality_lut, apply_voi_lut

    if pixels.ndim != 2:
        raise _refuse(
            "several_pages", name, f"holds pixels of shape {pixels.shape}; give one grey film"
        )
    values = apply_voi_lut(apply_modality_lut(pixels, ds), ds).astype(np.float32)
    if str(getattr(ds, "PhotometricInterpretation", "")) == "MONOCHROME1":
        values = values.max() - values
    return values


def decode_film(data: bytes, name: str) -> np.ndarray:
    """Read an uploaded film (DICOM, PNG, JPEG or TIFF bytes) as (H, W) uint8 grey.

    Raises:
        FilmRefused: Not an image, another format, over the byte or pixel caps, or smaller
            than ``MIN_FILM_SIDE`` pixels a side; the message names the file and what is
            allowed (a ValueError).
    """
    if len(data) > MAX_FILM_BYTES:
        raise _refuse(
            "too_large", name, f"over {MAX_FILM_BYTES / 2**20:.0f} MiB; give a smaller film"
        )
    film = decode_bytes(data, name).film
    if min(film.shape) < MIN_FILM_SIDE:
        h, w = film.shape
        raise FilmRefused(
            "too_small",
            f"{name} is {w} x {h} px; a film needs at least {MIN_FILM_SIDE} px a side",
            f"{w} x {h} px; a film needs at least {MIN_FILM_SIDE} px a side",
        )
    return film


def decode_bytes(data: bytes, name: str) -> DecodedFilm:
    """A film's bytes (DICOM with or without preamble, PNG, JPEG or TIFF), decoded.

    Raises:
        FilmRefused: The kind of problem and why (see `dicom_film` and `pillow_film`).
    """
    if looks_like_dicom(data[:132]):
        return _dicom_decoded(data, name)
    return pillow_film(data, name)


def read_film_file(path: Path) -> np.ndarray:
    """A film file of an imported folder (DICOM, PNG, JPEG or TIFF) as (H, W) uint8 grey,
    read through `read_capped` (a regular file, at most `MAX_FILM_BYTES`)."""
    return decode_bytes(read_capped(path, path.name), path.name).film


def read_film_and_laterality(path: Path) -> tuple[np.ndarray, str]:
    """A film file as `read_film_file` reads it, with its DICOM laterality tag ('' if none)."""
    decoded = decode_bytes(read_capped(path, path.name), path.name)
    return decoded.film, decoded.tags.laterality


#: What opening an unreadable image may raise. ultralytics, once imported in the process (the
#: YOLO knee detector), wraps PIL's ``Image.open`` and, on an image PIL cannot identify,
#: imports the optional ``pi_heif`` to try HEIF; where that is not installed its
#: ModuleNotFoundError replaces PIL's UnidentifiedImageError (a traceback on the kiosk).
UNREADABLE_IMAGE_ERRORS: tuple[type[Exception], ...] = (
    UnidentifiedImageError,
    OSError,
    ImportError,
)


def pillow_film(data: bytes, name: str) -> DecodedFilm:
    """A PNG, JPEG or TIFF film, checked before its pixels are decoded.

    Refused by its header: over `MAX_FILM_PIXELS` pixels or `MAX_PIXEL_BYTES` bytes, a TIFF
    of several pages (which page is the film?). An EXIF orientation is applied (and said),
    as a viewer shows the film. A deep film with NaN or infinite pixels is refused.

    Raises:
        FilmRefused: With the kind of problem.
    """
    allowed = ", ".join(("DICOM", *FILM_FORMATS))
    try:
        image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:
        raise _refuse("too_large", name, f"too many pixels to decode ({exc})") from exc
    except UNREADABLE_IMAGE_ERRORS as exc:
        text = _looks_like_text(data)
        what = "a text file" if text else "no image SoftGrade can read"
        raise FilmRefused(
            "unreadable",
            f"{name} is not an image SoftGrade can read: give a {allowed} film",
            f"{what}, not a film (allowed: {allowed})",
        ) from exc
    with image:
        if image.format not in FILM_FORMATS:
            raise FilmRefused(
                "unreadable",
                f"{name} is a {image.format} image; give a {allowed} film",
                f"a {image.format} image; give a {allowed} film",
            )
        _check_pillow_header(image, name)
        notes: tuple[tuple[str, str], ...] = ()
        try:
            upright = _upright(image)
            if upright is not image:
                notes = (("exif_rotated", _EXIF_NOTE),)
            film = grey_film(upright)
            film, notes = _right_way_round(film, notes)
        except FilmRefused:
            raise
        except (OSError, ValueError, SyntaxError) as exc:
            raise _refuse(
                "unreadable", name, f"a {image.format} whose data is cut short or corrupt ({exc})"
            ) from exc
    return DecodedFilm(film, NO_TAGS, notes)


_EXIF_NOTE = "its EXIF orientation was applied (the film is used upright, as a viewer shows it)"


def _right_way_round(
    film: np.ndarray, notes: tuple[tuple[str, str], ...]
) -> tuple[np.ndarray, tuple[tuple[str, str], ...]]:
    """The film with bone bright: a PNG, JPEG or TIFF saved inverted (bone dark on a bright
    background; `engine.detect.inverted_polarity`) is inverted back, and that is said.
    DICOM says its polarity itself (MONOCHROME1)."""
    from engine.detect import inverted_polarity

    if min(film.shape) < MIN_FILM_SIDE or not inverted_polarity(film):
        return film, notes
    said = (
        "bone was dark on a bright background (inverted polarity, as a MONOCHROME1 film "
        "exported as is shows); it is used inverted back"
    )
    return 255 - film, (*notes, ("inverted", said))


def _check_pillow_header(image: Image.Image, name: str) -> None:
    w, h = image.size
    per_pixel = _BYTES_PER_PIXEL.get(image.mode, 4)
    if w * h > MAX_FILM_PIXELS or w * h * per_pixel > MAX_PIXEL_BYTES:
        raise _refuse(
            "too_large",
            name,
            f"{w} x {h} px ({image.mode}); a film may have at most "
            f"{MAX_FILM_PIXELS / 1e6:.0f} M px and {MAX_PIXEL_BYTES / 2**20:.0f} MiB; "
            "it is not decoded",
        )
    pages = int(getattr(image, "n_frames", 1) or 1)
    if pages > 1:
        raise _refuse(
            "several_pages",
            name,
            f"a {image.format} of {pages} pages; give one film per file (only the first "
            "page would be used)",
        )


def _upright(image: Image.Image) -> Image.Image:
    """The image turned as its EXIF orientation says (itself when it says nothing)."""
    orientation = image.getexif().get(0x0112, 1)
    if orientation in (None, 1):
        return image
    turned = ImageOps.exif_transpose(image)
    return turned if turned is not None else image


def _looks_like_text(data: bytes) -> bool:
    head = data[:512]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(ch.isprintable() or ch in "\r\n\t" for ch in text)


def _refuse(kind: str, name: str, reason: str) -> FilmRefused:
    return FilmRefused(kind, f"{name}: {reason}", reason)


_BYTES_PER_PIXEL = {"1": 1, "L": 1, "P": 1, "LA": 2, "PA": 2, "RGB": 3, "YCbCr": 3, "LAB": 3}
_JPEG_LOSSLESS = ("1.2.840.10008.1.2.4.57", "1.2.840.10008.1.2.4.70")
