"""Browser end-to-end tests: `jobs up` served on a free port, and Playwright steps that wait
for Streamlit's reruns and fail saying what the page showed."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from jobs.cli.report_command import CHROMIUM_OFFLINE_ARGS, find_chromium

try:
    import playwright.sync_api as playwright_api
except ImportError:  # the e2e tests skip, saying so (tests/e2e/conftest.py)
    playwright_api = None

ROOT = Path(__file__).resolve().parents[2]  # the checkout
CHROMIUM = find_chromium()
CHROMIUM_ARGS = ["--no-sandbox", *CHROMIUM_OFFLINE_ARGS]
STUDY_TIMEOUT_MS = 600_000  # 10 runs of 2 epochs at 32 px: ~1 min on 2 idle cores, 3-5 min shared
PAGE_TIMEOUT_MS = 90_000  # a page's first load imports torch in the server
FIRST_RESULTS_TIMEOUT_MS = 240_000  # Compare's first metrics table on a loaded 2-core machine
VIEWPORT = {"width": 1400, "height": 1000}


def _free_port() -> int:
    """A TCP port nothing listens on now, for one `jobs up`."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_http(url: str, proc: subprocess.Popen, timeout_s: float = 60.0) -> None:
    """Wait until ``url`` answers 200; fail at once if `jobs up` exits first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"`jobs up` exited with {proc.returncode} before serving")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {timeout_s} s")


@contextlib.contextmanager
def serve_app(home: Path, *up_options: str) -> Iterator[str]:
    """`python -m jobs up [OPTIONS]` (app + worker, or a kiosk) on a free port and the store
    under ``home``; yields the app's URL and stops it on exit."""
    port = _free_port()
    env = {**os.environ, "SOFTGRADE_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    log = (home / "up.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jobs", "up", *up_options, "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        _wait_for_http(f"http://127.0.0.1:{port}/_stcore/health", proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process_group(proc)  # `up` stops the app and its worker
        log.close()


def fresh_context(browser: object, viewport: dict[str, int] = VIEWPORT) -> object:
    """A new browser context of ``browser``: another person's browser (no cookie, no
    session, no storage), its pages waiting up to `PAGE_TIMEOUT_MS`."""
    context = browser.new_context(viewport=viewport)
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    return context


class ReferenceHome(NamedTuple):
    """A home whose store holds the bundled reference study, and that study's id."""

    home: Path
    study_id: str


def reference_home(home: Path) -> ReferenceHome:
    """``home`` with a store holding the bundled reference study (20 seeds) and its finished
    job, imported through store/ in this process (what ``jobs import-study`` does, without
    starting an interpreter for it)."""
    from store.bundle import REFERENCE_STUDY, import_study
    from store.db import init_schema

    store = home / "softgrade.duckdb"
    init_schema(store)
    return ReferenceHome(home, import_study(REFERENCE_STUDY, path=store).study_id)


def copy_store_home(template: Path, home: Path) -> Path:
    """A copy of the home ``template`` (a closed store and nothing a server left there)
    at ``home``, for one server or test of its own."""
    shutil.copytree(template, home, ignore=shutil.ignore_patterns("up.log"))
    return home


#: How long a served app gets to end on SIGTERM before its whole process group is killed.
#: No browser test checks a graceful stop (tests/jobs/worker/test_worker_process.py does);
#: what remains after the servers' own stop is the teardown of interpreters holding torch
#: and the statistics libraries (Streamlit's final garbage collection, the worker waiting
#: 10 s on its slot process): 11-17 s per server on a loaded 2-core machine, of CPU the
#: other tests need.
STOP_GRACE_S = 2.0


def stop_process_group(proc: subprocess.Popen, wait_s: float = STOP_GRACE_S) -> None:
    """SIGTERM to ``proc`` (started with ``start_new_session``), then SIGKILL to its whole
    process group (its children too) if ``proc`` is still there after ``wait_s``."""
    proc.send_signal(signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=wait_s)
    # Also once `up` has ended: a child it left behind dies with the group.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


# Records the label of every sidebar navigation link ever drawn (a link's last line; its
# text starts with its icon's name), so a menu shown only while the first page loads
# (Streamlit's legacy listing of pages/) is caught too.
RECORD_NAV_LINKS = r"""
window.__navSeen = new Set();
new MutationObserver(() => {
  document.querySelectorAll('[data-testid="stSidebarNav"] a')
    .forEach((a) => window.__navSeen.add(a.innerText.trim().split("\n").pop().trim()));
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


def assert_only_softgrade_menu(tab: object) -> None:
    """The sidebar only ever listed SoftGrade's pages, and there is no "Deploy" button."""
    seen = set(tab.evaluate("[...window.__navSeen]"))
    assert {"Launch", "Jobs", "Compare methods"} <= seen, seen
    assert not seen & {"app", "_ui", "_models", "launch", "queue", "compare"}, seen
    assert tab.get_by_role("button", name="Deploy").count() == 0


def assert_no_error(tab: object, where: str) -> None:
    """No Streamlit exception box and no Python traceback anywhere on the page."""
    assert tab.locator('[data-testid="stException"]').count() == 0, where
    assert "Traceback (most recent call last)" not in tab.inner_text("body"), where


def open_page(tab: object, url: str, heading: str) -> None:
    """Open ``url`` and wait until its page heading shows and the network is idle."""
    tab.goto(url)
    tab.get_by_role("heading", name=heading, exact=True, level=1).wait_for()
    tab.wait_for_load_state("networkidle")


def wait_for_text(tab: object, text: str, timeout_ms: int = PAGE_TIMEOUT_MS) -> None:
    """Wait until ``text`` is visible; on a timeout, fail with what the page showed instead."""
    try:
        tab.get_by_text(text).first.wait_for(timeout=timeout_ms)
    except playwright_api.TimeoutError:
        shown = tab.inner_text("body")[-3000:]
        pytest.fail(f"{text!r} not shown within {timeout_ms / 1000:.0f} s; the page ends:\n{shown}")


def wait_until_idle(tab: object, timeout_ms: int = PAGE_TIMEOUT_MS) -> None:
    """Wait until Streamlit's "Running..." status widget is gone (no rerun in flight)."""
    running = tab.locator('[data-testid="stStatusWidget"]')
    playwright_api.expect(running).to_have_count(0, timeout=timeout_ms)


def open_tab(tab: object, name: str, attempts: int = 4) -> None:
    """Select the tab called ``name`` and wait until the rerun it starts has ended.

    Tabs that rerun the page on a change can snap back to the old tab when a click lands
    while an earlier rerun is still drawing; click again until the tab stays selected.
    """
    button = tab.get_by_role("tab", name=name)
    for _ in range(attempts):
        wait_until_idle(tab)
        button.click()
        tab.wait_for_timeout(500)  # the status widget shows a moment after a rerun starts
        wait_until_idle(tab)
        if button.get_attribute("aria-selected") == "true":
            return
    playwright_api.expect(button).to_have_attribute("aria-selected", "true", timeout=1000)


def set_number(tab: object, label: str, value: int, attempts: int = 3) -> None:
    """Type ``value`` into the number box called ``label`` and wait until it holds it."""
    type_until_kept(tab, tab.get_by_label(label, exact=True), str(value), attempts)


def type_until_kept(tab: object, box: object, value: str, attempts: int = 3) -> None:
    """Type ``value`` into ``box``, press Enter and wait until the box holds it.

    A value typed while an earlier rerun is still drawing can be lost when that rerun
    redraws the box; type it again until the box keeps it.
    """
    for _ in range(attempts):
        wait_until_idle(tab)
        # Right after a rerun (a preset click) Streamlit may briefly draw the old and the
        # new widget together; wait until one is left before typing into it.
        playwright_api.expect(box).to_have_count(1, timeout=PAGE_TIMEOUT_MS)
        box.fill(value)
        box.press("Enter")
        tab.wait_for_timeout(400)  # the status widget shows a moment after a rerun starts
        wait_until_idle(tab)
        if box.input_value() == value:
            return
    playwright_api.expect(box).to_have_value(value, timeout=1000)


def click_enabled_button(tab: object, name: str) -> None:
    """Click the button called ``name``; if it stays disabled, fail with what the page said."""
    button = tab.get_by_role("button", name=name)
    try:
        playwright_api.expect(button).to_be_enabled(timeout=PAGE_TIMEOUT_MS)
    except AssertionError:
        shown = tab.inner_text("body")[-3000:]
        pytest.fail(f"{name!r} stayed disabled; the page ends:\n{shown}")
    button.click()


def queue_quick_study(tab: object, name: str, numbers: dict[str, int]) -> None:
    """From the Launch page: the quick preset, its number inputs set (label -> value, in
    order), named ``name``, queued."""
    tab.get_by_role("button", name="Quick look").click()
    tab.wait_for_timeout(500)
    for label, value in numbers.items():
        set_number(tab, label, value)
    type_until_kept(tab, tab.get_by_role("textbox", name="Study name"), name)
    click_enabled_button(tab, "Queue this study")
