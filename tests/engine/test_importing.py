"""Importing a folder of films with a labels CSV."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from engine.config import DatasetSpec
from engine.data import prepare_dataset
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
