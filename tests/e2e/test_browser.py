"""End to end in a real browser: a lab member launches a study and reads every page.

`python -m jobs up` serves the app and runs a worker on a fresh SOFTGRADE_HOME; headless
Chromium, driven by Playwright, fills the Launch form from the quick preset (shrunk to a
60-film phantom, one seed, one epoch: what every page reads is there after one), queues it,
follows it on the Jobs page until it succeeds, then opens every result page and its main
views, and grades an uploaded film.
Any Streamlit exception box or Python traceback on a page fails the test.

Needs Chromium (Debian's ``chromium``, found on PATH or at /usr/bin/chromium) and the
``playwright`` package (requirements-dev.txt); without either the test skips, saying which.
Playwright's own browser download is not used: nothing is fetched at run time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.browser import (
    CHROMIUM,
    FIRST_RESULTS_TIMEOUT_MS,
    STUDY_TIMEOUT_MS,
    assert_no_error,
    assert_only_softgrade_menu,
    open_page,
    queue_quick_study,
    wait_for_text,
)
from tests.helpers.films import phantom_film

pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)"
)

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium here: apt-get install chromium (.ci/run does)"
)


@pytest.fixture
def whole_film(tmp_path: Path) -> Path:
    """A whole phantom radiograph (not a crop) saved as a PNG file."""
    from PIL import Image

    path = tmp_path / "knee.png"
    Image.fromarray(phantom_film()).save(path)
    return path


def test_launch_a_study_follow_it_and_read_every_page(
    app_url: str, page: object, whole_film: Path
) -> None:
    tab = page
    open_page(tab, f"{app_url}/", "Launch a study")
    assert_no_error(tab, "Launch")
    assert_only_softgrade_menu(tab)  # the first session of a fresh server
    queue_quick_study(
        tab,
        "browser check",
        # The preset's patience (4) is left: one epoch ends the run before it matters.
        {"KL-graded films": 40, "Films": 60, "Phantom seed": 3, "Number of seeds": 1}
        | {"Max epochs": 1},
    )
    tab.get_by_text("Queued **browser check**".replace("**", "")).wait_for()
    assert_no_error(tab, "Launch after queueing")

    tab.get_by_role("link", name="Follow its progress on the Jobs page").click()
    tab.get_by_role("heading", name="Jobs", exact=True, level=1).wait_for()
    tab.get_by_text("succeeded").first.wait_for(timeout=STUDY_TIMEOUT_MS)
    assert_no_error(tab, "Jobs")

    tab.get_by_role("button", name="Compare methods").click()  # the job's result link
    tab.get_by_role("heading", name="Compare methods", exact=True, level=1).wait_for()
    tab.get_by_text("browser check ·").first.wait_for()  # opened on this job's study
    # The first result page a fresh server draws imports the statistics libraries: give it
    # longer, and say what the page showed if the table never came.
    wait_for_text(tab, "QWK", FIRST_RESULTS_TIMEOUT_MS)
    assert_no_error(tab, "Compare methods")

    open_page(tab, f"{app_url}/relationship", "KL × CPPD relationship")
    assert_no_error(tab, "KL × CPPD")

    open_page(tab, f"{app_url}/attention", "Attention (Grad-CAM)")
    tab.get_by_text("Nominal: graded CPPD").first.wait_for()
    tab.get_by_text("Co-occurrence stress test", exact=True).click()
    tab.get_by_text("Where the heat sits").wait_for()
    tab.get_by_text("Co-occurrence in test films", exact=True).click()
    tab.get_by_text("grouped by their").wait_for()
    assert_no_error(tab, "Attention")

    open_page(tab, f"{app_url}/data", "Data")
    assert_no_error(tab, "Data")

    # A visitor's own film: a whole phantom radiograph, uploaded as a PNG.
    open_page(tab, f"{app_url}/demo", "Grade a film")
    tab.get_by_text("KL grade").first.wait_for()
    tab.get_by_text("Upload a film", exact=True).click()
    tab.locator('input[type="file"]').set_input_files(whole_film)
    tab.get_by_text("the knee SoftGrade found").wait_for()
    tab.get_by_text("CPPD model looked").wait_for()  # 'Where the CPPD model looked'
    assert_no_error(tab, "Grade a film")
