"""Fixtures of the browser tests: the app served on a store, Chromium tabs on it.

Every test here is marked ``e2e`` (tests/conftest.py); each skips, saying why, where
Playwright or Chromium is missing.

What a test only reads is paid for once: one Chromium per test module (each test gets a
fresh browser context: no cookie, no session, no storage of another test), the bundled
reference study imported once per test process and copied into each store that needs it,
and one single-user `jobs up` on such a copy, shared by the tests that only read it
(`reference_app_url`). A test that changes what a server holds (launches a study, adds an
account) serves its own store. bench/RESULTS.md ("Browser tests") has what each saved.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    RECORD_NAV_LINKS,
    ReferenceHome,
    copy_store_home,
    fresh_context,
    reference_home,
    serve_app,
)


@pytest.fixture
def app_url(tmp_path: Path) -> Iterator[str]:
    """`python -m jobs up` (app + worker) on a free port and a fresh store."""
    with serve_app(tmp_path) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One headless Chromium for the tests of a module.

    Per module, not per session: while Playwright's sync API is started it marks its event
    loop as running in the main thread, which would break a test of another module (run
    next by the same pytest-xdist worker) that runs an event loop of its own. pytest ends a
    module's fixtures before it runs a test of another module."""
    playwright_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)"
    )
    if CHROMIUM is None:
        pytest.skip("no Chromium here: apt-get install chromium (.ci/run does)")
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def context(browser: object) -> Iterator[object]:
    """A fresh browser context on the module's Chromium (a new person's browser: no cookie,
    no session), closed after the test."""
    fresh = fresh_context(browser)
    yield fresh
    fresh.close()


@pytest.fixture
def page(app_url: str, context: object) -> object:
    """A tab on ``app_url`` that records every sidebar link it ever draws."""
    tab = context.new_page()
    tab.add_init_script(RECORD_NAV_LINKS)
    return tab


@pytest.fixture(scope="session")
def reference_template(tmp_path_factory: pytest.TempPathFactory) -> ReferenceHome:
    """A home whose store holds the bundled reference study and its finished job, imported
    once per test process (~2 s of CPU), for `reference_copy` and `reference_app_url` to
    copy."""
    return reference_home(tmp_path_factory.mktemp("reference-template"))


@pytest.fixture
def reference_copy(reference_template: ReferenceHome, tmp_path: Path) -> Path:
    """This test's own copy of `reference_template`'s home (a home it may change)."""
    return copy_store_home(reference_template.home, tmp_path / "home")


@pytest.fixture(scope="session")
def reference_app_url(
    reference_template: ReferenceHome, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """One single-user `jobs up` (no accounts, no sign-in) on a copy of the reference
    study's home, for the tests that only read it: started once per test process rather
    than once per test."""
    served = tmp_path_factory.mktemp("reference-served") / "home"
    home = copy_store_home(reference_template.home, served)
    with serve_app(home) as url:
        yield url
