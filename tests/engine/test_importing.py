"""Importing a folder of films with a labels CSV."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from engine.config import DatasetSpec
from engine.datasets import prepare_dataset
from engine.films import decode_film
from tests.helpers.films import dicom_bytes, write_film_folder


def test_imported_folder_becomes_a_cache_like_the_phantom(tmp_path):
    folder, _, labels = write_film_folder(tmp_path, n=6, n_joint=3, seed=1)
    data = prepare_dataset(DatasetSpec("folder", {"path": str(folder)}), 32, tmp_path / "cache")
    assert data.images.shape == (6, 32, 32) and data.images.dtype == np.uint8
    assert data.meta["kl"].isna().sum() == labels["kl"].isna().sum()
    assert list(data.meta["cppd"]) == list(labels["cppd"])


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.assign(kl=t["kl"].fillna(7)), "allowed: whole numbers 0 to 4"),
        (lambda t: t.drop(columns=["patient_id"]), "column 'patient_id' is missing"),
        (lambda t: t.assign(image="nope.png"), "listed films are missing"),
    ],
)
def test_bad_labels_are_refused_with_the_problem_named(tmp_path, edit, message):
    folder, _, _ = write_film_folder(tmp_path, n=6, n_joint=3, seed=1)
    csv = folder / "labels.csv"
    edit(pd.read_csv(csv)).to_csv(csv, index=False)
    with pytest.raises(ValueError, match=message):
        prepare_dataset(DatasetSpec("folder", {"path": str(folder)}), 32, tmp_path / "cache")


def _encoded(image: Image.Image, fmt: str) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "TIFF"])
def test_an_uploaded_film_is_read_as_grey_uint8(fmt):
    rgb = np.zeros((80, 100, 3), np.uint8)
    rgb[:, 50:] = 200
    film = decode_film(_encoded(Image.fromarray(rgb), fmt), "knee")
    assert film.shape == (80, 100) and film.dtype == np.uint8
    assert film[:, :40].max() < 10 and film[:, 60:].min() > 190


def test_a_16_bit_film_is_windowed_not_clipped_to_white():
    ramp = np.tile(np.linspace(1000, 60000, 128).astype(np.uint16), (96, 1))
    film = decode_film(_encoded(Image.fromarray(ramp), "PNG"), "deep.png")
    assert film[:, 0].max() <= 2 and film[:, -1].min() >= 253  # the full grey range
    assert np.all(np.diff(film[0].astype(int)) >= 0)  # and still a ramp


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"not really an image", "not an image SoftGrade can read: give a DICOM, PNG, JPEG"),
        (_encoded(Image.new("L", (40, 200)), "PNG"), "40 x 200 px; a film needs at least 64"),
        (
            _encoded(Image.new("L", (80, 80)), "GIF"),
            "is a GIF image; give a DICOM, PNG, JPEG, TIFF",
        ),
    ],
)
def test_an_unreadable_upload_gets_one_clear_message(data, message):
    with pytest.raises(ValueError, match=message):
        decode_film(data, "upload")


def _ramp(h: int = 96, w: int = 128) -> np.ndarray:
    return np.tile(np.linspace(0, 4095, w), (h, 1)).astype(np.uint16)


def test_a_dicom_film_is_read_through_its_own_window():
    # Window 1024-3072 of a 0-4095 ramp: the left quarter black, the right quarter white.
    data = dicom_bytes(_ramp(), WindowCenter=2048, WindowWidth=2048)
    film = decode_film(data, "knee.dcm")
    assert film.shape == (96, 128) and film.dtype == np.uint8
    assert film[:, :25].max() <= 2 and film[:, -25:].min() >= 253
    assert np.all(np.diff(film[0].astype(int)) >= 0)


def test_a_monochrome1_dicom_is_inverted_so_bone_is_bright():
    plain = decode_film(dicom_bytes(_ramp()), "m2.dcm")
    inverted = decode_film(dicom_bytes(_ramp(), photometric="MONOCHROME1"), "m1.dcm")
    assert plain[0, 0] < 10 < 245 < plain[0, -1]
    assert inverted[0, 0] > 245 and inverted[0, -1] < 10


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            dicom_bytes(_ramp(), syntax="1.2.840.10008.1.2.4.50"),  # claims JPEG, holds raw bytes
            "knee.dcm: its pixels are stored as JPEG Baseline",
        ),
        (dicom_bytes(np.stack([_ramp(), _ramp()]), NumberOfFrames=2), "holds 2 frame"),
    ],
)
def test_a_dicom_that_cannot_be_a_film_gets_one_message(data, message):
    with pytest.raises(ValueError, match=message):
        decode_film(data, "knee.dcm")


def test_a_folder_of_dicom_films_imports(tmp_path):
    folder, csv, _ = write_film_folder(tmp_path, n=8, n_joint=8, seed=2, fmt="dcm")
    spec = DatasetSpec("folder", {"path": str(folder), "labels_csv": str(csv)})
    prepared = prepare_dataset(spec, 32, tmp_path / "cache")
    assert prepared.images.shape == (8, 32, 32)
    assert prepared.images.std() > 10  # real crops, not a blank
