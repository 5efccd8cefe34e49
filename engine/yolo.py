"""A YOLOv8 knee detector trained from scratch with ultralytics, fully offline.

The paper localises knees with YOLOv8. Here the network (``yolov8n.yaml``, random
initialisation: no hub weights exist on the lab's machines) is trained on films with known
knee boxes: the phantom's true boxes, or boxes given for real films. Nothing is fetched at
run time; :func:`ultralytics_offline` prepares ultralytics before it is first imported:

- ``YOLO_OFFLINE=1`` (ultralytics skips every online check and download);
- ``YOLO_CONFIG_DIR`` inside the detectors folder, holding the two fonts ultralytics wants
  (``Arial.ttf``, ``Arial.Unicode.ttf``; copies of matplotlib's DejaVuSans) so it never
  downloads them, and its settings with telemetry ("sync") and every logging integration off;
- AMP's self-check (which downloads a reference model) is never run: CUDA training uses
  bf16 autocast, which skips it, and CPU training uses fp32.

A trained detector lives in ``<detectors>/<key>/`` (``SOFTGRADE_HOME/detectors`` in the
app): ``detector.pt`` and ``record.json`` (:class:`DetectorRecord`: what it was trained on,
image size, epochs, held-out IoU and mAP, when). The key hashes what decides the weights:
every film's pixels, every box and the training settings; training again on the same input
returns the stored detector.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from engine.detect import (
    Box,
    KneeDetection,
    evaluate_detector,
    find_knees,
    select_knees,
)
from engine.phantom import PhantomSpec, phantom_labels, render_bilateral_film, render_film
from engine.safe_load import load_yolo_detector

logger = logging.getLogger(__name__)

MODEL_YAML = "yolov8n.yaml"  # the paper's family, smallest size; built, never downloaded
WEIGHTS_FILE = "detector.pt"
RECORD_FILE = "record.json"
CONFIG_DIR_NAME = ".ultralytics"  # YOLO_CONFIG_DIR, inside the detectors folder
HELD_OUT_FRACTION = 0.2
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

#: progress(epoch, epochs, losses): called after every training epoch (epoch from 1).
Progress = Callable[[int, int, dict[str, float]], None]


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


def ultralytics_offline(config_dir: Path) -> types.ModuleType:
    """Import ultralytics so that it never touches the network, and return the module.

    Sets ``YOLO_OFFLINE`` and ``YOLO_CONFIG_DIR`` (when ultralytics is not yet imported in
    this process; otherwise its existing config folder is prepared the same way), places
    the fonts, and turns off telemetry and logging integrations in its settings.

    Args:
        config_dir: folder for ultralytics' settings and fonts (created if missing).
    """
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
            module.ONLINE = False
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


# --------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------


def held_out_split(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, held_out) of ``n`` films; the held-out share is at least one film."""
    if n < 2:
        raise ValueError(f"need at least 2 films to train and hold out, got {n}")
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"held-out {fraction=} must be between 0 and 1")
    order = np.random.default_rng([seed, 7]).permutation(n)
    n_held = min(n - 1, max(1, int(round(fraction * n))))
    return np.sort(order[n_held:]), np.sort(order[:n_held])


def _check_films_and_boxes(
    films: Sequence[np.ndarray], boxes: Sequence[Sequence[Sequence[int]]]
) -> None:
    """One message listing every film whose pixels or boxes cannot be trained on."""
    if len(films) != len(boxes):
        raise ValueError(f"{len(films)} films but {len(boxes)} lists of boxes")
    problems = []
    for i, (film, film_boxes) in enumerate(zip(films, boxes, strict=True)):
        if not isinstance(film, np.ndarray) or film.ndim != 2 or film.dtype != np.uint8:
            problems.append(f"film {i}: must be a 2-D uint8 array")
            continue
        h, w = film.shape
        if not 1 <= len(film_boxes) <= 2:
            problems.append(f"film {i}: has {len(film_boxes)} boxes; 1 or 2 knees allowed")
        for b in film_boxes:
            x0, y0, x1, y1 = b
            if not (0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h):
                problems.append(f"film {i}: box {tuple(b)} is not inside the {w}x{h} film")
    if problems:
        raise ValueError("cannot train a detector on these films:\n" + "\n".join(problems))


