"""End to end in a real browser: a fresh install opens the bundled reference study in one click.

``python -m jobs up`` serves a fresh, empty SOFTGRADE_HOME (the fixtures of
``test_browser.py``). Headless Chromium, driven by Playwright, opens Compare methods, which
has nothing to show and offers the bundled reference study (``store/examples/reference-study.zip``);
one click loads it, and the page shows its metrics table (every method, all its seeds), its
distribution charts and its statistics, with the study labelled as the bundled reference in
the picker; the search explorer lists it with the same label. Any Streamlit exception box or
Python traceback on a page fails the test.
"""

from __future__ import annotations

import re

import pytest

from engine.methods import paper_methods
from pages.present.tables import REFERENCE_MARK, method_title
from pages.widgets.pickers import REFERENCE_BUTTON
from store.bundle import REFERENCE_STUDY, read_card
from tests.helpers.browser import (
    CHROMIUM,
    PAGE_TIMEOUT_MS,
    assert_no_error,
    open_page,
    open_tab,
)

METHODS = paper_methods()

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)"
)

# The reference study ships in the repo (store/examples/): its absence is a failure, not a skip.
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium here: apt-get install chromium (.ci/run does)"
)
IMPORT_TIMEOUT_MS = 300_000  # ~100,000 predictions and ~10,000 epochs into a fresh store
CHARTS = '[data-testid="stVegaLiteChart"]:visible'


def shows(locator: object, timeout_ms: int = PAGE_TIMEOUT_MS) -> None:
    """Wait until ``locator`` is visible (a page's first load imports torch in the server)."""
    playwright_api.expect(locator).to_be_visible(timeout=timeout_ms)


def assert_method_chips_whole(tab: object) -> None:
    """Every method's chip in Compare's Methods picker shows whole: the chips' row neither
    scrolls nor ends past its box (at 1400 px a half-width picker cut "Exponential" off
    under a fade)."""
    picker = tab.locator('[data-testid="stMultiSelect"]').filter(
        has=tab.get_by_text("Methods", exact=True)
    )
    chips = picker.locator('[data-testid="stMultiSelectTagsContainer"]')
    widths = chips.evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert widths[0] <= widths[1], f"the method chips need {widths[0]} px of {widths[1]}"
    right = chips.bounding_box()["x"] + chips.bounding_box()["width"]
    for method in METHODS:
        box = picker.get_by_text(method_title(method), exact=True).bounding_box()
        assert box["x"] + box["width"] <= right, f"{method_title(method)} ends past {right}: {box}"


def test_an_empty_compare_page_loads_the_bundled_reference_study_in_one_click(
    app_url: str,
    page: object,
) -> None:
    tab = page
    card = read_card(REFERENCE_STUDY)
    label = f"{REFERENCE_MARK}{card['study']['name']}"
    n_seeds = len(card["seeds"])

    open_page(tab, f"{app_url}/compare", "Compare methods")
    shows(tab.get_by_text("No study has finished runs yet"))
    assert_no_error(tab, "Compare methods, empty")
    tab.get_by_role("button", name=REFERENCE_BUTTON).click()

    # The page reruns on the imported study, picked and labelled as the bundled reference.
    shows(tab.get_by_text(label).first, IMPORT_TIMEOUT_MS)
    # The offer is gone once the rerun ends (until then Streamlit keeps the old elements).
    offer = tab.get_by_role("button", name=REFERENCE_BUTTON)
    playwright_api.expect(offer).to_have_count(0, timeout=PAGE_TIMEOUT_MS)
    assert tab.get_by_text("No study has finished runs yet").count() == 0
    assert_no_error(tab, "Compare methods, reference loaded")

    # Metrics table: every method, each over all the reference's seeds.
    table = tab.locator('[data-testid="stTable"]').first
    shows(table)
    text = table.inner_text()
    assert "QWK" in text and "AMAE" in text, text
    assert all(method_title(method) in text for method in METHODS), text
    shows(tab.get_by_text(f"{n_seeds} seed(s) per task and method").first)
    assert_method_chips_whole(tab)

    open_tab(tab, "Distributions over seeds")
    shows(tab.locator(CHARTS).nth(1))  # one violin-and-box chart per task
    open_tab(tab, "Statistics")
    # The careful reviewer's analysis by default; the paper's one click away.
    shows(tab.get_by_text("The careful reviewer's analysis").first)
    shows(tab.get_by_text("Primary endpoint").first)
    tab.get_by_text("Statistics as in the paper").first.click()
    shows(tab.get_by_text("Two-way ANOVA, method × task (Table 5)").first)
    shows(tab.get_by_text("Tukey HSD homogeneous subsets").first)
    assert_no_error(tab, "Compare methods, reference tabs")

    # Another result page lists it under the same label and draws its learning curves.
    open_page(tab, f"{app_url}/explorer", "Search & learning curves")
    picker = tab.get_by_role("combobox", name="Study")  # a select box: the label is its value
    playwright_api.expect(picker).to_have_value(
        re.compile(f"^{re.escape(label)} · "), timeout=PAGE_TIMEOUT_MS
    )
    shows(tab.get_by_role("heading", name="Learning curves", exact=True))
    shows(tab.locator(CHARTS).first)
    assert_no_error(tab, "Search & learning curves, reference")
