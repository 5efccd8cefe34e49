"""End to end in a real browser: a member launches a study, a viewer reads it but cannot launch.

Accounts are added with the CLI (``python -m jobs users add``) to a fresh SOFTGRADE_HOME
before ``python -m jobs up`` serves it (the fixtures of ``test_browser.py``), so the app asks
everyone to sign in. Headless Chromium, driven by Playwright, signs in as a member, queues a
tiny study (one seed, one epoch, 32 px) and follows it on the Jobs page until it succeeds;
signs out; signs in as a viewer, whose menu lists result pages but no Launch or Jobs, reads
the member's study on Compare methods, and opens the Launch page by its URL: the page says
it is not open to a viewer and shows no form. Any Streamlit exception box or Python
traceback on a page fails the test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.browser import (
    CHROMIUM,
    PAGE_TIMEOUT_MS,
    ROOT,
    STUDY_TIMEOUT_MS,
    assert_no_error,
    queue_quick_study,
    serve_app,
)

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)"
)

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium here: apt-get install chromium (.ci/run does)"
)
PASSWORD = "knees and grades 42"
MEMBER, VIEWER = "mo", "vi"
STUDY = "member study"


def shows(locator: object, timeout_ms: int = PAGE_TIMEOUT_MS) -> None:
    """Wait until ``locator`` is visible (Playwright's own wait: a page's first load imports
    torch in the server, far beyond expect's 5 s default)."""
    playwright_api.expect(locator).to_be_visible(timeout=timeout_ms)


def _add_account(home: Path, name: str, role: str, password_file: Path) -> None:
    """``python -m jobs users add NAME --role ROLE --password-file F`` on ``home``'s store."""
    env = {**os.environ, "SOFTGRADE_HOME": str(home)}
    command = [sys.executable, "-m", "jobs", "users", "add", name, "--role", role]
    done = subprocess.run(
        [*command, "--password-file", str(password_file)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"added {name} ({role})" in done.stdout


@pytest.fixture
def app_url(tmp_path: Path) -> Iterator[str]:
    """`python -m jobs up` on a fresh store that has a member and a viewer account."""
    password_file = tmp_path / "password.txt"
    password_file.write_text(PASSWORD + "\n")
    _add_account(tmp_path, MEMBER, "member", password_file)
    _add_account(tmp_path, VIEWER, "viewer", password_file)
    with serve_app(tmp_path) as url:
        yield url


def sign_in(tab: object, name: str, role: str) -> None:
    """Fill the sign-in form and wait for the sidebar to name the account."""
    shows(tab.get_by_role("heading", name="Sign in to SoftGrade", level=1))
    tab.get_by_label("Name", exact=True).fill(name)
    tab.get_by_label("Password", exact=True).fill(PASSWORD)
    tab.get_by_role("button", name="Sign in").click()
    shows(tab.get_by_text(f"Signed in as {name} ({role})"))
    # The sidebar the sign-in form shut opens again: the menu and sign-out are in view.
    playwright_api.expect(tab.get_by_role("button", name="Sign out")).to_be_in_viewport()
    tab.wait_for_load_state("networkidle")


def menu_links(tab: object) -> set[str]:
    """The labels of the sidebar's navigation links now (a link's last line of text)."""
    links = tab.locator('[data-testid="stSidebarNav"] a')
    return {text.strip().split("\n")[-1].strip() for text in links.all_inner_texts()}


def queue_tiny_study(tab: object) -> None:
    """From the Launch page: the quick preset shrunk to one seed, one epoch, 32 px (its
    patience left: one epoch ends each run before it matters)."""
    queue_quick_study(
        tab,
        STUDY,
        {"KL-graded films": 40, "Films": 60, "Number of seeds": 1, "Max epochs": 1}
        | {"Image size (px)": 32},
    )
    shows(tab.get_by_text(f"Queued {STUDY}").first)


def test_a_member_launches_and_a_viewer_reads_results_but_cannot_launch(
    app_url: str,
    page: object,
) -> None:
    tab = page
    tab.goto(f"{app_url}/")
    sign_in(tab, MEMBER, "member")
    shows(tab.get_by_role("heading", name="Launch a study", exact=True, level=1))
    assert {"Launch", "Jobs", "Compare methods"} <= menu_links(tab)
    assert_no_error(tab, "Launch, member")
    queue_tiny_study(tab)
    assert_no_error(tab, "Launch after queueing")

    tab.get_by_role("link", name="Follow its progress on the Jobs page").click()
    shows(tab.get_by_role("heading", name="Jobs", exact=True, level=1))
    shows(tab.get_by_text(STUDY).first)
    shows(tab.get_by_text("succeeded").first, STUDY_TIMEOUT_MS)
    assert_no_error(tab, "Jobs, member")

    # Signed out on Jobs: the form opens at the root, so the viewer who signs in next lands
    # on their own first page, not on Jobs' refusal.
    tab.get_by_role("button", name="Sign out").click()
    # Signed out, the sidebar is shut: no empty grey panel beside the sign-in form.
    shows(tab.get_by_role("heading", name="Sign in to SoftGrade", level=1))
    playwright_api.expect(tab.locator('[data-testid="stSidebar"]')).not_to_be_in_viewport()
    sign_in(tab, VIEWER, "viewer")
    # The viewer's first page (Compare, which writes its view into the address), not Jobs.
    playwright_api.expect(tab).to_have_url(re.compile(rf"^{re.escape(app_url)}/(compare\b.*)?$"))
    assert tab.get_by_text("is not open to").count() == 0
    assert_no_error(tab, "first page, viewer")
    shown = menu_links(tab)
    assert {"Compare methods", "KL × CPPD", "Grade a film"} <= shown, shown
    assert not shown & {"Launch", "Jobs", "Review crops"}, shown
    assert tab.get_by_role("button", name="Queue this study").count() == 0

    tab.locator('[data-testid="stSidebarNav"] a', has_text="Compare methods").click()
    shows(tab.get_by_role("heading", name="Compare methods", exact=True, level=1))
    shows(tab.get_by_text(f"{STUDY} ·").first)  # the member's study
    shows(tab.get_by_text("QWK").first)
    assert_no_error(tab, "Compare methods, viewer")

    # The Launch page by its URL (a bookmark, a shared link): a new browser session, still
    # signed in as the viewer (the session cookie), and the page refuses and shows nothing else.
    tab.goto(f"{app_url}/launch")
    shows(tab.get_by_text(f"Launch is not open to {VIEWER} (viewer)"))
    assert tab.get_by_role("heading", name="Launch a study").count() == 0
    assert tab.get_by_role("button", name="Queue this study").count() == 0
    assert tab.get_by_role("textbox", name="Study name").count() == 0
    assert not {"Launch", "Jobs"} & menu_links(tab)
    assert_no_error(tab, "Launch by URL, viewer")
