"""Classical vs YOLO knee detector on held-out phantom films: box quality and time.

Usage (CPU, small; GPU; bilateral films):
    .venv/bin/python bench/detector_bench.py --train-films 200 --image-size 256 --epochs 30
    python3 bench/detector_bench.py --device cuda --train-films 1000 --image-size 384 --epochs 60
    .venv/bin/python bench/detector_bench.py --bilateral ...

Bilateral films are the phantom's own (`engine.phantom.render_bilateral_film`: both knees of
a patient on one (H, 2 W) film, one exposure, the right knee on the viewer's left), one per
patient with both knees.

On a bare GPU machine it needs only the repository's ``engine/`` and these Python packages:
torch, ultralytics and ultralytics' own requirements (opencv, matplotlib, polars, pyyaml,
pillow, psutil, ...), plus pandas (the phantom's labels) and scipy (box matching; jax
installs it); none of the app's (streamlit, duckdb, pydicom). A missing one is named at
the start, before any work.

The YOLO detector (``engine.detect.yolo``: YOLOv8n from scratch, offline) is trained on phantom
films of one seed (a fifth of them held out inside training, for its record) and both
detectors are scored on films of another seed that neither saw. Prints mean / median / min
IoU, the share of knees found at IoU >= 0.5 and >= 0.75, misses (knees without a box at IoU
>= 0.5), extra boxes, films with every knee found (both, on a bilateral film), the YOLO
training time and per-film detection times, and the machine. ``--json PATH`` also writes
the figures as JSON.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

#: Import name -> pip name of what this bench imports (directly or through ultralytics).
NEEDED = {
    "numpy": "numpy",
    "torch": "torch",
    "torchvision": "torchvision",
    "ultralytics": "ultralytics",
    "cv2": "opencv-python-headless",
    "matplotlib": "matplotlib",
    "polars": "polars",
    "yaml": "pyyaml",
    "PIL": "pillow",
    "psutil": "psutil",
    "pandas": "pandas",
    "scipy": "scipy",
}


def missing_packages() -> list[str]:
    """The pip names of needed packages this Python cannot import."""
    import importlib.util

    return [pip for name, pip in NEEDED.items() if importlib.util.find_spec(name) is None]


if __name__ == "__main__" and (_missing := missing_packages()):
    sys.exit(f"error: install these Python packages first: {', '.join(_missing)}")

from engine.detect import (  # noqa: E402 - after the package check above
    DetectionMetrics,
    KneeDetection,
    box_iou,
    evaluate_detector,
    find_knees,
    load_detector,
    phantom_detection_set,
    train_detector,
)
from engine.phantom import PhantomSpec  # noqa: E402

TRAIN_SEED, TEST_SEED = 101, 202  # two phantoms no study uses (the app's is seed 0)


def machine_info(device: str, threads: int | None) -> str:
    import torch

    versions = []
    for pkg in ("torch", "ultralytics", "numpy", "opencv-python", "opencv-python-headless"):
        try:
            versions.append(f"{pkg} {importlib.metadata.version(pkg)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    where = f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()})"
    if device.startswith("cuda") and torch.cuda.is_available():
        where += f", GPU {torch.cuda.get_device_name(0)}"
    return (
        f"{where}; CPU training threads {threads or min(8, max(1, (os.cpu_count() or 2) - 1))}; "
        f"load average at the end {os.getloadavg()[0]:.1f}; Python {platform.python_version()}; "
        + ", ".join(versions)
    )


def timed_evaluation(detect, films, boxes) -> tuple[DetectionMetrics, float, float]:
    """Metrics, mean milliseconds per film, and the share of knees given the right side.

    A knee has the right side when the detection matched to it (IoU >= 0.5) carries the
    side it was drawn as: on a bilateral film the true boxes are [right, left]; a
    single-knee film (no laterality tag) should give no side.
    """
    found: list[list[KneeDetection]] = []

    def recording(film):
        knees = detect(film)
        found.append(knees)
        return knees

    start = time.perf_counter()
    metrics = evaluate_detector(recording, films, boxes)
    ms = (time.perf_counter() - start) / len(films) * 1000
    right = 0
    for knees, truths in zip(found, boxes, strict=True):
        want = ["R", "L"] if len(truths) == 2 else [None]
        for truth, side in zip(truths, want, strict=True):
            right += any(box_iou(k.box, truth) >= 0.5 and k.side == side for k in knees)
    return metrics, ms, right / sum(len(b) for b in boxes)


def phantom_set(n: int, seed: int, film_size: tuple[int, int], bilateral: bool):
    # A bilateral film holds a patient's two knees, and some patients have one knee only
    # (about 19 two-knee patients per 40 knees): draw three times as many knees.
    n_images = 3 * n if bilateral else n
    spec = PhantomSpec(n_images=n_images, n_joint=n_images // 2, seed=seed, film_size=film_size)
    films, boxes = phantom_detection_set(spec, bilateral=bilateral)
    return films[:n], boxes[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--train-films", type=int, default=200)
    parser.add_argument("--test-films", type=int, default=100)
    parser.add_argument("--image-size", type=int, default=256, help="YOLO input size (px)")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--workers", type=int, default=None, help="data-loader processes")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads on CPU (ultralytics: CPUs - 1)"
    )
    parser.add_argument("--film-size", type=int, nargs=2, default=(384, 320), metavar=("H", "W"))
    parser.add_argument("--bilateral", action="store_true", help="both knees on every film")
    parser.add_argument("--out", type=Path, default=None, help="keep the detector here")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()

    film_size = tuple(args.film_size)
    t0 = time.perf_counter()
    train_films, train_boxes = phantom_set(args.train_films, TRAIN_SEED, film_size, args.bilateral)
    test_films, test_boxes = phantom_set(args.test_films, TEST_SEED, film_size, args.bilateral)
    kind = "bilateral" if args.bilateral else "single-knee"
    print(
        f"phantom {kind} films of {train_films[0].shape[0]}x{train_films[0].shape[1]} px: "
        f"{len(train_films)} to train "
        f"(seed {TRAIN_SEED}), {len(test_films)} to test (seed {TEST_SEED}); "
        f"drawn in {time.perf_counter() - t0:.1f} s"
    )

    classical, classical_ms, classical_sides = timed_evaluation(find_knees, test_films, test_boxes)

    def progress(epoch: int, epochs: int, losses: dict[str, float]) -> None:
        shown = ", ".join(f"{k} {v:.3f}" for k, v in losses.items())
        print(
            f"  epoch {epoch}/{epochs}: {shown} ({time.perf_counter() - start:.0f} s)", flush=True
        )

    with tempfile.TemporaryDirectory(prefix="detector_bench_") as tmp:
        out = args.out or Path(tmp) / "detectors"
        start = time.perf_counter()
        record = train_detector(
            train_films,
            train_boxes,
            image_size=args.image_size,
            epochs=args.epochs,
            device=args.device,
            out_dir=out,
            progress=progress,
            trained_on=f"phantom seed={TRAIN_SEED}, {len(train_films)} {kind} films",
            batch=args.batch,
            workers=args.workers,
            threads=args.threads,
        )
        wall = time.perf_counter() - start
        detector = load_detector(Path(record.path), device=args.device)
        detector.detect(test_films[0])  # the first call builds the predictor
        yolo, yolo_ms, yolo_sides = timed_evaluation(
            lambda f: find_knees(f, detector=detector), test_films, test_boxes
        )

    rows = [
        ("classical", classical, classical_ms, classical_sides),
        ("YOLOv8n", yolo, yolo_ms, yolo_sides),
    ]
    print(f"\nheld-out test films: {yolo.n_films} ({yolo.n_knees} knees)")
    print(
        "| detector | mean IoU | median | min | IoU ≥ 0.5 | IoU ≥ 0.75 | misses | extra "
        "| films all found | side right | ms/film |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, m, ms, sides in rows:
        print(
            f"| {name} | {m.mean_iou:.3f} | {m.median_iou:.3f} | {m.min_iou:.3f} "
            f"| {m.share_iou_50:.3f} | {m.share_iou_75:.3f} | {m.misses} | {m.extra} "
            f"| {m.films_all_found:.3f} | {sides:.3f} | {ms:.1f} |"
        )
    print(
        f"\nYOLO training: {record.train_seconds:.1f} s for {args.epochs} epochs at "
        f"{args.image_size} px, batch {args.batch}, on {args.device} "
        f"({wall:.1f} s with dataset writing and held-out scoring); "
        f"its own held-out films ({record.n_held_out} of the training seed): mean IoU "
        f"{record.held_out['mean_iou']:.3f}, mAP50 {record.held_out['map50']:.3f}, "
        f"mAP50-95 {record.held_out['map50_95']:.3f}"
    )
    print(f"machine: {machine_info(args.device, args.threads)}")
    print(f"command: python {' '.join(sys.argv)}")
    if args.json is not None:
        figures = {
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "classical": {
                **classical.to_dict(),
                "ms_per_film": round(classical_ms, 2),
                "side_right": round(classical_sides, 4),
            },
            "yolo": {
                **yolo.to_dict(),
                "ms_per_film": round(yolo_ms, 2),
                "side_right": round(yolo_sides, 4),
            },
            "yolo_record": json.loads(record.to_json()),
            "machine": machine_info(args.device, args.threads),
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