def write_yolo_dataset(
    films: Sequence[np.ndarray],
    boxes: Sequence[Sequence[Sequence[int]]],
    out_dir: Path,
    *,
    held_out: Sequence[int],
) -> Path:
    """Write films and knee boxes as a one-class ultralytics dataset.

    Layout: ``images/{train,val}/NNNNN.png`` and ``labels/{train,val}/NNNNN.txt`` (one line
    ``0 cx cy w h`` per knee, normalised to the film) and ``data.yaml``; the held-out films
    are the ``val`` split.

    Args:
        films: (H, W) uint8 films.
        boxes: per film, its knee boxes ``(x0, y0, x1, y1)`` in film pixels (1 or 2).
        out_dir: folder to write (created).
        held_out: indices of the films that go to ``val``.

    Returns:
        Path of ``data.yaml``.
    """
    _check_films_and_boxes(films, boxes)
    held = set(int(i) for i in held_out)
    out_dir = Path(out_dir)
    for split in ("train", "val"):
        (out_dir / "images" / split).mkdir(parents=True, exist_ok=True)
        (out_dir / "labels" / split).mkdir(parents=True, exist_ok=True)
    for i, (film, film_boxes) in enumerate(zip(films, boxes, strict=True)):
        split = "val" if i in held else "train"
        cv2.imwrite(str(out_dir / "images" / split / f"{i:05d}.png"), film)
        h, w = film.shape
        lines = [
            f"0 {(x0 + x1) / 2 / w:.6f} {(y0 + y1) / 2 / h:.6f} {(x1 - x0) / w:.6f} "
            f"{(y1 - y0) / h:.6f}"
            for x0, y0, x1, y1 in film_boxes
        ]
        (out_dir / "labels" / split / f"{i:05d}.txt").write_text("\n".join(lines) + "\n")
    data_yaml = out_dir / "data.yaml"
    data_yaml.write_text(
        f"path: {out_dir.resolve()}\ntrain: images/train\nval: images/val\nnames:\n  0: knee\n"
    )
    return data_yaml


def detector_key(
    films: Sequence[np.ndarray], boxes: Sequence[Sequence[Sequence[int]]], settings: dict
) -> str:
    """Short hash of what decides a detector: every film's pixels, every box, the settings."""
    h = hashlib.sha256()
    for film, film_boxes in zip(films, boxes, strict=True):
        h.update(f"{film.shape}".encode())
        h.update(hashlib.sha1(np.ascontiguousarray(film).tobytes()).digest())
        h.update(json.dumps([[int(v) for v in b] for b in film_boxes]).encode())
    h.update(json.dumps(settings, sort_keys=True).encode())
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------------------
# The detector
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DetectorRecord:
    """What a trained detector is and how well it placed boxes on films it never saw.

    Attributes:
        key: hash of the training input (films' pixels, boxes, settings); its folder name.
        path: the weights file.
        trained_on: what the films were, in words (e.g. "phantom seed=101, 200 films").
        model: the ultralytics architecture file (trained from scratch).
        image_size: training and inference image size (px, the film's longer side).
        epochs: training epochs.
        n_films / n_train / n_held_out: films given, trained on, held out.
        n_knees: knee boxes over all films.
        held_out: :class:`engine.detect.DetectionMetrics` on the held-out films (through
            :func:`engine.detect.find_knees`) plus ultralytics' ``map50`` and ``map50_95``.
        train_seconds: wall time of the training itself.
        device: where it was trained.
        ultralytics_version: the library version.
        created_at: ISO 8601 UTC time the record was written.
        settings: the training settings that went into ``key``.
    """

    key: str
    path: str
    trained_on: str
    model: str
    image_size: int
    epochs: int
    n_films: int
    n_train: int
    n_held_out: int
    n_knees: int
    held_out: dict[str, float]
    train_seconds: float
    device: str
    ultralytics_version: str
    created_at: str
    settings: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        """The record as indented JSON."""
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> DetectorRecord:
        """A record from :meth:`to_json` output."""
        return cls(**json.loads(text))


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
        engine.safe_load.UnsafeCheckpointError: The weights cannot be loaded without running
            something in the file, or are not YOLOv8n detection weights.
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


def find_detector(detectors_dir: Path, key: str) -> Path | None:
    """The folder of the detector with ``key`` if it is complete, else None."""
    folder = Path(detectors_dir) / key
    done = (folder / WEIGHTS_FILE).is_file() and (folder / RECORD_FILE).is_file()
    return folder if done else None


