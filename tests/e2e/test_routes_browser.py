"""End to end in a real browser: routes that hold (issue 24).

A store holding the bundled reference study (its finished job is on the Jobs page) is served
by ``python -m jobs up`` in single-user mode (the server the read-only browser tests share).
With the CPU kept busy by a few bounded CPU-burning processes (as when a worker trains beside
the app), every "Results:" button of the reference job's card opens its page and the page
stays rendered. ``/launch`` typed in the address bar opens Launch without Streamlit's "Page
not found" box.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from urllib.parse import urlparse

import pytest

from tests.helpers.browser import (
    CHROMIUM,
    PAGE_TIMEOUT_MS,
    assert_no_error,
    open_page,
)

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)"
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium here: apt-get install chromium (.ci/run does)"
)

BURN_S = 240  # the burners end on their own, whatever happens to the test
BURNERS = 6  # on 2 cores: a load like a CPU worker training beside the app
STAYS_S = 6.0  # longer than the blank-page race took to show (1-3 s) and than 2 refreshes
# (Results button, heading of the page it opens)
RESULT_BUTTONS = (
    ("Compare methods", "Compare methods"),
    ("Search & learning curves", "Search & learning curves"),
    ("KL × CPPD", "KL × CPPD relationship"),
)


@contextlib.contextmanager
def busy_cpu(n: int = BURNERS, seconds: int = BURN_S) -> Iterator[None]:
    """``n`` processes that burn CPU for at most ``seconds`` (stopped early on exit)."""
    loop = f"import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass\n"
    burners = [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(n)]
    try:
        yield
    finally:
        for proc in burners:
            proc.kill()
            proc.wait()


@pytest.fixture
def tab(context: object) -> object:
    """A tab of a fresh browser context on the module's Chromium."""
    return context.new_page()


def stays_rendered(tab: object, heading: str, where: str) -> None:
    """The page called ``heading`` shows, and still shows ``STAYS_S`` seconds later."""
    title = tab.get_by_role("heading", name=heading, exact=True, level=1)
    playwright_api.expect(title).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    time.sleep(STAYS_S)
    playwright_api.expect(title).to_be_visible(timeout=1_000)
    main = tab.locator('[data-testid="stMain"]').inner_text()
    assert len(main.strip()) > 200, f"{where}: the main area is nearly empty: {main!r}"
    assert_no_error(tab, where)


def test_every_results_button_on_a_busy_machine_stays_on_a_rendered_page(
    reference_app_url: str, tab: object
) -> None:
    with busy_cpu():
        for button, heading in RESULT_BUTTONS:
            open_page(tab, f"{reference_app_url}/queue", "Jobs")
            tab.get_by_role("button", name=button).first.click()
            stays_rendered(tab, heading, f"Jobs → {button}, CPU busy")


def test_launch_typed_in_single_user_mode_opens_launch_without_page_not_found(
    reference_app_url: str, tab: object
) -> None:
    open_page(tab, f"{reference_app_url}/launch", "Launch a study")
    time.sleep(2.0)  # the "Page not found" box came after the page had drawn
    assert tab.get_by_text("Page not found").count() == 0
    assert urlparse(tab.url).path == "/launch"  # the page keeps its own URL
    assert_no_error(tab, "/launch typed")
