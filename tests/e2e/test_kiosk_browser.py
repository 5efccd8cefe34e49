"""End to end in a real browser: a kiosk shows Grade a film whatever URL a visitor opens.

``python -m jobs up --kiosk --study ID`` serves the finished tiny study's models. Headless
Chromium opens the kiosk's root and the URLs of other pages (a bookmark from the lab's own
server, a typed address): each lands on Grade a film at the root, with both grades shown,
no menu, and no "Page not found" note over it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.browser import (
    CHROMIUM,
    PAGE_TIMEOUT_MS,
    assert_no_error,
    serve_app,
)

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)"
)

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium here: apt-get install chromium (.ci/run does)"
)


@pytest.fixture
def app_url(finished_study) -> Iterator[str]:
    """`python -m jobs up --kiosk` on the finished tiny study, its method fixed."""
    kiosk = ("--kiosk", "--study", finished_study.study_id, "--method", "nominal")
    with serve_app(finished_study.home, *kiosk) as url:
        yield url


def test_every_page_url_on_a_kiosk_opens_grade_a_film_at_the_root(
    app_url: str,
    page: object,
) -> None:
    tab = page
    for path in ("/", "/launch", "/queue", "/accounts"):
        tab.goto(f"{app_url}{path}")
        heading = tab.get_by_role("heading", name="Grade a film", exact=True, level=1)
        playwright_api.expect(heading).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        grade = tab.get_by_text("KL grade").first
        playwright_api.expect(grade).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        playwright_api.expect(tab).to_have_url(f"{app_url}/")
        assert tab.get_by_text("Page not found").count() == 0, path
        assert tab.locator('[data-testid="stSidebarNav"]').count() == 0, path
        assert_no_error(tab, f"kiosk at {path}")
