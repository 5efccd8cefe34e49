"""An import pins its knee detector in the dataset it registers, and the CLI's
``--detector`` names a trained detector or says which exist."""

from __future__ import annotations

from dataclasses import replace

import pytest
from PIL import Image

from engine.films import check_import
from jobs.services.importer import import_detector, register_import
from store.datasets import dataset_labels
from store.imports import latest_import, list_imports
from tests.helpers.films import fake_detector, write_bilateral_folder, write_film_folder
from tests.helpers.studies import run_import


def test_the_registered_dataset_names_the_detector_and_the_import_keeps_its_scores(tmp_path, store):
    home = tmp_path / "home"
    fake_detector(
        home / "detectors", "abc0000000000000", "2026-03-01T10:00:00+00:00", mean_iou=0.91
    )
    folder, _, _ = write_film_folder(tmp_path, n=3, n_joint=3, seed=1)
    detector = import_detector("latest", home=home)
    # Knees are not looked for (the fake detector has no weights); the report names it.
    report = replace(check_import(folder, detect=False), detector=detector)
    done = register_import(report, home=home, store_path=store)
    assert done.spec.params["detector"] == "abc0000000000000"
    assert done.spec.params["detectors_dir"] == str(home / "detectors")
    summary = latest_import(done.dataset_id, path=store)
    assert (summary.detector, summary.detector_iou) == ("abc0000000000000", 0.91)
    classical = register_import(check_import(folder, detect=False), home=home, store_path=store)
    assert "detector" not in classical.spec.params  # as imports were before detectors
    assert classical.dataset_id != done.dataset_id
    assert latest_import(classical.dataset_id, path=store).detector == "classical"


@pytest.mark.slow
def test_an_unknown_detector_key_is_one_message_listing_the_trained_ones(tmp_path):
    home = tmp_path / "home"
    fake_detector(home / "detectors", "abc0000000000000", "2026-03-01T10:00:00+00:00")
    folder = tmp_path / "films"
    folder.mkdir()
    Image.new("L", (80, 80)).save(folder / "a.png")
    done = run_import(home, str(folder), "--detector", "nope", "--check")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no trained detector 'nope'" in lines[0], done.stderr
    assert "abc0000000000000" in lines[0] and "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_bilateral_folder_imports_one_image_per_knee(tmp_path):
    folder, truth = write_bilateral_folder(tmp_path, n_patients=2)
    home = tmp_path / "home"
    done = run_import(home, str(folder), "--detector", "classical")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "knees located by the classical detector" in done.stdout
    store = home / "softgrade.duckdb"
    dataset_id = list_imports(path=store)["dataset_id"].iloc[0]
    labels = dataset_labels(dataset_id, path=store).set_index("image_id")
    assert set(labels.index) == set(truth)
    for image_id, knee in truth.items():
        assert labels.at[image_id, "side"] == knee["side"]
        assert labels.at[image_id, "kl"] == knee["kl"]
        assert labels.at[image_id, "cppd"] == knee["cppd"]
