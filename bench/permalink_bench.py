"""A permalink's time to its view: Compare -> Statistics of the reference study, in Chromium.

``python -m jobs up`` serves a fresh home holding the bundled reference study and a viewer
account (as tests/e2e/test_permalink_browser.py does). The link names a non-default task,
metric and correction. Timed, from ``goto`` until the Statistics tab is selected with the
linked metric and Streamlit's run has ended (no "Running..." left):

- ``first``: the first open after the server started (a fresh browser context: the sign-in
  form, filled by Playwright, then the view; the server imports torch and reads the store).
- ``fresh``: later opens in a fresh browser context (no cookie): sign-in form, then the view.
- ``signed-in``: a new tab of a signed-in browser (the session cookie): straight to the view.

    python bench/permalink_bench.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import expect, sync_playwright  # noqa: E402

from store import runs as store_runs  # noqa: E402
from store.bundle import REFERENCE_STUDY  # noqa: E402
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, serve_app, wait_until_idle  # noqa: E402

PASSWORD = "knees and grades 42"
VIEWER = "vi"
TIMEOUT_MS = 300_000


def prepare(home: Path) -> str:
    """The reference study and a viewer in ``home``'s store; returns the study's id."""
    password_file = home / "password.txt"
    password_file.write_text(PASSWORD + "\n")
    add = ["users", "add", VIEWER, "--role", "viewer", "--password-file", str(password_file)]
    env = {**os.environ, "SOFTGRADE_HOME": str(home)}
    for command in (["import-study", str(REFERENCE_STUDY)], add):
        subprocess.run([sys.executable, "-m", "jobs", *command], cwd=ROOT, env=env, check=True)
    studies = store_runs.list_studies(path=home / "softgrade.duckdb")
    return str(studies["study_id"].iloc[0])


def view_shown(tab: object) -> None:
    """Compare -> Statistics on the link's metric, and the page's run over (the task and
    correction sit in the closed "as in the paper" expander; the browser test opens it)."""
    statistics_tab = tab.get_by_role("tab", name="Statistics")
    expect(statistics_tab).to_have_attribute("aria-selected", "true", timeout=TIMEOUT_MS)
    box = tab.locator('[data-testid="stSelectbox"]:visible').filter(
        has=tab.get_by_text("Metric", exact=True)
    )
    expect(box.get_by_role("combobox")).to_have_value("QWK (higher is better)", timeout=TIMEOUT_MS)
    wait_until_idle(tab, TIMEOUT_MS)


def open_signing_in(browser: object, link: str) -> tuple[float, object]:
    """Seconds from opening ``link`` in a fresh context, through the sign-in form, to the view."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    started = time.perf_counter()
    tab.goto(link)
    tab.get_by_label("Name", exact=True).fill(VIEWER)
    tab.get_by_label("Password", exact=True).fill(PASSWORD)
    tab.get_by_role("button", name="Sign in").click()
    view_shown(tab)
    return time.perf_counter() - started, context


def open_signed_in(context: object, link: str) -> float:
    """Seconds from opening ``link`` in a new tab of a signed-in context to the view."""
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    started = time.perf_counter()
    tab.goto(link)
    view_shown(tab)
    seconds = time.perf_counter() - started
    tab.close()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        study_id = prepare(home)
        view = {
            "compare_studies": study_id,
            "compare_tab": "Statistics",
            "compare_stats_task": "KL",
            "compare_stats_metric": "qwk",
            "compare_correction": "bonferroni",
        }
        with serve_app(home) as url, sync_playwright() as p:
            link = f"{url}/compare?{urlencode(view)}"
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            first, context = open_signing_in(browser, link)
            fresh = [open_signing_in(browser, link)[0] for _ in range(args.repeats)]
            signed_in = [open_signed_in(context, link) for _ in range(args.repeats)]
            browser.close()
    print(f"load average at the end: {os.getloadavg()}")
    print(f"first (server just started, with sign-in): {first:.2f} s")
    for name, times in (("fresh context, with sign-in", fresh), ("signed-in tab", signed_in)):
        print(
            f"{name}: median {statistics.median(times):.2f} s, "
            f"min {min(times):.2f} s, max {max(times):.2f} s over {len(times)}"
        )


if __name__ == "__main__":
    main()