#: Detector choices besides a trained detector's key: the newest trained one (classical when
#: none is trained), or the classical detector (`engine.detect.detect_knee_box`).
LATEST = "latest"
CLASSICAL = "classical"


def read_record(folder: Path) -> DetectorRecord:
    """The record of a trained detector's folder (no ultralytics needed)."""
    return DetectorRecord.from_json((Path(folder) / RECORD_FILE).read_text())


def list_detectors(detectors_dir: Path) -> list[DetectorRecord]:
    """Every complete trained detector in ``detectors_dir``, newest first.

    Complete: its folder is named by its key and holds weights and a readable record;
    ultralytics' config folder and a training still being written (``.<key>.partial``) are
    not detectors. Newest is by the record's ``created_at`` (ISO 8601 UTC), then key.
    """
    folder = Path(detectors_dir)
    if not folder.is_dir():
        return []
    records = []
    for entry in folder.iterdir():
        if entry.name.startswith(".") or find_detector(folder, entry.name) is None:
            continue
        try:
            record = read_record(entry)
        except (OSError, ValueError, TypeError) as exc:
            logger.warning("skipping detector folder %s: unreadable record (%s)", entry, exc)
            continue
        if record.key == entry.name:
            records.append(record)
    return sorted(records, key=lambda r: (r.created_at, r.key), reverse=True)


def latest_detector(detectors_dir: Path) -> DetectorRecord | None:
    """The newest complete trained detector in ``detectors_dir`` (None: none is trained)."""
    found = list_detectors(detectors_dir)
    return found[0] if found else None


def choose_detector(detectors_dir: Path, choice: str = LATEST) -> DetectorRecord | None:
    """The trained detector a choice names, or None for the classical detector.

    Args:
        detectors_dir: ``SOFTGRADE_HOME/detectors``.
        choice: ``"latest"`` (the newest trained detector; classical when none is trained),
            ``"classical"``, or a trained detector's key.

    Raises:
        ValueError: ``choice`` is no trained detector's key; the message lists the keys.
    """
    choice = (choice or LATEST).strip()
    if choice == CLASSICAL:
        return None
    if choice == LATEST:
        return latest_detector(detectors_dir)
    for record in list_detectors(detectors_dir):
        if record.key == choice:
            return record
    known = [f"{r.key} ({r.trained_on}, {r.created_at})" for r in list_detectors(detectors_dir)]
    listed = "; ".join(known) if known else f"none is trained in {detectors_dir}"
    raise ValueError(
        f"no trained detector {choice!r}; choose {LATEST}, {CLASSICAL} or a trained "
        f"detector's key: {listed}"
    )


