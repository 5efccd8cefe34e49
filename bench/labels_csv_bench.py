"""Time the import check on a labels CSV of many rows (issue 31: 1,000,000 rows took 205 s
and 2 GB, with no cap and no progress).

Usage:
    .venv/bin/python bench/labels_csv_bench.py --rows 1000000
    .venv/bin/python bench/labels_csv_bench.py --rows 100000 --films 3

The folder (``--dir``, default /tmp/softgrade_labels_bench_<rows>) holds ``--films`` phantom
films and a labels CSV of ``--rows`` rows, each its own patient: the first rows name the
films, the others name files that are not there (a hostile or mistaken CSV; each such row is
a ``missing_file`` problem). Prints the wall time of `check_import` (one process), the peak
memory of this process (ru_maxrss), what the check said, and the machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from pathlib import Path

from engine.films import check_import
from engine.films.layouts import ImportSourceError


def make_folder(folder: Path, rows: int, films: int) -> Path:
    """The films and the labels CSV (reused when already written)."""
    from tests.helpers.films import phantom_film, png_bytes

    csv = folder / "labels.csv"
    if csv.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(films):
        (folder / f"k{i}.png").write_bytes(png_bytes(phantom_film(5, i)))
    with open(csv.with_suffix(".tmp"), "w") as out:
        out.write("image,patient_id,side,kl,cppd\n")
        for i in range(rows):
            name = f"k{i}.png" if i < films else f"missing/f{i:07d}.png"
            out.write(f"{name},p{i:07d},L,{i % 5},{i % 4}\n")
    csv.with_suffix(".tmp").replace(csv)
    return folder


def main() -> int:
    """Check the folder once and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--films", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    folder = args.dir or Path(f"/tmp/softgrade_labels_bench_{args.rows}")
    make_folder(folder, args.rows, args.films)
    start = time.perf_counter()
    try:
        report = check_import(folder, workers=1)
        said = (
            f"{report.n_rows:,} rows, {len(report.problems):,} problems, "
            f"{len(report.films)} good films"
        )
    except ImportSourceError as exc:
        said = f"refused: {exc}"
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"rows {args.rows:,}: {wall:.1f} s, peak memory {peak:,.0f} MiB; {said}")
    print(
        f"machine: {platform.node()}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f}, Python {sys.version.split()[0]}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
