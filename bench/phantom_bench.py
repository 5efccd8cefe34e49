"""Time the phantom cache build and (optionally) draw a contact sheet of the phantom.

Usage:
    .venv/bin/python bench/phantom_bench.py                  # default spec, 224 px, 2 workers
    .venv/bin/python bench/phantom_bench.py --sheet /tmp/phantom_sheet.png --no-bench

Prints wall time, films/s, cache size, the classical detector's IoU against the true knee
boxes, and the machine it ran on.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import resource
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
import pandas as pd

from engine.datasets import build_phantom_cache
from engine.detect import box_iou, crop_and_resize, detect_knee_box
from engine.phantom import PhantomSpec, phantom_labels, render_film


def machine_info() -> str:
    versions = []
    for pkg in ("numpy", "opencv-python", "opencv-python-headless", "pandas"):
        try:
            versions.append(f"{pkg} {importlib.metadata.version(pkg)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return (
        f"cpus={os.cpu_count()} cpu='{platform.processor() or platform.machine()}' "
        f"python {platform.python_version()} | " + ", ".join(versions) + f" | cv2 {cv2.__version__}"
    )


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children (the workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run_bench(spec: PhantomSpec, image_size: int, workers: int, detector: str) -> None:
    with tempfile.TemporaryDirectory(prefix="phantom_bench_") as tmp:
        out = Path(tmp) / "cache"
        load_before = os.getloadavg()[0]
        cpu0 = _cpu_seconds()
        t0 = time.perf_counter()
        build_phantom_cache(spec, image_size, out, workers=workers, detector=detector)
        seconds = time.perf_counter() - t0
        cpu_s = _cpu_seconds() - cpu0
        size_mb = sum(p.stat().st_size for p in out.iterdir()) / 1e6
        meta = pd.read_csv(out / "meta.csv")
        t1 = time.perf_counter()
        build_phantom_cache(spec, image_size, out, workers=workers, detector=detector)
        reuse_ms = (time.perf_counter() - t1) * 1000
    iou = meta["box_iou"].to_numpy()
    print(f"phantom cache: {len(meta)} films at {image_size} px, workers={workers}, {detector=}")
    print(f"  build time      {seconds:.1f} s  ({len(meta) / seconds:.1f} films/s)")
    print(
        f"  CPU time        {cpu_s:.1f} s over all processes "
        f"({cpu_s / len(meta) * 1000:.1f} ms/film); load average before: {load_before:.1f} "
        "(other work on the machine slows the wall time)"
    )
    print(f"  reuse (cached)  {reuse_ms:.1f} ms")
    print(f"  cache size      {size_mb:.1f} MB")
    print(
        f"  detector IoU    mean {iou.mean():.3f}, median {np.median(iou):.3f}, "
        f"min {iou.min():.3f}, share >= 0.5: {(iou >= 0.5).mean():.3f}, "
        f">= 0.7: {(iou >= 0.7).mean():.3f}"
    )
    print(f"  machine         {machine_info()}")


def _label(img: np.ndarray, text: str) -> np.ndarray:
    out = cv2.cvtColor(img, cv2.COLOR_GRAY2BGR) if img.ndim == 2 else img.copy()
    cv2.putText(out, text, (4, 14), cv2.FONT_HERSHEY_SIMPLEX, 0.42, (0, 0, 0), 3, cv2.LINE_AA)
    cv2.putText(out, text, (4, 14), cv2.FONT_HERSHEY_SIMPLEX, 0.42, (80, 255, 255), 1, cv2.LINE_AA)
    return out


def make_contact_sheet(spec: PhantomSpec, path: Path, per_row: int = 6, size: int = 200) -> None:
    """Rows: whole films with true (green) and detected (red) boxes; knee crops per KL grade
    (any CPPD); crops per CPPD grade among KL 0-1 knees (where deposits are easiest to see).
    """
    labels = phantom_labels(spec)
    rows: list[np.ndarray] = []

    films = []
    for i in range(per_row):
        row = labels.iloc[i]
        film, _, box = render_film(spec, row)
        det = detect_knee_box(film)
        img = cv2.cvtColor(film, cv2.COLOR_GRAY2BGR)
        cv2.rectangle(img, box[:2], (box[2] - 1, box[3] - 1), (0, 200, 0), 2)
        cv2.rectangle(img, det[:2], (det[2] - 1, det[3] - 1), (0, 0, 255), 2)
        scale = size / film.shape[0]
        img = cv2.resize(img, (int(film.shape[1] * scale), size), interpolation=cv2.INTER_AREA)
        films.append(_label(img, f"{row.side} film IoU {box_iou(box, det):.2f}"))
    strip = np.hstack(films)
    pad = per_row * size - strip.shape[1]
    rows.append(
        np.pad(strip, ((0, 0), (0, max(pad, 0)), (0, 0))) if pad > 0 else strip[:, : per_row * size]
    )

    def crops(sel: pd.DataFrame, tag: str) -> np.ndarray:
        tiles = []
        for _, row in sel.head(per_row).iterrows():
            film, _, box = render_film(spec, row)
            crop = crop_and_resize(film, box, size)
            tiles.append(
                _label(crop, f"{tag} KL{row.kl_true} C{row.cppd_true} s{row.kl_severity:.1f}")
            )
        while len(tiles) < per_row:
            tiles.append(np.zeros((size, size, 3), np.uint8))
        return np.hstack(tiles)

    for k in range(5):
        rows.append(crops(labels[labels.kl_true == k], ""))
    low_kl = labels[labels.kl_true <= 1]
    for c in range(4):
        rows.append(crops(low_kl[low_kl.cppd_true == c], ""))
    sheet = np.vstack(rows)
    cv2.imwrite(str(path), sheet)
    print(f"contact sheet written to {path} ({sheet.shape[1]}x{sheet.shape[0]})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--n-images", type=int, default=None)
    parser.add_argument("--difficulty", type=float, default=1.0)
    parser.add_argument("--detector", default="classical", choices=["classical", "truth"])
    parser.add_argument("--sheet", type=Path, default=None, help="also write a contact sheet")
    parser.add_argument("--no-bench", action="store_true", help="skip the timed build")
    args = parser.parse_args()

    kwargs = {"difficulty": args.difficulty}
    if args.n_images is not None:
        kwargs |= {"n_images": args.n_images, "n_joint": min(970, args.n_images // 2)}
    spec = PhantomSpec(**kwargs)
    if args.sheet is not None:
        make_contact_sheet(spec, args.sheet)
    if not args.no_bench:
        run_bench(spec, args.image_size, args.workers, args.detector)


if __name__ == "__main__":
    main()
