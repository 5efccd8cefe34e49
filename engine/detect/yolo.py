"""A trained YOLOv8 knee detector at run time: ultralytics prepared offline, loaded, used.

The paper localises knees with YOLOv8. Here the network (``yolov8n.yaml``, random
initialisation: no hub weights exist on the lab's machines) is trained on films with known
knee boxes (`engine.detect.training`). Nothing is fetched at run time;
:func:`ultralytics_offline` prepares ultralytics before it is first imported:

- ``YOLO_OFFLINE=1`` (ultralytics skips every online check and download);
- ``YOLO_CONFIG_DIR`` inside the detectors folder, holding the two fonts ultralytics wants
  (``Arial.ttf``, ``Arial.Unicode.ttf``; copies of matplotlib's DejaVuSans) so it never
  downloads them, and its settings with telemetry ("sync") and every logging integration off;
- AMP's self-check (which downloads a reference model) is never run: CUDA training uses
  bf16 autocast, which skips it, and CPU training uses fp32.

Trained detectors and their records are kept as `engine.detect.registry` says.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from engine.detect.classical import KneeDetection, select_knees
from engine.detect.registry import RECORD_FILE, WEIGHTS_FILE, DetectorRecord
from engine.detect.safe_load import MODEL_YAML, load_yolo_detector
from engine.vocab import Box

CONFIG_DIR_NAME = ".ultralytics"  # YOLO_CONFIG_DIR, inside the detectors folder
#: Candidates below this confidence are dropped before choosing knees; kept low so that a
#: film whose best box is weak is reported with that low confidence rather than as empty.
PREDICT_CONFIDENCE = 0.01
_FONT_NAMES = ("Arial.ttf", "Arial.Unicode.ttf")
#: Settings that would send data out or log to third-party trackers.
_SETTINGS_OFF = (
    "sync",
    "clearml",
    "comet",
    "dvc",
    "hub",
    "mlflow",
    "neptune",
    "raytune",
    "tensorboard",
    "wandb",
    "vscode_msg",
    "openvino_msg",
)


# --------------------------------------------------------------------------------------
# Offline ultralytics
# --------------------------------------------------------------------------------------


def _any_ttf() -> Path:
    """A TrueType font file on this machine (matplotlib ships DejaVuSans)."""
    import matplotlib

    path = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
    if not path.is_file():
        raise FileNotFoundError(f"no TrueType font found at {path} to give ultralytics")
    return path


def _place_fonts(folder: Path) -> None:
    """Copy a local TTF into ``folder`` under the names ultralytics would download."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in _FONT_NAMES:
        target = folder / name
        if not target.is_file():
            shutil.copyfile(_any_ttf(), target)


#: How to get the optional YOLO detector, named in every message that needs it.
YOLO_EXTRA = (
    "the YOLOv8n knee detector needs the optional extra: pip install 'softgrade[yolo]' "
    "(ultralytics, AGPL-3.0); without it the classical detector locates knees"
)


class YoloUnavailableError(ValueError):
    """ultralytics is not installed: a trained detector can be neither trained nor used."""


def yolo_available() -> bool:
    """Whether ultralytics (the `yolo` extra) is installed, without importing it."""
    return importlib.util.find_spec("ultralytics") is not None


def ultralytics_offline(config_dir: Path) -> types.ModuleType:
    """Import ultralytics so that it never touches the network, and return the module.

    Sets ``YOLO_OFFLINE`` and ``YOLO_CONFIG_DIR`` (when ultralytics is not yet imported in
    this process; otherwise its existing config folder is prepared the same way), places
    the fonts, and turns off telemetry and logging integrations in its settings.

    Args:
        config_dir: folder for ultralytics' settings and fonts (created if missing).
    """
    if not yolo_available():
        raise YoloUnavailableError(YOLO_EXTRA)
    config_dir = Path(config_dir)
    os.environ["YOLO_OFFLINE"] = "1"
    os.environ.setdefault("YOLO_VERBOSE", "False")  # no per-batch bars in job logs
    if "ultralytics" not in sys.modules:
        os.environ["YOLO_CONFIG_DIR"] = str(config_dir)
        _place_fonts(config_dir / "Ultralytics")
        omp = os.environ.get("OMP_NUM_THREADS")
        # ultralytics sets OMP_NUM_THREADS=1 on import: torch, if it loads after that, would
        # run on one thread for the rest of the process, and so would processes started
        # later (training slots). torch loads first and the variable is put back.
        import torch  # noqa: F401
        import ultralytics

        if omp is None:
            os.environ.pop("OMP_NUM_THREADS", None)
    import ultralytics
    import ultralytics.utils as uutils

    # Already imported elsewhere: its config folder is fixed; make it offline too.
    _place_fonts(Path(uutils.USER_CONFIG_DIR))
    for name, module in list(sys.modules.items()):
        if name.startswith("ultralytics") and getattr(module, "ONLINE", None) is True:
            module.ONLINE = False  # type: ignore[attr-defined]  # set on ultralytics' modules that have it
    off = {k: False for k in _SETTINGS_OFF if k in ultralytics.settings}
    if any(ultralytics.settings.get(k) for k in off):
        ultralytics.settings.update(off)
    _unpatch_pillow()
    return ultralytics