def train_detector(
    films: Sequence[np.ndarray],
    boxes: Sequence[Sequence[Sequence[int]]],
    *,
    image_size: int,
    epochs: int,
    device: str,
    out_dir: Path,
    progress: Progress | None = None,
    trained_on: str = "films with given knee boxes",
    held_out_fraction: float = HELD_OUT_FRACTION,
    batch: int = 16,
    seed: int = 0,
    workers: int | None = None,
    threads: int | None = None,
    work_dir: Path | None = None,
) -> DetectorRecord:
    """Train a YOLOv8n knee detector from scratch and store it under ``out_dir/<key>/``.

    If a detector with the same key (same films, boxes and settings) is already there, it is
    returned without training.

    Args:
        films: (H, W) uint8 films.
        boxes: per film, its 1 or 2 true knee boxes ``(x0, y0, x1, y1)`` in film pixels.
        image_size: network input size in px (a multiple of 32; 64-128 on a CPU for tests,
            256-640 for a real detector).
        epochs: training epochs.
        device: 'cpu', 'cuda' or 'cuda:N'.
        out_dir: the detectors folder (``SOFTGRADE_HOME/detectors``).
        progress: called after every epoch with (epoch, epochs, mean training losses).
        trained_on: what the films are, in words, for the record.
        held_out_fraction: share of films held out of training and scored afterwards.
        batch: images per training batch.
        seed: split and training seed.
        workers: data-loader processes (default 0 on CPU, 4 on a GPU).
        threads: torch threads for CPU training (default: ultralytics' CPUs - 1).
        work_dir: scratch folder for the dataset and ultralytics' run (a temporary folder
            by default, removed afterwards).

    Returns:
        The detector's record (also in ``out_dir/<key>/record.json``).
    """
    _check_films_and_boxes(films, boxes)
    if image_size < 32 or image_size % 32:
        raise ValueError(f"{image_size=} must be a multiple of 32, at least 32")
    if epochs < 1:
        raise ValueError(f"{epochs=} must be at least 1")
    settings = {
        "model": MODEL_YAML,
        "image_size": int(image_size),
        "epochs": int(epochs),
        "held_out_fraction": float(held_out_fraction),
        "batch": int(batch),
        "seed": int(seed),
    }
    key = detector_key(films, boxes, settings)
    out_dir = Path(out_dir)
    done = find_detector(out_dir, key)
    if done is not None:
        logger.info("detector %s already trained; reusing %s", key, done)
        return DetectorRecord.from_json((done / RECORD_FILE).read_text())
    ultralytics = ultralytics_offline(out_dir / CONFIG_DIR_NAME)
    train_idx, held_idx = held_out_split(len(films), held_out_fraction, seed)

    with tempfile.TemporaryDirectory(prefix="softgrade-yolo-", dir=work_dir) as tmp:
        data_yaml = write_yolo_dataset(films, boxes, Path(tmp) / "data", held_out=held_idx)
        model = ultralytics.YOLO(MODEL_YAML, task="detect")
        if progress is not None:
            model.add_callback("on_train_epoch_end", _epoch_reporter(progress))
        on_gpu = device.startswith("cuda")
        start = time.perf_counter()
        with keep_torch_threads(threads):
            model.train(
                data=str(data_yaml),
                epochs=epochs,
                imgsz=image_size,
                batch=batch,
                device=device,
                workers=(4 if on_gpu else 0) if workers is None else workers,
                project=str(Path(tmp) / "runs"),
                name="train",
                exist_ok=True,
                pretrained=False,
                # bf16 autocast skips ultralytics' AMP self-check, which downloads a model.
                amp="bf16" if on_gpu else False,
                plots=False,
                val=False,  # scored once at the end, on films that picked nothing
                cache=True,
                seed=seed,
                deterministic=True,
                verbose=False,
            )
        train_seconds = time.perf_counter() - start
        trainer = model.trainer
        map_metrics = {
            "map50": round(float(trainer.metrics.get("metrics/mAP50(B)", float("nan"))), 4),
            "map50_95": round(float(trainer.metrics.get("metrics/mAP50-95(B)", float("nan"))), 4),
        }
        folder = out_dir / key
        partial = out_dir / f".{key}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        shutil.copyfile(trainer.last, partial / WEIGHTS_FILE)

    model = load_yolo_detector(partial / WEIGHTS_FILE, model_yaml=MODEL_YAML)
    detector = KneeDetector(model, image_size=image_size, device=device)
    scores = evaluate_detector(
        lambda f: find_knees(f, detector=detector),
        [films[i] for i in held_idx],
        [boxes[i] for i in held_idx],
    )
    record = DetectorRecord(
        key=key,
        path=str(folder / WEIGHTS_FILE),
        trained_on=trained_on,
        model=MODEL_YAML,
        image_size=int(image_size),
        epochs=int(epochs),
        n_films=len(films),
        n_train=len(train_idx),
        n_held_out=len(held_idx),
        n_knees=sum(len(b) for b in boxes),
        held_out={**scores.to_dict(), **map_metrics},
        train_seconds=round(train_seconds, 2),
        device=device,
        ultralytics_version=ultralytics.__version__,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        settings=settings,
    )
    (partial / RECORD_FILE).write_text(record.to_json())
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)  # the folder appears complete or not at all
    logger.info(
        "detector %s: held-out mean IoU %.3f, mAP50 %.3f (%d films, %.1f s)",
        key,
        scores.mean_iou,
        map_metrics["map50"],
        len(films),
        train_seconds,
    )
    return record


def _epoch_reporter(progress: Progress) -> Callable[[Any], None]:
    """An ultralytics ``on_train_epoch_end`` callback that calls ``progress``."""

    def report(trainer: Any) -> None:
        losses = {k: round(float(v), 4) for k, v in (trainer.tloss or {}).items()}
        progress(int(trainer.epoch) + 1, int(trainer.epochs), losses)

    return report


# --------------------------------------------------------------------------------------
# Phantom training data
# --------------------------------------------------------------------------------------


