"""Which knee detector an import uses: the newest trained one, a named one, or the classical
one; a trained detector really locates the knees of the import check and the cache build."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from engine.datasets import build_folder_cache, open_prepared
from engine.detect import (
    CLASSICAL_DETECTOR,
    DetectorRecord,
    choose_detector,
    choose_record,
    detector_from_params,
    latest_detector,
    list_detectors,
    phantom_detection_set,
    train_detector,
)
from engine.films import check_import, inspect_files, locate_knees, read_film_file
from engine.phantom import PhantomSpec
from tests.helpers.films import fake_detector, write_film_folder

TINY = {"image_size": 64, "epochs": 2, "device": "cpu"}


@pytest.fixture
def detectors(tmp_path: Path) -> Path:
    out = tmp_path / "detectors"
    fake_detector(out, "old0000000000000", "2026-01-01T10:00:00+00:00", mean_iou=0.8, map50=0.7)
    fake_detector(out, "new0000000000000", "2026-03-01T10:00:00+00:00", mean_iou=0.9, map50=0.8)
    # Not detectors: a training still being written, ultralytics' settings, no weights.
    (out / ".new1111111111111.partial").mkdir()
    (out / ".ultralytics").mkdir()
    (out / "noweights00000000").mkdir()
    (out / "noweights00000000" / "record.json").write_text("{}")
    return out


def test_detectors_are_listed_newest_first_and_unfinished_ones_skipped(detectors):
    assert [r.key for r in list_detectors(detectors)] == ["new0000000000000", "old0000000000000"]
    assert latest_detector(detectors).key == "new0000000000000"
    assert latest_detector(detectors.parent / "none") is None


def test_latest_a_key_or_classical_choose_the_detector(detectors):
    assert choose_record(detectors, "latest").key == "new0000000000000"
    assert choose_record(detectors, "old0000000000000").key == "old0000000000000"
    assert choose_record(detectors, "classical") is None
    assert choose_record(detectors.parent / "none", "latest") is None  # none trained
    info = choose_detector(detectors, "old0000000000000")
    assert (info.key, info.name, info.held_out_iou, info.held_out_map) == (
        "old0000000000000",
        "YOLOv8n",
        0.8,
        0.7,
    )
    assert info.folder == str(detectors / "old0000000000000") and info.trained
    assert choose_detector(detectors, "classical") == CLASSICAL_DETECTOR


def test_an_unknown_key_is_refused_with_the_known_ones_listed(detectors, tmp_path):
    with pytest.raises(ValueError, match="no trained detector 'nope'") as refused:
        choose_record(detectors, "nope")
    assert "new0000000000000" in str(refused.value) and "old0000000000000" in str(refused.value)
    with pytest.raises(ValueError, match="none is trained"):
        choose_record(tmp_path / "empty", "nope")


def test_a_datasets_params_name_its_detector(detectors):
    assert detector_from_params({"path": "x"}) == CLASSICAL_DETECTOR
    named = {"detector": "old0000000000000", "detectors_dir": str(detectors)}
    assert detector_from_params(named).key == "old0000000000000"
    with pytest.raises(ValueError, match="needs dataset.detectors_dir"):
        detector_from_params({"detector": "old0000000000000"})
    with pytest.raises(ValueError, match="dataset.detector: no trained detector 'gone'"):
        detector_from_params({"detector": "gone", "detectors_dir": str(detectors)})


def test_a_classical_import_never_imports_ultralytics(tmp_path):
    folder, _, _ = write_film_folder(tmp_path, n=2, n_joint=2, seed=1)
    already = "ultralytics" in sys.modules
    report = check_import(folder)
    assert report.detector == CLASSICAL_DETECTOR
    assert any("classical detector" in note for note in report.notes)
    assert already or "ultralytics" not in sys.modules


# -- a real, tiny trained detector -------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, DetectorRecord]:
    """A YOLO detector trained in seconds (16 phantom films, 64 px, 2 epochs)."""
    films, boxes = phantom_detection_set(
        PhantomSpec(n_images=16, n_joint=8, seed=4, film_size=(160, 160))
    )
    out = tmp_path_factory.mktemp("home") / "detectors"
    record = train_detector(films, boxes, out_dir=out, trained_on="tiny phantom", **TINY)
    return out, record


@pytest.mark.slow
def test_the_import_check_locates_knees_with_the_trained_detector_in_every_worker(
    trained, tmp_path
):
    detectors, record = trained
    folder, _, labels = write_film_folder(tmp_path, n=4, n_joint=4, seed=1)
    detector = choose_detector(detectors, "latest")
    assert detector.key == record.key
    files = [f"{i}.png" for i in labels["image_id"]]
    in_workers = inspect_files(folder, files, workers=2, detector=detector)
    for file in files:
        film = read_film_file(folder / file)
        expected = max(c for _, c in locate_knees(film, detector=detector))
        assert in_workers[file].knee_confidence == pytest.approx(expected, abs=1e-4)
    classical = inspect_files(folder, files, workers=1)
    assert [in_workers[f].knee_confidence for f in files] != [
        classical[f].knee_confidence for f in files
    ]
    report = check_import(folder, detector=detector, workers=1)
    assert report.detector.key == record.key
    assert report.detector.held_out_iou == pytest.approx(record.held_out["mean_iou"])
    assert any(record.key in note for note in report.notes)


@pytest.mark.slow
def test_the_cache_is_cropped_by_the_datasets_detector_and_rebuilt_for_another(trained, tmp_path):
    detectors, record = trained
    folder, csv, _ = write_film_folder(tmp_path, n=3, n_joint=3, seed=1)
    out = tmp_path / "cache"
    params = {"path": str(folder), "labels_csv": str(csv)}
    build_folder_cache(params, 32, out)
    classical = open_prepared(out).meta
    assert json.loads((out / "manifest.json").read_text())["detector"] == "classical"
    trained_params = {**params, "detector": record.key, "detectors_dir": str(detectors)}
    build_folder_cache(trained_params, 32, out)
    assert json.loads((out / "manifest.json").read_text())["detector"] == record.key
    meta = open_prepared(out).meta
    film = read_film_file(Path(meta["source"].iat[0]))
    info = choose_detector(detectors, record.key)
    assert meta["knee_confidence"].iat[0] == pytest.approx(
        max(c for _, c in locate_knees(film, detector=info)), abs=1e-4
    )
    assert list(meta["knee_confidence"]) != list(classical["knee_confidence"])


@pytest.mark.slow
def test_a_process_that_loaded_a_detector_still_names_a_text_file_as_one(trained, tmp_path):
    # ultralytics patches PIL.Image.open on import (a HEIF plugin it would download).
    detectors, record = trained
    from engine.detect import knee_detector

    knee_detector(choose_detector(detectors, record.key))
    folder = tmp_path / "films"
    folder.mkdir()
    (folder / "notes.png").write_text("not a film\n")
    check = inspect_files(folder, ["notes.png"], workers=1)["notes.png"]
    assert check.error.startswith("a text file, not a film"), check.error
