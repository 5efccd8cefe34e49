"""Time `python -m jobs report` on the bundled 20-seed reference study and measure the file.

    python bench/report_bench.py [--repeat 3] [--pdf]

The bundle is imported into a temporary store (as the tests do); the command then runs as a
person types it, a fresh process each time (imports and the report's child process
included), pinned to two cores (``taskset -c 0,1`` where present, ``OMP_NUM_THREADS=2``).
Target (issue 22): < 30 s on 2 cores. Prints each wall time, the HTML's size, its charts and
the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from store.bundle import REFERENCE_STUDY, import_study  # noqa: E402
from store.db import init_schema  # noqa: E402


def report_once(home: Path, study: str, out: Path, pdf: bool) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, its processes together) of one `jobs report` in a
    fresh process on two cores. On a machine shared by other work, CPU seconds say what the
    report costs and wall seconds what it took under that load."""
    pin = ["taskset", "-c", "0,1"] if shutil.which("taskset") else []
    command = [*pin, sys.executable, "-m", "jobs", "report", study, "-o", str(out)]
    env = {**os.environ, "SOFTGRADE_HOME": str(home), "OMP_NUM_THREADS": "2"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [*command, *(["--pdf"] if pdf else [])], cwd=ROOT, env=env, check=True, capture_output=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pdf", action="store_true", help="also print the PDF (Chromium)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        init_schema(home / "softgrade.duckdb")
        study = import_study(REFERENCE_STUDY, path=home / "softgrade.duckdb").study_id
        out = home / "report.html"
        print(f"load average before: {os.getloadavg()}")
        times = [report_once(home, study, out, args.pdf) for _ in range(args.repeat)]
        print(f"load average after:  {os.getloadavg()}")
        text = out.read_text(encoding="utf-8")
        runs = ", ".join(f"{wall:.1f} s wall / {cpu:.1f} s CPU" for wall, cpu in times)
        print(f"jobs report {study}{' --pdf' if args.pdf else ''}: {runs}")
        print(f"HTML: {out.stat().st_size / 1e6:.2f} MB, {text.count('<svg')} inline SVG charts")
        if args.pdf:
            print(f"PDF: {out.with_suffix('.pdf').stat().st_size / 1e6:.2f} MB")
        print(f"http(s) addresses in the file: {len(re.findall(r'https?://', text))}")


if __name__ == "__main__":
    main()