def phantom_detection_set(
    spec: PhantomSpec, *, bilateral: bool = False
) -> tuple[list[np.ndarray], list[list[Box]]]:
    """Phantom films with their true knee boxes, for training or scoring a detector.

    Args:
        spec: the phantom (its ``film_size``, seed and number of films).
        bilateral: both knees of a patient on one film, drawn by
            :func:`engine.phantom.render_bilateral_film` (right knee on the viewer's left);
            patients with one knee in the phantom are left out.

    Returns:
        ``(films, boxes)``: (H, W) uint8 films and, per film, its knee boxes in film pixels;
        on a bilateral film ``[right knee, left knee]``.
    """
    labels = phantom_labels(spec)
    if not bilateral:
        films, boxes = [], []
        for _, row in labels.iterrows():
            film, _, box = render_film(spec, row)
            films.append(film)
            boxes.append([box])
        return films, boxes
    films, boxes = [], []
    for patient_index, rows in labels.groupby("patient_index", sort=True):
        if sorted(rows["side"]) != ["L", "R"]:
            continue
        film, knees = render_bilateral_film(spec, int(patient_index), labels)
        films.append(film)
        boxes.append([knee.box for knee in knees])  # viewer's left to right: [right, left]
    return films, boxes


def train_phantom_detector(
    home: Path,
    *,
    n_films: int,
    image_size: int,
    epochs: int,
    device: str,
    progress: Progress | None = None,
    seed: int = 101,
    film_size: tuple[int, int] = (384, 320),
    bilateral: bool = False,
) -> DetectorRecord:
    """Train (or reuse) a knee detector on phantom films; the CLI's one call.

    The phantom's seed defaults to one no study uses (the app's phantom is seed 0), so the
    films a study crops with this detector are films it never saw.

    Args:
        home: ``SOFTGRADE_HOME``; the detector goes to ``home/detectors/<key>/``.
        n_films: phantom films to draw (a fifth are held out for scoring).
        image_size: network input size (px, multiple of 32).
        epochs: training epochs.
        device: 'cpu', 'cuda' or 'cuda:N'.
        progress: called after every epoch with (epoch, epochs, losses).
        seed: phantom seed.
        film_size: (H, W) of each phantom film.
        bilateral: train on bilateral films (see :func:`phantom_detection_set`).

    Returns:
        The detector's record.
    """
    spec = PhantomSpec(n_images=n_films, n_joint=n_films // 2, seed=seed, film_size=film_size)
    films, boxes = phantom_detection_set(spec, bilateral=bilateral)
    kind = "bilateral" if bilateral else "single-knee"
    return train_detector(
        films,
        boxes,
        image_size=image_size,
        epochs=epochs,
        device=device,
        out_dir=Path(home) / "detectors",
        progress=progress,
        trained_on=(
            f"phantom seed={seed}, {len(films)} {kind} films of {film_size[0]}x{film_size[1]} px"
        ),
        seed=0,
    )


def phantom_films(
    n_films: int,
    *,
    seed: int,
    film_size: tuple[int, int] = (384, 320),
    bilateral: bool = False,
) -> tuple[list[np.ndarray], list[list[Box]]]:
    """Exactly ``n_films`` phantom films of one seed with their true boxes (see
    :func:`phantom_detection_set`); bilateral films are ``(H, 2 W)`` with two knees each.

    Raises:
        ValueError: ``n_films`` below 1.
    """
    if n_films < 1:
        raise ValueError(f"{n_films=} must be at least 1")
    # About 47 % of the phantom's patients have both knees: draw enough knees for n films.
    n_images = n_films * 9 // 4 + 16 if bilateral else n_films
    while True:
        spec = PhantomSpec(n_images=n_images, n_joint=n_images // 2, seed=seed, film_size=film_size)
        films, boxes = phantom_detection_set(spec, bilateral=bilateral)
        if len(films) >= n_films:
            return films[:n_films], boxes[:n_films]
        n_images *= 2


def phantom_trained_on(films: Sequence[np.ndarray], *, seed: int, bilateral: bool) -> str:
    """What phantom films a detector was trained on, in words, for its record."""
    kind = "bilateral" if bilateral else "single-knee"
    h, w = films[0].shape
    return f"phantom seed={seed}, {len(films)} {kind} films of {h}x{w} px"
