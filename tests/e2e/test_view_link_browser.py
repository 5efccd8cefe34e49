"""End to end in a real browser: the address bar and "Copy link to this view" carry every
choice on Search & learning curves, however fast the clicks come (issue 31).

A fresh SOFTGRADE_HOME gets the bundled reference study (20 seeds); ``python -m jobs up``
serves it to one person on loopback (no sign-in). Headless Chromium picks a seed and, 0.3 s
later, before that rerun's URL has reached the browser, the other overlay (a choice inside
the page's live section, an ``st.fragment``). Each time, the address bar must come to name
both and keep the seed in its picker; the copied link must name both; and a fresh browser
opening that link must see that seed and that overlay. Before the fix the old seed came back
to the address bar (then to the picker) and the link dropped the overlay.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from store.bundle import REFERENCE_STUDY
from tests.helpers.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    PAGE_TIMEOUT_MS,
    ROOT,
    assert_no_error,
    serve_app,
    wait_until_idle,
)

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)"
)

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium here: apt-get install chromium (.ci/run does)"
)
OVERLAYS = {"seed": "Every seed, one method", "method": "Every method, one seed"}
CLICK_GAP_MS = 300  # the second click lands while the first one's rerun is still running
SETTLE_MS = 60_000  # a rerun of this page takes ~5 s on a loaded 2-core machine


@pytest.fixture
def app_url(tmp_path: Path) -> Iterator[str]:
    """`python -m jobs up` on a store holding the reference study, one person, no sign-in."""
    done = subprocess.run(
        [sys.executable, "-m", "jobs", "import-study", str(REFERENCE_STUDY)],
        cwd=ROOT,
        env={**os.environ, "SOFTGRADE_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    with serve_app(tmp_path) as url:
        yield url


def seed_box(tab: object) -> object:
    """The Seed select box's combobox."""
    box = tab.locator('[data-testid="stSelectbox"]').filter(has=tab.get_by_text("Seed", exact=True))
    return box.get_by_role("combobox")


def address_bar_names(tab: object, seed: str, overlay: str) -> None:
    """Wait until the address bar names ``seed`` and ``overlay``; fail naming what it says."""
    try:
        tab.wait_for_function(
            """([seed, overlay]) => {
                const q = new URLSearchParams(window.location.search);
                return q.get("explorer_seed") === seed && q.get("explorer_overlay") === overlay;
            }""",
            arg=[seed, overlay],
            timeout=SETTLE_MS,
        )
    except playwright_api.TimeoutError:
        pytest.fail(f"the address bar never named seed {seed} and overlay {overlay}: {tab.url}")


def settle(tab: object, quiet_ms: int = 3000) -> None:
    """Wait until no rerun has run for ``quiet_ms``: a click's page rerun can start a moment
    after the one before it ends, so one idle moment is not the end of the clicks' work."""
    running = tab.locator('[data-testid="stStatusWidget"]')
    for _ in range(SETTLE_MS // quiet_ms):
        wait_until_idle(tab, SETTLE_MS)
        tab.wait_for_timeout(quiet_ms)
        if running.count() == 0:
            return
    pytest.fail(f"the page kept rerunning for {SETTLE_MS / 1000:.0f} s")


def copied_link(tab: object) -> str:
    """The URL in the "Copy link to this view" control (closed again after reading)."""
    tab.get_by_text("Copy link to this view").click()
    code = tab.locator('[data-testid="stCode"]:visible code').first
    playwright_api.expect(code).to_be_visible()
    link = code.inner_text().strip()
    tab.keyboard.press("Escape")
    return link


def test_seed_then_overlay_clicked_fast_both_reach_the_address_bar_and_the_link(
    app_url: str,
) -> None:
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        viewport = {"width": 1400, "height": 900}
        tab = browser.new_page(viewport=viewport)
        tab.set_default_timeout(PAGE_TIMEOUT_MS)
        playwright_api.expect.set_options(timeout=PAGE_TIMEOUT_MS)
        tab.goto(f"{app_url}/explorer")
        tab.get_by_role("heading", name="Learning curves").wait_for()
        wait_until_idle(tab)
        for seed, overlay in (("3", "seed"), ("5", "method"), ("8", "seed")):
            seed_box(tab).click()
            tab.get_by_role("option", name=seed, exact=True).click()
            tab.wait_for_timeout(CLICK_GAP_MS)
            tab.get_by_text(OVERLAYS[overlay], exact=True).click()
            address_bar_names(tab, seed, overlay)
            settle(tab)
            address_bar_names(tab, seed, overlay)  # no later rerun took either back
            playwright_api.expect(seed_box(tab)).to_have_value(seed)
            playwright_api.expect(tab.get_by_role("radio", name=OVERLAYS[overlay])).to_be_checked()
            query = parse_qs(urlsplit(copied_link(tab)).query)
            assert query["explorer_seed"] == [seed], query
            assert query["explorer_overlay"] == [overlay], query
        assert_no_error(tab, "Search & learning curves after fast clicks")

        # Someone else opens the last link: that seed and that overlay.
        reader = browser.new_context(viewport=viewport).new_page()
        reader.set_default_timeout(PAGE_TIMEOUT_MS)
        reader.goto(copied_link(tab))
        reader.get_by_role("heading", name="Learning curves").wait_for()
        settle(reader)
        playwright_api.expect(seed_box(reader)).to_have_value("8")
        playwright_api.expect(reader.get_by_role("radio", name=OVERLAYS["seed"])).to_be_checked()
        assert_no_error(reader, "the link, opened afresh")
        browser.close()
