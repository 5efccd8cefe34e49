"""Training a YOLOv8n knee detector from scratch on films with known knee boxes, offline.

The films are the phantom's (`engine.detect.phantom_sets`) or real films with boxes given.
The trained detector is stored in the registry's folder layout (`engine.detect.registry`),
keyed by what decides its weights.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from engine.detect.classical import find_knees
from engine.detect.evaluation import evaluate_detector
from engine.detect.registry import (
    RECORD_FILE,
    WEIGHTS_FILE,
    DetectorRecord,
    detector_key,
    detector_size_problem,
    find_detector,
)
from engine.detect.safe_load import MODEL_YAML, load_yolo_detector
from engine.detect.yolo import (
    CONFIG_DIR_NAME,
    KneeDetector,
    keep_torch_threads,
    ultralytics_offline,
)

logger = logging.getLogger(__name__)

HELD_OUT_FRACTION = 0.2

#: progress(epoch, epochs, losses): called after every training epoch (epoch from 1).
Progress = Callable[[int, int, dict[str, float]], None]


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
    held_out: Sequence[int] | np.ndarray,
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
    if problem := detector_size_problem(image_size):
        raise ValueError(problem)
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
