"""Without the `yolo` extra (ultralytics absent) the classical detector serves and every
request for a trained detector says how to get one, in one line."""

from __future__ import annotations

import builtins
import sys

import pytest

from engine.detect import CLASSICAL_DETECTOR, YOLO_EXTRA, choice, yolo


@pytest.fixture
def no_ultralytics(monkeypatch):
    """As if ultralytics were not installed: not found, and its import fails."""
    real_import = builtins.__import__

    def refuse(name, *args, **kwargs):
        if name == "ultralytics" or name.startswith("ultralytics."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    for name in [n for n in sys.modules if n == "ultralytics" or n.startswith("ultralytics.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(builtins, "__import__", refuse)
    monkeypatch.setattr(yolo.importlib.util, "find_spec", lambda name, *a: None)


def test_latest_falls_back_to_the_classical_detector(no_ultralytics, tmp_path):
    assert not yolo.yolo_available()
    assert choice.choose_detector(tmp_path, "latest") == CLASSICAL_DETECTOR


def test_training_a_detector_names_the_extra(no_ultralytics, tmp_path):
    with pytest.raises(yolo.YoloUnavailableError, match=r"softgrade\[yolo\]"):
        yolo.ultralytics_offline(tmp_path / "cfg")
    assert "AGPL-3.0" in YOLO_EXTRA
