"""End to end in a real browser: a kiosk shows Grade a film whatever URL a visitor opens.

``python -m jobs up --kiosk --study ID`` serves the finished tiny study's models. Headless
Chromium opens the kiosk's root and the URLs of other pages (a bookmark from the lab's own
server, a typed address): each lands on Grade a film at the root, with both grades shown,
no menu, and no "Page not found" note over it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.helpers.browser import (
    CHROMIUM,
    PAGE_TIMEOUT_MS,
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


@pytest.fixture(scope="module")
def app_url(finished_study) -> Iterator[str]:
    """`python -m jobs up --kiosk` on the finished tiny study, its method fixed: one kiosk
    for the module's tests, which only read it (a kiosk has no worker and grades uploads in
    memory), each in a fresh browser context."""
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
        # At the root; the query string holds only the view (which film is shown).
        root = re.compile(re.escape(f"{app_url}/") + r"(\?demo_[a-z_]+=[^/]*)?$")
        playwright_api.expect(tab).to_have_url(root)
        assert tab.get_by_text("Page not found").count() == 0, path
        assert tab.locator('[data-testid="stSidebarNav"]').count() == 0, path
        assert_no_error(tab, f"kiosk at {path}")


# The computed font size (px) of the grade, and the largest of every other visible text on
# the page (elements holding text of their own, outside the grade's element).
FONT_SIZES = r"""
() => {
  const visible = (el) => {
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    return box.width > 0 && box.height > 0 && style.visibility !== 'hidden'
      && style.display !== 'none';
  };
  const ownText = (el) => [...el.childNodes].some(
    (n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim().length > 0);
  const grades = [...document.querySelectorAll('[data-testid="stMetricValue"]')];
  const size = (el) => parseFloat(getComputedStyle(el).fontSize);
  const gradeSizes = grades.flatMap((g) => [g, ...g.querySelectorAll('*')])
    .filter((el) => ownText(el) && visible(el)).map(size);
  let other = 0, otherText = '';
  for (const el of document.querySelectorAll('body *')) {
    if (grades.some((g) => g.contains(el)) || !ownText(el) || !visible(el)) continue;
    if (el.closest('svg, canvas, style, script')) continue;
    if (size(el) > other) { other = size(el); otherText = el.textContent.trim().slice(0, 60); }
  }
  return {grade: Math.min(...gradeSizes), other: other, otherText: otherText};
}
"""
SCREENS = {"1920x1080": (1920, 1080), "1366x768": (1366, 768)}


def test_the_grade_is_the_kiosks_largest_text_and_noise_gets_no_knee(
    app_url: str, page: object, tmp_path
) -> None:
    from tests.helpers.films import films_without_a_knee, png_bytes

    tab = page
    for name, (width, height) in SCREENS.items():
        tab.set_viewport_size({"width": width, "height": height})
        tab.goto(f"{app_url}/")
        grade = tab.locator('[data-testid="stMetricValue"]').first
        playwright_api.expect(grade).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        tab.get_by_text("Where the CPPD model looked").first.wait_for()
        wait_until_idle(tab)
        tab.screenshot(path=str(tmp_path / f"kiosk-{name}.png"))
        sizes = tab.evaluate(FONT_SIZES)
        # Readable from the back of a room: far larger than any other text (the title too).
        assert sizes["grade"] >= 1.5 * sizes["other"], (name, sizes)
        assert_no_error(tab, f"kiosk at {name}")

    noise = tmp_path / "noise.png"
    noise.write_bytes(png_bytes(films_without_a_knee()["noise"]))
    tab.get_by_text("Upload a film", exact=True).click()
    tab.locator('input[type="file"]').set_input_files(str(noise))
    tab.get_by_text("No knee found — is this a knee radiograph?").wait_for()
    wait_until_idle(tab)  # the film's grades drawn before the upload are gone once it ends
    tab.screenshot(path=str(tmp_path / "kiosk-noise-1366x768.png"))
    assert tab.locator('[data-testid="stMetricValue"]').count() == 0
    assert (
        tab.get_by_text("KL 1").count() == 0
        and tab.get_by_text("the knee SoftGrade found").count() == 0
    )
    assert_no_error(tab, "kiosk after a noise upload")


# Each grade's box (its label "KL grade" and value), top and bottom in CSS pixels, and the
# window's height.
GRADE_BOXES = r"""
() => {
  const boxes = {};
  for (const metric of document.querySelectorAll('[data-testid="stMetric"]')) {
    const box = metric.getBoundingClientRect();
    boxes[metric.innerText.split('\n')[0].trim()] = [box.top, box.bottom];
  }
  return {boxes: boxes, fold: window.innerHeight};
}
"""


@pytest.mark.parametrize("screen", ["1366x768", "1920x1080"])
def test_both_grades_sit_above_the_fold(app_url: str, page: object, screen: str) -> None:
    """A room reads the grades first: KL's and CPPD's boxes fit on the first screen, unscrolled."""
    tab = page
    width, height = SCREENS[screen]
    tab.set_viewport_size({"width": width, "height": height})
    tab.goto(f"{app_url}/")
    tab.get_by_text("Where the CPPD model looked").first.wait_for(timeout=PAGE_TIMEOUT_MS)
    # The page sets the film in the address bar and reruns: the boxes are measured once
    # that rerun has ended and both are drawn, not while it replaces them.
    wait_until_idle(tab)
    metrics = tab.locator('[data-testid="stMetric"]')
    playwright_api.expect(metrics).to_have_count(2, timeout=PAGE_TIMEOUT_MS)
    seen = tab.evaluate(GRADE_BOXES)
    assert set(seen["boxes"]) == {"KL grade", "CPPD grade"}, seen
    for name, (top, bottom) in seen["boxes"].items():
        assert top >= 0 and bottom <= seen["fold"], (screen, name, seen)
    assert_no_error(tab, f"kiosk at {screen}")
