"""Detector weights are read without running anything in the file (issue 23, critical)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from engine.detect import (
    KneeDetector,
    load_detector,
    phantom_detection_set,
    train_detector,
    ultralytics_offline,
)
from engine.detect.safe_load import UnsafeCheckpointError, load_yolo_detector
from engine.phantom import PhantomSpec


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (exec, (f"open({str(self.marker)!r}, 'w').write('ran')",))


@pytest.fixture(scope="module")
def detector(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny YOLOv8n detector trained here on phantom films (seconds on a CPU)."""
    out = tmp_path_factory.mktemp("detectors")
    films, boxes = phantom_detection_set(
        PhantomSpec(n_images=16, n_joint=8, seed=4, film_size=(160, 160))
    )
    record = train_detector(films, boxes, image_size=64, epochs=2, device="cpu", out_dir=out)
    return out / record.key


def test_a_trained_detector_finds_the_same_knees_as_ultralytics_own_loader(detector):
    ultralytics = ultralytics_offline(detector.parent / ".ultralytics")
    films, _ = phantom_detection_set(
        PhantomSpec(n_images=6, n_joint=3, seed=9, film_size=(160, 160))
    )
    trusted = KneeDetector(
        ultralytics.YOLO(str(detector / "detector.pt"), task="detect"), image_size=64
    )
    safe = load_detector(detector)
    for film in films:
        assert safe.detect(film) == trusted.detect(film)


def test_a_pickle_that_calls_a_function_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "ran"
    weights = tmp_path / "detector.pt"
    torch.save({"model": _Payload(marker)}, weights)
    with pytest.raises(UnsafeCheckpointError, match="not a knee detector SoftGrade can load"):
        load_yolo_detector(weights)
    assert not marker.exists()


def test_weights_of_another_shape_or_no_model_are_refused_by_name(detector, tmp_path):
    from ultralytics.nn.tasks import DetectionModel

    ultralytics_offline(detector.parent / ".ultralytics")
    bigger = tmp_path / "bigger.pt"
    model = DetectionModel("yolov8s.yaml", nc=1, verbose=False)
    model.names = {0: "knee"}
    torch.save({"model": model}, bigger)
    with pytest.raises(UnsafeCheckpointError, match="do not fit the yolov8n.yaml architecture"):
        load_yolo_detector(bigger)
    bare = tmp_path / "bare.pt"
    torch.save({"weights": torch.zeros(3)}, bare)
    with pytest.raises(UnsafeCheckpointError, match="holds no YOLOv8 detection model"):
        load_yolo_detector(bare)
    noise = tmp_path / "noise.pt"
    noise.write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(UnsafeCheckpointError, match="not a knee detector"):
        load_yolo_detector(noise)
