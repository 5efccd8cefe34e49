"""Time the import check on 10,000 films: every film decoded, hashed and its knee located.

Usage:
    .venv/bin/python bench/import_bench.py                      # 10,000 films, 2 workers
    .venv/bin/python bench/import_bench.py --films 2000 --workers 1 --no-detect
    .venv/bin/python bench/import_bench.py --films 2000 --trained-detector 160

The folder is generated once under ``--dir`` (default /tmp/softgrade_import_bench): one
phantom film per row (each its own knee; copies under other patients would be near-duplicate
leaks), resized to 256-512 px a side, marked with a few unique pixels, saved as PNG,
with a labels CSV and about 1 % planted faults (truncated PNGs, text files named .png, empty
files, missing films, films listed twice, the same pixels under another patient, grades out
of range). ``--trained-detector SIZE`` locates knees with a YOLOv8n detector trained for
the bench in seconds (16 phantom films, 2 epochs, SIZE px) instead of the classical
detector: it times YOLOv8n's inference on every film at that size, which does not depend on
how well the detector was trained (this one is too briefly trained to find the knees, so
the report lists the films as `no_knee`; a film's checks after detection cost ~0.3 ms).
Prints wall time, films/s, peak memory of this process and of the largest worker, the
problems found by kind, and the machine.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import resource
import time
from pathlib import Path

import cv2
import numpy as np
import pandas as pd

from engine.detect import (
    CLASSICAL_DETECTOR,
    DetectorInfo,
    choose_detector,
    phantom_detection_set,
    train_detector,
)
from engine.films import check_import
from engine.phantom import PhantomSpec, phantom_labels, render_film

FAULTS_PER_KIND = 20


def make_folder(folder: Path, n: int, seed: int = 0) -> Path:
    """``n`` PNG films (256-512 px) plus planted faults; reused if already complete."""
    done = folder / "labels.csv"
    distinct = folder / ".distinct_films"  # folders of 200 films copied over are redone
    if done.exists() and distinct.exists() and len(pd.read_csv(done)) >= n:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    # Every film its own phantom: copies of a few films under other patients would be
    # near-duplicate leaks (the import's perceptual hash names them), not a bench.
    spec = PhantomSpec(n_images=n, n_joint=n, seed=seed)
    labels = phantom_labels(spec)
    rows = []
    t0 = time.perf_counter()
    for i in range(n):
        base = render_film(spec, labels.iloc[i])[0]
        side = int(rng.integers(256, 513))
        h, w = base.shape
        film = cv2.resize(base, (side * w // max(h, w), side * h // max(h, w)))
        film[0, :12] = np.frombuffer(i.to_bytes(12, "little"), np.uint8)  # unique pixels
        name = f"f{i:05d}.png"
        cv2.imwrite(str(folder / name), film)
        row = labels.iloc[i % len(labels)]
        rows.append((name, f"pt{i // 2:05d}", "LR"[i % 2], int(row.kl), int(row.cppd)))
        if i % 1000 == 999:
            print(f"  wrote {i + 1} films ({time.perf_counter() - t0:.0f} s)", flush=True)
    rows += _plant_faults(folder, rows)
    pd.DataFrame(rows, columns=["image", "patient_id", "side", "kl", "cppd"]).to_csv(
        done, index=False
    )
    distinct.touch()
    return folder


def _plant_faults(folder: Path, rows: list[tuple]) -> list[tuple]:
    extra = []
    k = FAULTS_PER_KIND
    for j in range(k):
        source = (folder / rows[j][0]).read_bytes()
        (folder / f"trunc{j}.png").write_bytes(source[: len(source) // 3])
        (folder / f"text{j}.png").write_text("not a film\n")
        (folder / f"empty{j}.png").write_bytes(b"")
        (folder / f"copy{j}.png").write_bytes((folder / rows[100 + j][0]).read_bytes())
        odd = cv2.imread(str(folder / rows[300 + j][0]), cv2.IMREAD_GRAYSCALE)
        cv2.imwrite(str(folder / f"odd{j}.png"), odd[::-1].copy())
        extra += [
            (f"trunc{j}.png", f"tr{j}", "L", 1, 1),
            (f"text{j}.png", f"tx{j}", "L", 1, 1),
            (f"empty{j}.png", f"em{j}", "L", 1, 1),
            (f"missing{j}.png", f"mi{j}", "L", 1, 1),
            (f"copy{j}.png", f"cp{j}", "L", *rows[100 + j][3:]),
            (rows[200 + j][0], rows[200 + j][1], rows[200 + j][2], 0, 0),  # listed twice
            (f"odd{j}.png", f"od{j}", "X", 7, 1),
        ]
    return extra


def _cpu_seconds() -> tuple[float, float]:
    """User + system CPU seconds of this process, and of its finished children (workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def machine_info() -> str:
    versions = []
    for pkg in ("numpy", "pillow", "opencv-python-headless", "opencv-python", "pandas"):
        try:
            versions.append(f"{pkg} {importlib.metadata.version(pkg)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return (
        f"cpus={os.cpu_count()} (affinity {len(os.sched_getaffinity(0))}) "
        f"cpu='{platform.processor() or platform.machine()}' python "
        f"{platform.python_version()} | " + ", ".join(versions)
    )


def bench_detector(detectors: Path, image_size: int) -> DetectorInfo:
    """A YOLOv8n detector trained in seconds on 16 phantom films at ``image_size`` px
    (reused when already there): only its speed matters here."""
    films, boxes = phantom_detection_set(
        PhantomSpec(n_images=16, n_joint=8, seed=4, film_size=(320, 320))
    )
    record = train_detector(
        films,
        boxes,
        image_size=image_size,
        epochs=2,
        device="cpu",
        out_dir=detectors,
        trained_on="the import bench (speed only)",
    )
    return choose_detector(detectors, record.key)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--films", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/softgrade_import_bench"))
    parser.add_argument("--no-detect", action="store_true", help="decode and hash only")
    parser.add_argument(
        "--trained-detector",
        type=int,
        metavar="SIZE",
        help="locate knees with a YOLOv8n detector of this input size (px) trained here",
    )
    args = parser.parse_args()
    detector = (
        CLASSICAL_DETECTOR
        if args.trained_detector is None
        else bench_detector(args.dir / "detectors", args.trained_detector)
    )
    folder = make_folder(args.dir / f"films{args.films}", args.films)
    last = [0.0]

    def progress(done: int, total: int, rate: float) -> None:
        now = time.monotonic()
        if now - last[0] > 10 or done == total:
            last[0] = now
            print(f"  checked {done}/{total} films ({rate:.0f} films/s)", flush=True)

    load = os.getloadavg()
    cpu0 = _cpu_seconds()
    t0 = time.perf_counter()
    report = check_import(
        folder,
        workers=args.workers,
        detect=not args.no_detect,
        progress=progress,
        detector=detector,
    )
    seconds = time.perf_counter() - t0
    cpu_self, cpu_kids = (b - a for a, b in zip(cpu0, _cpu_seconds(), strict=True))
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    kinds = report.problems["kind"].value_counts().to_dict()
    print(
        f"{report.n_rows} rows, {report.n_files} files: {seconds:.1f} s "
        f"({report.n_files / seconds:.0f} films/s) with {args.workers} worker(s), "
        f"detect={not args.no_detect}, detector {report.detector.name} "
        f"{report.detector.key}; {len(report.films)} good, {len(report.left_out)} left out"
    )
    print(
        f"CPU: this process {cpu_self:.1f} s, workers {cpu_kids:.1f} s; on {args.workers} "
        f"idle core(s) that is at least {(cpu_self + cpu_kids) / args.workers:.1f} s of wall time"
    )
    print(f"peak RSS: this process {own:.0f} MiB, largest worker {kids:.0f} MiB")
    print(f"problems by kind: {kinds}")
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(machine_info())


if __name__ == "__main__":
    main()
