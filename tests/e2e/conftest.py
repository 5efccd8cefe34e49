"""Fixtures of the browser tests: the app served on a fresh store, a Chromium tab on it.

Every test here is marked ``e2e`` (tests/conftest.py); each skips, saying why, where
Playwright or Chromium is missing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    PAGE_TIMEOUT_MS,
    RECORD_NAV_LINKS,
    serve_app,
)


@pytest.fixture
def app_url(tmp_path: Path) -> Iterator[str]:
    """`python -m jobs up` (app + worker) on a free port and a fresh store."""
    with serve_app(tmp_path) as url:
        yield url


@pytest.fixture
def page(app_url: str) -> Iterator[object]:
    playwright_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)"
    )
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        tab.set_default_timeout(PAGE_TIMEOUT_MS)
        tab.add_init_script(RECORD_NAV_LINKS)
        yield tab
        browser.close()