def _unpatch_pillow() -> None:
    """Give Pillow back its own ``Image.open``.

    ultralytics replaces ``PIL.Image.open`` on import with one that, for a file Pillow
    cannot identify, installs and imports ``pi-heif`` (a download, then ModuleNotFoundError
    here) instead of raising ``UnidentifiedImageError``. In a process that has loaded a
    detector, an import check would then call a text file named ``.png`` "cannot be
    decoded (No module named 'pi_heif')" and a cache build would fail with a traceback.
    """
    from PIL import Image

    patches = sys.modules.get("ultralytics.utils.patches")
    original = getattr(patches, "_image_open", None)
    if original is not None and Image.open is getattr(patches, "image_open", None):
        Image.open = original


@contextlib.contextmanager
def keep_torch_threads(threads: int | None = None) -> Iterator[None]:
    """Put torch's thread count back after ultralytics changes it.

    ultralytics sets torch's threads to ``min(8, CPUs - 1)`` whenever it picks a device. For
    CPU training that is a good default: on a busy 2-core machine, two threads that wait on
    each other ran an epoch 7x slower than one (bench/RESULTS.md). But in a long-lived
    process (a worker slot that crops with a detector, then trains) it would silently change
    every later CPU computation, so the count is restored afterwards.

    Args:
        threads: threads for ultralytics to use instead of its own choice (None: its choice).
    """
    import torch
    import ultralytics.utils.torch_utils as torch_utils

    before, chosen = torch.get_num_threads(), torch_utils.NUM_THREADS
    if threads is not None:
        torch_utils.NUM_THREADS = int(threads)
    try:
        yield
    finally:
        torch_utils.NUM_THREADS = chosen
        torch.set_num_threads(before)


def _ultralytics_threads() -> int:
    """The thread count ultralytics picks for CPU work (CPUs - 1, 1 to 8)."""
    import ultralytics.utils.torch_utils as torch_utils

    return int(torch_utils.NUM_THREADS)


class KneeDetector:
    """A trained YOLO knee detector, ready to find knees on films.

    Use :func:`load_detector` to get one; pass it to :func:`engine.detect.find_knees`.
    """

    def __init__(
        self,
        model: Any,
        *,
        image_size: int,
        device: str = "cpu",
        record: DetectorRecord | None = None,
    ) -> None:
        """Wrap a loaded ultralytics model.

        Args:
            model: an ``ultralytics.YOLO`` detection model.
            image_size: inference size in px (the training size).
            device: where it runs.
            record: its :class:`DetectorRecord`, when it has one.
        """
        self._model = model
        self.image_size = int(image_size)
        self.device = device
        self.record = record

    def detect(self, film: np.ndarray, max_knees: int = 2) -> list[KneeDetection]:
        """Up to ``max_knees`` knees on a (H, W) uint8 film, sides unset.

        Boxes are in film pixels; the most confident box is always returned (its confidence
        says how sure it is), a second only as :func:`engine.detect.select_knees` allows.
        """
        if not isinstance(film, np.ndarray) or film.ndim != 2:
            raise ValueError(
                f"film must be a 2-D (H, W) grey array, got {getattr(film, 'shape', film)}"
            )
        h, w = film.shape
        bgr = cv2.cvtColor(np.ascontiguousarray(film, dtype=np.uint8), cv2.COLOR_GRAY2BGR)
        import torch

        # As in training, ultralytics' thread count (CPUs - 1) and the caller's back after.
        with keep_torch_threads():
            torch.set_num_threads(_ultralytics_threads())
            result = self._model.predict(
                bgr,
                imgsz=self.image_size,
                conf=PREDICT_CONFIDENCE,
                iou=0.5,
                max_det=10,
                device=self.device,
                verbose=False,
            )[0]
        xyxy = result.boxes.xyxy.cpu().numpy()
        conf = result.boxes.conf.cpu().numpy()
        candidates = [
            KneeDetection(_film_box(b, w, h), round(float(c), 4))
            for b, c in zip(xyxy, conf, strict=True)
        ]
        return select_knees([c for c in candidates if c.box[2] > c.box[0]], max_knees)


def _film_box(xyxy: np.ndarray, w: int, h: int) -> Box:
    """A float box rounded to whole film pixels and clipped to the film."""
    x0, y0, x1, y1 = (float(v) for v in xyxy)
    return (
        int(np.clip(round(x0), 0, w)),
        int(np.clip(round(y0), 0, h)),
        int(np.clip(round(x1), 0, w)),
        int(np.clip(round(y1), 0, h)),
    )


def load_detector(
    path: Path, *, device: str = "cpu", config_dir: Path | None = None
) -> KneeDetector:
    """Load a trained detector from its folder (or its ``detector.pt``).

    Args:
        path: ``<detectors>/<key>`` or the weights file in it.
        device: where it runs ('cpu', 'cuda', 'cuda:1').
        config_dir: ultralytics' config folder; by default ``<detectors>/.ultralytics``.

    Raises:
        FileNotFoundError: No weights or record in the folder.
        engine.detect.safe_load.UnsafeCheckpointError: The weights cannot be loaded without
            running something in the file, or are not YOLOv8n detection weights.
    """
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    weights, record_file = folder / WEIGHTS_FILE, folder / RECORD_FILE
    missing = [str(p) for p in (weights, record_file) if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"not a trained detector folder; missing: {', '.join(missing)}")
    ultralytics_offline(config_dir or folder.parent / CONFIG_DIR_NAME)
    record = DetectorRecord.from_json(record_file.read_text())
    model = load_yolo_detector(weights, model_yaml=MODEL_YAML)  # never unpickles code
    return KneeDetector(model, image_size=record.image_size, device=device, record=record)
