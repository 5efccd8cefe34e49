"""Server time of the Compare page's Statistics tab (the careful reviewer's view, issue 21) on
the shipped 20-seed reference study.

Usage:
    .venv/bin/python bench/statistics_tab_bench.py

Imports ``store/examples/reference-study.zip`` into a fresh temporary store and runs the Compare
page with the Statistics tab open through Streamlit's AppTest (server-side script time, no
browser): the first run (empty caches: the paired table, its hierarchical bootstrap of 1,000
replicates, the designs), 5 warm reruns, a change of metric (a new bootstrap), 5 warm reruns
on that metric, and a return to AMAE (cached). Prints a Markdown table with the machine.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from store.bundle import REFERENCE_STUDY, import_study  # noqa: E402
from store.db import init_schema  # noqa: E402

WARM_RERUNS = 5


def timed(action) -> float:
    """Seconds one page run takes."""
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    """Import the reference study, time the tab, print the table."""
    home = Path(tempfile.mkdtemp(prefix="stats-bench-"))
    init_schema(home / "softgrade.duckdb")
    import_study(REFERENCE_STUDY, path=home / "softgrade.duckdb")
    os.environ["SOFTGRADE_HOME"] = str(home)
    at = AppTest.from_file(str(ROOT / "pages" / "compare.py"), default_timeout=300)
    at.session_state["compare_tab"] = "Statistics"
    rows = [("first run, caches empty (AMAE, bootstrap included)", timed(at.run))]
    assert not at.exception, at.exception
    warm = [timed(at.run) for _ in range(WARM_RERUNS)]
    rows.append((f"warm rerun, median of {WARM_RERUNS}", statistics.median(warm)))
    rows.append(
        (
            "metric → QWK (new bootstrap)",
            timed(at.selectbox(key="compare_stats_metric").set_value("qwk").run),
        )
    )
    warm = [timed(at.run) for _ in range(WARM_RERUNS)]
    rows.append((f"warm rerun on QWK, median of {WARM_RERUNS}", statistics.median(warm)))
    rows.append(
        (
            "metric → AMAE again (cached)",
            timed(at.selectbox(key="compare_stats_metric").set_value("amae").run),
        )
    )
    assert not at.exception, at.exception
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print("| Statistics tab, reference study (20 seeds × 2 tasks × 5 methods) | seconds |")
    print("|---|---|")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
