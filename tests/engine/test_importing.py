"""Importing a folder of films with a labels CSV."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from engine.config import DatasetSpec
from engine.data import prepare_dataset
from engine.importing import decode_film
from engine.phantom import PhantomSpec, phantom_labels, render_film


def _write_folder(tmp_path, n=6):
    spec = PhantomSpec(n_images=n, n_joint=n // 2, seed=1)
    labels = phantom_labels(spec)
    folder = tmp_path / "films"
    folder.mkdir()
    rows = []
    for _, row in labels.iterrows():
        film, _, _ = render_film(spec, row)
        Image.fromarray(film).save(folder / f"{row.image_id}.png")
        rows.append(
            {
                "image": f"{row.image_id}.png",
                "patient_id": row.patient_id,
                "side": row.side,
                "kl": row.kl,
                "cppd": row.cppd,
            }
        )
    pd.DataFrame(rows).to_csv(folder / "labels.csv", index=False)
    return folder, labels


def test_imported_folder_becomes_a_cache_like_the_phantom(tmp_path):
    folder, labels = _write_folder(tmp_path)
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
    folder, _ = _write_folder(tmp_path)
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
        (b"DICM not really an image", "not an image SoftGrade can read: give a PNG, JPEG, TIFF"),
        (_encoded(Image.new("L", (40, 200)), "PNG"), "40 x 200 px; a film needs at least 64"),
        (_encoded(Image.new("L", (80, 80)), "GIF"), "is a GIF image; give a PNG, JPEG, TIFF"),
    ],
)
def test_an_unreadable_upload_gets_one_clear_message(data, message):
    with pytest.raises(ValueError, match=message):
        decode_film(data, "upload")
