"""How long a person waits for a page's heading: on a fresh server, and in each new browser
session of a warm one (issue 31).

Usage:
    .venv/bin/python bench/first_heading_bench.py [--home DIR] [--sessions 3]

Starts ``python -m jobs up`` (app and worker, one person on loopback: no sign-in) on a store
holding the bundled reference study (imported into a fresh temporary home unless ``--home``
names one), then, in headless Chromium: the first page at the root on the fresh server (what
the first visitor waits for), then ``--sessions`` new browser contexts (no cookie, no cache:
a new visitor) for each of Launch, Compare methods and Data, timing from the request to the
page's heading (the moment it enters the page, on the page's own clock: Playwright's wait
would add its polling delay). The fresh server's first page is timed without and with the
import warm-up (`SOFTGRADE_IMPORT_WARMUP=0` / default). Prints a Markdown table with the
machine, its load and the date.

The floor: a one-line Streamlit app (``st.title``) served the same way (the same
``jobs.services.serve_app`` command line as ``jobs up``'s app) and timed the same way in the
same run, its new sessions interleaved with the app's. It is what Streamlit and Chromium cost
on this machine at this load, so every figure reads against it whatever the machine's load
(the machine is shared). ``--rounds`` repeats the fresh-server figures on new servers. The
warm server's rows (first visits, new sessions) wait until its worker and slot have started.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jobs.cli.up_command import _app_command  # noqa: E402
from store.bundle import REFERENCE_STUDY  # noqa: E402
from tests.helpers.browser import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    _free_port,
    _wait_for_http,
    serve_app,
    stop_process_group,
)

# jobs.services.serve_app.WARMUP_ENV, spelled out: the bench also runs on checkouts from
# before the warm-up (for a before/after in one sitting).
WARMUP_ENV = "SOFTGRADE_IMPORT_WARMUP"
FLOOR_HEADING = "Floor"
# A worker registers before its slot process has imported torch (3-5 s of CPU): the warm
# server's rows wait this long more.
SLOT_SETTLE_S = 8.0
# Two pages, so that the floor is also timed at a page's own URL: at ``/page`` Streamlit's
# browser code first asks ``/page/_stcore/health`` (404) and retries at the root.
FLOOR_APP = f"""import streamlit as st


def floor() -> None:
    st.title("{FLOOR_HEADING}")


st.navigation([st.Page(floor, default=True), st.Page(floor, title="page", url_path="page")]).run()
"""

PAGES = {
    "Launch": ("/launch", "Launch a study"),
    "Compare methods": ("/compare", "Compare methods"),
    "Data": ("/data", "Data"),
}


# Notes the moment the heading enters the page, on the page's clock (from the navigation's
# start): Playwright's own wait polls, at up to 500 ms apart once the page is slow to show it.
NOTE_HEADING = """
window.__headingAt = null;
new MutationObserver(() => {
  if (window.__headingAt !== null) return;
  for (const h of document.querySelectorAll("h1")) {
    if (h.innerText.trim() === %s) { window.__headingAt = performance.now(); }
  }
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


def heading_s(browser: object, url: str, heading: str) -> float:
    """Seconds from a new context's request of ``url`` to its level-1 ``heading`` entering
    the page (`NOTE_HEADING`)."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(180_000)
    tab.add_init_script(NOTE_HEADING % json.dumps(heading))
    tab.goto(url)
    tab.get_by_role("heading", name=heading, exact=True, level=1).wait_for()
    seconds = tab.evaluate("window.__headingAt") / 1000
    context.close()
    return seconds


@contextlib.contextmanager
def serve_floor(folder: Path) -> Iterator[str]:
    """A one-line Streamlit app (`FLOOR_APP`) served by the command line `jobs up` uses for
    its app (`jobs.cli.up_command._app_command`), on a free port; yields its URL."""
    app = folder / "floor_app.py"
    app.write_text(FLOOR_APP)
    port = _free_port()
    options = argparse.Namespace(host="127.0.0.1", port=port, max_upload_mb=64)
    command = [str(app) if part.endswith("app.py") else part for part in _app_command(options)]
    log = (folder / "floor.log").open("w")
    proc = subprocess.Popen(
        command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        _wait_for_http(f"http://127.0.0.1:{port}/_stcore/health", proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process_group(proc)
        log.close()


def fresh_servers(browser: object, home: Path, rows: dict[str, list[float]]) -> None:
    """The first page on a fresh floor server, then on a fresh `jobs up` (Launch at /),
    without and with the import warm-up (`jobs.services.import_warmup`)."""
    with serve_floor(home) as floor_url:
        rows.setdefault("floor: fresh server, first page", []).append(
            heading_s(browser, floor_url + "/", FLOOR_HEADING)
        )
    for warm, label in (("0", "no warm-up"), ("1", "warm-up")):
        os.environ[WARMUP_ENV] = warm
        with serve_app(home) as url:
            rows.setdefault(f"fresh server, first page (Launch, at /), {label}", []).append(
                heading_s(browser, url + "/", "Launch a study")
            )
    os.environ.pop(WARMUP_ENV)


def wait_for_worker(home: Path, timeout_s: float = 180.0) -> float:
    """Seconds until a worker is alive on the store under ``home`` (`up` starts it)."""
    from store import jobs as store_jobs

    started = time.monotonic()
    while store_jobs.alive_workers(path=home / "softgrade.duckdb").empty:
        if time.monotonic() - started > timeout_s:
            raise TimeoutError(f"no worker alive within {timeout_s:.0f} s")
        time.sleep(0.5)
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="a SOFTGRADE_HOME to serve (default: fresh)")
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1, help="fresh servers of each kind")
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
    rows: dict[str, list[float]] = {}
    load_start = os.getloadavg()[0]
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for _ in range(args.rounds):
            fresh_servers(browser, home, rows)
        with serve_floor(home) as floor_url, serve_app(home) as url:
            # A warm server: its worker started (`up` starts it a few seconds after the app
            # answers) and its slot process with it, so no row below shares the 2 cores with
            # a worker's start, whichever checkout is timed.
            ready_s = wait_for_worker(home)
            print(f"worker registered {ready_s:.1f} s after the app answered", file=sys.stderr)
            time.sleep(SLOT_SETTLE_S)
            heading_s(browser, floor_url + "/", FLOOR_HEADING)  # warm once
            for name, (path, heading) in PAGES.items():  # each page's imports, once
                rows[f"first visit since start, {name}"] = [heading_s(browser, url + path, heading)]
            for _ in range(args.sessions):
                rows.setdefault("floor: new session", []).append(
                    heading_s(browser, floor_url + "/", FLOOR_HEADING)
                )
                rows.setdefault("floor: new session, at a page's URL", []).append(
                    heading_s(browser, floor_url + "/page", FLOOR_HEADING)
                )
                for name, (path, heading) in PAGES.items():
                    rows.setdefault(f"new session, {name}", []).append(
                        heading_s(browser, url + path, heading)
                    )
        browser.close()
    load_end = os.getloadavg()[0]
    print(
        f"{platform.node()} · {os.cpu_count()} CPUs · load {load_start:.1f} at start, "
        f"{load_end:.1f} at end · "
        f"{datetime.now():%Y-%m-%d %H:%M}\n"
    )
    print("| what | seconds to the heading in the page | median |\n| --- | --- | --- |")
    for what, times in rows.items():
        print(
            f"| {what} | {', '.join(f'{t:.2f}' for t in times)} | {statistics.median(times):.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
