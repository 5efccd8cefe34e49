"""End to end in a real browser: the address bar and "Copy link to this view" carry every
choice on Search & learning curves, however fast the clicks come (issue 31).

``python -m jobs up`` serves a store holding the bundled reference study (20 seeds) to one
person on loopback (no sign-in): the server the read-only browser tests share. Headless
Chromium picks a seed and, 0.3 s later, before that rerun's URL has reached the browser, the
other overlay (a choice inside the page's live section, an ``st.fragment``). Each time, the
address bar must come to name both and keep the seed in its picker; the copied link must
name both; and a fresh browser context opening that link must see that seed and that
overlay. Before the fix the old seed came back
to the address bar (then to the picker) and the link dropped the overlay.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from tests.helpers.browser import (
    CHROMIUM,
    PAGE_TIMEOUT_MS,
    assert_no_error,
    fresh_context,
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
    reference_app_url: str, browser: object
) -> None:
    app_url = reference_app_url
    viewport = {"width": 1400, "height": 900}
    person = fresh_context(browser, viewport)
    tab = person.new_page()
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
    someone_else = fresh_context(browser, viewport)
    reader = someone_else.new_page()
    reader.goto(copied_link(tab))
    reader.get_by_role("heading", name="Learning curves").wait_for()
    settle(reader)
    playwright_api.expect(seed_box(reader)).to_have_value("8")
    playwright_api.expect(reader.get_by_role("radio", name=OVERLAYS["seed"])).to_be_checked()
    assert_no_error(reader, "the link, opened afresh")
    someone_else.close()
    person.close()
