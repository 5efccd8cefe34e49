"""The YOLO knee detector: offline training, the stored detector and its record, detection."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.detect import (
    DetectorRecord,
    KneeDetection,
    KneeDetector,
    find_knees,
    load_detector,
    phantom_detection_set,
    phantom_films,
    train_detector,
)
from engine.detect.registry import RECORD_FILE, WEIGHTS_FILE, detector_key
from engine.detect.training import held_out_split, write_yolo_dataset
from engine.phantom import PhantomSpec

TINY = {"image_size": 64, "epochs": 2, "device": "cpu"}


@pytest.fixture(scope="module")
def phantom() -> tuple[list[np.ndarray], list[list[tuple[int, int, int, int]]]]:
    """Sixteen 160 px phantom films with their true boxes."""
    return phantom_detection_set(PhantomSpec(n_images=16, n_joint=8, seed=4, film_size=(160, 160)))


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, phantom):
    """A tiny detector trained with every network call refused and recorded."""
    out = tmp_path_factory.mktemp("detectors")
    attempts: list[str] = []

    def refuse(what: str):
        def blocked(*args, **kwargs):
            attempts.append(f"{what}{args[:2]}")
            raise OSError(f"network refused in tests: {what}")

        return blocked

    epochs_seen: list[tuple[int, int]] = []
    threads = (torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
        mp.setattr(socket, "create_connection", refuse("create_connection"))
        mp.setattr(socket.socket, "connect", refuse("connect"))
        films, boxes = phantom
        record = train_detector(
            films,
            boxes,
            out_dir=out,
            progress=lambda epoch, epochs, losses: epochs_seen.append((epoch, epochs)),
            trained_on="tiny phantom",
            **TINY,
        )
        detector = load_detector(out / record.key)
        detector.detect(films[0])
    return {
        "threads": threads,
        "out": out,
        "record": record,
        "detector": detector,
        "attempts": attempts,
        "epochs": epochs_seen,
    }


@pytest.mark.slow
def test_training_fetches_nothing(trained):
    assert trained["attempts"] == []


@pytest.mark.slow
def test_ultralytics_leaves_the_process_thread_settings_alone(trained):
    assert (torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS")) == trained["threads"]


@pytest.mark.slow
def test_training_reports_progress_every_epoch(trained):
    assert trained["epochs"] == [(1, 2), (2, 2)]


@pytest.mark.slow
def test_ultralytics_runs_offline_with_local_fonts(trained):
    import ultralytics
    from ultralytics.utils import USER_CONFIG_DIR

    # The first import in this process fixed the config folder; whichever it is, it holds
    # the fonts ultralytics would otherwise download, and telemetry is off.
    for name in ("Arial.ttf", "Arial.Unicode.ttf"):
        assert (Path(USER_CONFIG_DIR) / name).is_file()
    assert ultralytics.settings["sync"] is False
    assert ultralytics.utils.ONLINE is False


@pytest.mark.slow
def test_the_detector_is_a_file_under_its_key_with_a_record(trained, phantom):
    record: DetectorRecord = trained["record"]
    folder = trained["out"] / record.key
    assert (folder / WEIGHTS_FILE).is_file()
    stored = json.loads((folder / RECORD_FILE).read_text())
    assert stored["key"] == record.key and stored["path"] == str(folder / WEIGHTS_FILE)
    assert stored["trained_on"] == "tiny phantom"
    assert (stored["image_size"], stored["epochs"], stored["model"]) == (64, 2, "yolov8n.yaml")
    assert (stored["n_films"], stored["n_train"] + stored["n_held_out"]) == (16, 16)
    assert stored["n_held_out"] == 3 and stored["n_knees"] == 16
    held = stored["held_out"]
    for name in ("mean_iou", "share_iou_50", "share_iou_75", "misses", "map50", "map50_95"):
        assert name in held
    assert held["n_films"] == 3 and 0.0 <= held["mean_iou"] <= 1.0
    assert stored["created_at"].endswith("+00:00")
    assert not list(trained["out"].glob(".*.partial"))


@pytest.mark.slow
def test_the_same_input_gives_the_same_key_and_reuses_the_detector(trained, phantom):
    films, boxes = phantom
    again = train_detector(films, boxes, out_dir=trained["out"], **TINY)
    assert again == trained["record"]  # same created_at: nothing was retrained


def test_the_key_changes_with_pixels_boxes_and_settings(phantom):
    films, boxes = phantom
    settings = {"image_size": 64, "epochs": 2}
    key = detector_key(films, boxes, settings)
    assert detector_key(list(films), [list(b) for b in boxes], dict(settings)) == key
    moved = [list(b) for b in boxes]
    x0, y0, x1, y1 = moved[0][0]
    moved[0][0] = (x0 + 1, y0, x1 + 1, y1)
    brighter = [films[0] + 1, *films[1:]]
    assert detector_key(films, moved, settings) != key
    assert detector_key(brighter, boxes, settings) != key
    assert detector_key(films, boxes, {**settings, "epochs": 3}) != key


@pytest.mark.slow
def test_detect_returns_at_most_two_knees_in_film_pixels(trained, phantom):
    detector: KneeDetector = trained["detector"]
    films, _ = phantom
    for film in films[:4]:
        knees = detector.detect(film)
        assert 1 <= len(knees) <= 2
        for k in knees:
            x0, y0, x1, y1 = k.box
            assert 0 <= x0 < x1 <= film.shape[1] and 0 <= y0 < y1 <= film.shape[0]
            assert 0.0 <= k.confidence <= 1.0 and k.side is None
    wide = np.hstack([films[0], films[1]])
    assert len(find_knees(wide, detector=detector, max_knees=1)) == 1
    assert all(isinstance(k, KneeDetection) for k in find_knees(wide, detector=detector))


@pytest.mark.slow
def test_load_detector_takes_the_weights_file_and_refuses_a_folder_without_one(trained, tmp_path):
    record = trained["record"]
    loaded = load_detector(Path(record.path))
    assert loaded.record == record and loaded.image_size == 64
    with pytest.raises(FileNotFoundError, match="detector.pt"):
        load_detector(tmp_path)


def test_write_yolo_dataset_writes_normalised_boxes_and_the_held_out_split(tmp_path):
    films = [np.zeros((100, 200), np.uint8), np.zeros((50, 50), np.uint8)]
    boxes = [[(0, 0, 50, 100), (100, 50, 200, 100)], [(10, 10, 20, 30)]]
    data = write_yolo_dataset(films, boxes, tmp_path, held_out=[1])
    assert "train: images/train" in data.read_text() and "0: knee" in data.read_text()
    assert (tmp_path / "images/train/00000.png").is_file()
    assert (tmp_path / "images/val/00001.png").is_file()
    lines = (tmp_path / "labels/train/00000.txt").read_text().split("\n")
    assert lines[:2] == [
        "0 0.125000 0.500000 0.250000 1.000000",
        "0 0.750000 0.750000 0.500000 0.500000",
    ]
    assert (tmp_path / "labels/val/00001.txt").read_text() == (
        "0 0.300000 0.400000 0.200000 0.400000\n"
    )


@pytest.mark.slow
def test_bad_training_input_is_refused_with_every_problem_named(tmp_path):
    films = [
        np.zeros((50, 50), np.uint8),
        np.zeros((50, 50, 3), np.uint8),
        np.zeros((50, 50), np.uint8),
    ]
    boxes = [[(0, 0, 60, 10)], [(0, 0, 10, 10)], [(0, 0, 5, 5)] * 3]
    with pytest.raises(ValueError) as err:
        train_detector(films, boxes, out_dir=tmp_path, **TINY)
    message = str(err.value)
    assert "film 0: box (0, 0, 60, 10) is not inside the 50x50 film" in message
    assert "film 1: must be a 2-D uint8 array" in message
    assert "film 2: has 3 boxes; 1 or 2 knees allowed" in message
    good = [np.zeros((50, 50), np.uint8)] * 2
    with pytest.raises(ValueError, match="multiple of 32"):
        train_detector(good, [[(0, 0, 5, 5)]] * 2, out_dir=tmp_path, **{**TINY, "image_size": 50})


def test_held_out_split_is_seeded_and_disjoint():
    train, held = held_out_split(10, 0.2, seed=3)
    assert len(held) == 2 and set(train) | set(held) == set(range(10))
    assert not set(train) & set(held)
    assert np.array_equal(held_out_split(10, 0.2, seed=3)[1], held)
    with pytest.raises(ValueError, match="at least 2 films"):
        held_out_split(1, 0.2, seed=0)


def test_phantom_films_draws_exactly_n_films_bilateral_ones_right_knee_first():
    films, boxes = phantom_films(5, seed=9, film_size=(160, 160), bilateral=True)
    assert len(films) == len(boxes) == 5
    for film, (right, left) in zip(films, boxes, strict=True):
        assert film.shape == (160, 320) and film.dtype == np.uint8
        assert right[2] <= 160 <= left[0]  # each knee in its own half, right on the left
    single, single_boxes = phantom_films(3, seed=9, film_size=(160, 160))
    assert [f.shape for f in single] == [(160, 160)] * 3
    assert [len(b) for b in single_boxes] == [1, 1, 1]
    with pytest.raises(ValueError, match="at least 1"):
        phantom_films(0, seed=9)


@pytest.mark.slow
def test_a_fresh_process_keeps_torchs_threads_when_ultralytics_loads(tmp_path):
    # ultralytics sets OMP_NUM_THREADS=1 on import; torch loaded after it would run on one
    # thread (CPU training at half speed on 2 cores) and pass that on to child processes.
    code = (
        "import os, sys; from pathlib import Path; sys.path.insert(0, os.getcwd()); "
        "from engine.detect.yolo import ultralytics_offline; "
        f"ultralytics_offline(Path({str(tmp_path)!r})); import torch; "
        "print(torch.get_num_threads(), os.environ.get('OMP_NUM_THREADS'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    root = Path(__file__).resolve().parents[2]

    def fresh(snippet: str) -> list[str]:
        run = subprocess.run(
            [sys.executable, "-c", snippet], capture_output=True, text=True, env=env, cwd=root
        )
        assert run.returncode == 0, run.stderr
        return run.stdout.split()

    # The yardstick is a fresh process that never loads ultralytics, not this pytest worker,
    # whose thread count other tests may have set.
    plain = fresh("import torch; print(torch.get_num_threads())")
    assert fresh(code) == [*plain, "None"]


def test_the_bilateral_detection_set_is_the_phantoms_own_two_knee_films():
    spec = PhantomSpec(n_images=24, n_joint=12, seed=7, film_size=(160, 160))
    films, boxes = phantom_detection_set(spec, bilateral=True)
    assert films, "a phantom of 24 knees has patients with both knees"
    for film, (right, left) in zip(films, boxes, strict=True):
        assert film.shape == (160, 320)
        assert right[2] <= 160 <= left[0], "right knee on the viewer's left half, left on the right"
