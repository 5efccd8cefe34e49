"""How long a person waits for a page's heading: on a fresh server, and in each new browser
session of a warm one (issue 31).

Usage:
    .venv/bin/python bench/first_heading_bench.py [--home DIR] [--sessions 3]

Starts ``python -m jobs up`` (app and worker, one person on loopback: no sign-in) on a store
holding the bundled reference study (imported into a fresh temporary home unless ``--home``
names one), then, in headless Chromium: the first page at the root on the fresh server (what
the first visitor waits for), then ``--sessions`` new browser contexts (no cookie, no cache:
a new visitor) for each of Launch, Compare methods and Data, timing from the request to the
page's heading. Prints a Markdown table with the machine, its load and the date.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from store.bundle import REFERENCE_STUDY  # noqa: E402
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, serve_app  # noqa: E402

PAGES = {
    "Launch": ("/launch", "Launch a study"),
    "Compare methods": ("/compare", "Compare methods"),
    "Data": ("/data", "Data"),
}


def heading_s(browser: object, url: str, heading: str) -> float:
    """Seconds from a new context's request of ``url`` to its level-1 ``heading``."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(180_000)
    started = time.perf_counter()
    tab.goto(url)
    tab.get_by_role("heading", name=heading, exact=True, level=1).wait_for()
    seconds = time.perf_counter() - started
    context.close()
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="a SOFTGRADE_HOME to serve (default: fresh)")
    parser.add_argument("--sessions", type=int, default=3)
    args = parser.parse_args()
    import playwright.sync_api as playwright_api

    home = args.home or Path(tempfile.mkdtemp(prefix="softgrade-bench-"))
    if not (home / "softgrade.duckdb").exists():
        subprocess.run(
            [sys.executable, "-m", "jobs", "import-study", str(REFERENCE_STUDY)],
            cwd=ROOT,
            env={**os.environ, "SOFTGRADE_HOME": str(home)},
            check=True,
            capture_output=True,
        )
    rows = []
    with serve_app(home) as url, playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        load = os.getloadavg()[0]
        rows.append(
            (
                "fresh server, first page (Launch, at /)",
                [heading_s(browser, url + "/", "Launch a study")],
            )
        )
        for name, (path, heading) in PAGES.items():
            rows.append(
                (
                    f"new session, {name}",
                    [heading_s(browser, url + path, heading) for _ in range(args.sessions)],
                )
            )
        browser.close()
    print(
        f"{platform.node()} · {os.cpu_count()} CPUs · load {load:.1f} at start · "
        f"{datetime.now():%Y-%m-%d %H:%M}\n"
    )
    print("| what | seconds to the heading | median |\n| --- | --- | --- |")
    for what, times in rows:
        print(
            f"| {what} | {', '.join(f'{t:.2f}' for t in times)} | {statistics.median(times):.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
