"""Time the Search & learning curves page itself at the paper's scale, through AppTest.

Usage:
    .venv/bin/python bench/explorer_page_bench.py              # build the store once, measure
    .venv/bin/python bench/explorer_page_bench.py --home DIR   # keep the store in DIR

The store is `bench/explorer_bench.py`'s (1,800 runs, ~170,000 epoch rows; built with its
``build_store`` when missing). Each step is one whole script run of ``pages/explorer.py``
in Streamlit's AppTest, store reads, engine transforms, tables and Altair specs included:
the first render (imports, empty caches), a rerun with the caches warm, a rerun after the
page's 5 s store reads expired (as a running study's page sees every 10 s), and the first
view after a widget change (the method with 15 configurations; the overlay by seed). Wall
and CPU seconds of this process (median of 3 where repeated).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from explorer_bench import build_store, machine_info

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_HOME = Path("/tmp/softgrade_explorer_page_bench")
REPEATS = 3
READ_TTL_S = 5  # pages/explorer.py LIVE_TTL_S


def timed(fn: Callable[[], None], repeats: int = REPEATS) -> tuple[float, float]:
    """(wall median, CPU median) seconds of ``fn``."""
    wall, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME)
    args = parser.parse_args()
    if not (args.home / "softgrade.duckdb").exists():
        build_store(args.home)
    os.environ["SOFTGRADE_HOME"] = str(args.home)

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / "explorer.py"), default_timeout=600)

    def run() -> None:
        at.run()
        assert not at.exception, [e.value for e in at.exception]

    def run_expired() -> None:
        time.sleep(READ_TTL_S + 0.5)  # not timed: let the page's 5 s read caches expire
        t, c = time.perf_counter(), time.process_time()
        run()
        return time.perf_counter() - t, time.process_time() - c

    t, c = time.perf_counter(), time.process_time()
    run()
    first = (time.perf_counter() - t, time.process_time() - c)
    rows = [("first render (imports, empty caches)", first)]
    rows.append(("rerun, caches warm", timed(run)))
    expired = [run_expired() for _ in range(REPEATS)]
    rows.append(
        (
            "rerun after the store reads expired (chart specs cached)",
            (statistics.median(w for w, _ in expired), statistics.median(c for _, c in expired)),
        )
    )

    def change(widget: Callable[[], None]) -> tuple[float, float]:
        """One run after a widget change: reads cached, this view's chart specs new."""
        widget()
        t, c = time.perf_counter(), time.process_time()
        run()
        return time.perf_counter() - t, time.process_time() - c

    rows.append(
        (
            "method → exponential (15 configurations, 3 hyper-parameters), first view",
            change(lambda: at.selectbox(key="explorer_method").set_value("exponential")),
        )
    )
    rows.append(
        (
            "overlay → every seed of exponential (20 curves), first view",
            change(lambda: at.radio(key="explorer_overlay").set_value("seed")),
        )
    )
    rows.append(("rerun of that view, caches warm", timed(run)))
    print(f"Machine: {machine_info()}")
    print(f"Load average (1 min) at the end: {os.getloadavg()[0]:.1f}\n")
    print("| step | wall s | CPU s |")
    print("|---|---:|---:|")
    for label, (wall, cpu) in rows:
        print(f"| {label} | {wall:.2f} | {cpu:.2f} |")


if __name__ == "__main__":
    main()
