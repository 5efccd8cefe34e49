"""`python -m jobs report` on the bundled 20-seed reference study writes one HTML file that
Chromium opens with the network blocked: every request that is not the file itself is
aborted (and recorded), none is attempted, and every section is there by its heading; and
Compare's Report button, in the served app (the server the read-only browser tests share),
downloads that report."""

from __future__ import annotations

from pathlib import Path

import pytest

from pages.present.report import SECTIONS
from tests.helpers.browser import (
    CHROMIUM,
    PAGE_TIMEOUT_MS,
    ReferenceHome,
    assert_no_error,
    copy_store_home,
    open_page,
    wait_until_idle,
)
from tests.helpers.studies import run_jobs_cli

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)"
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium here: apt-get install chromium (.ci/run does)"
)
REPORT_TIMEOUT_MS = 180_000  # the report is built when clicked: ~11 CPU s, more under load


@pytest.fixture(scope="module")
def reference_report(
    reference_template: ReferenceHome, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path]:
    """`python -m jobs report` on a copy of the reference study's home: its study and file."""
    home = copy_store_home(reference_template.home, tmp_path_factory.mktemp("report") / "home")
    out = home.parent / "report.html"
    done = run_jobs_cli(home, "report", reference_template.study_id, "-o", str(out))
    assert done.returncode == 0, done.stderr
    return reference_template.study_id, out


def test_the_reference_report_opens_offline_with_every_section(
    reference_report: tuple[str, Path], browser: object
) -> None:
    study, out = reference_report
    url = out.as_uri()
    attempted: list[str] = []

    def only_the_file(route) -> None:
        if route.request.url == url:
            route.continue_()
        else:
            attempted.append(route.request.url)
            route.abort()

    context = browser.new_context(offline=True)
    context.route("**/*", only_the_file)
    tab = context.new_page()
    tab.set_default_timeout(PAGE_TIMEOUT_MS)
    tab.goto(url)
    for title in SECTIONS.values():
        heading = tab.get_by_role("heading", name=title, exact=True, level=2)
        assert heading.count() == 1, f"no section {title!r}"
    assert tab.locator("svg.marks").count() >= 10  # charts drawn inline
    assert study in tab.locator("#studies").inner_text()
    assert "20 seeds" in tab.locator("#methods").inner_text()
    context.close()
    assert attempted == []


def test_compares_report_button_downloads_the_same_report(
    reference_app_url: str,
    reference_template: ReferenceHome,
    context: object,
    tmp_path: Path,
) -> None:
    tab = context.new_page()
    open_page(tab, f"{reference_app_url}/compare", "Compare methods")
    button = tab.get_by_role("button", name="Report")
    playwright_api.expect(button).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    # The button builds its file on the server when clicked. Once, in a full suite, no
    # download came in 180 s (alone it takes ~25 s); the likeliest cause is a click
    # landing while the page's run was still in flight, so click once it has ended.
    wait_until_idle(tab)
    with tab.expect_download(timeout=REPORT_TIMEOUT_MS) as download:
        button.click()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert_no_error(tab, "Compare methods after Report")
    assert saved.name == f"softgrade_report_{reference_template.study_id}.html"
    text = saved.read_text(encoding="utf-8")
    for key in SECTIONS:
        assert f'<section id="{key}">' in text
