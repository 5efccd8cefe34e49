"""The app shell: navigation over every page, and the sidebar's store and worker health."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from jobs.services import access
from jobs.services.up_worker import STARTING_WITHIN_S, UP_LAUNCHED_ENV
from pages.widgets.workers import WORKER_STARTING
from store import jobs as store_jobs
from store.db import default_store_path, init_schema

APP = Path(__file__).parents[2] / "app.py"
PAGES = {
    "pages/launch.py": "Launch a study",
    "pages/queue.py": "Jobs",
    "pages/data.py": "Data",
    "pages/explorer.py": "Search & learning curves",
    "pages/review.py": "Review crops",
    "pages/second_reader.py": "Second reader",
    "pages/accounts.py": "Accounts",
    "pages/audit.py": "Audit log",
}


def _app() -> AppTest:
    return AppTest.from_file(str(APP), default_timeout=60)


def test_shell_without_worker_warns_and_says_how_to_start_one(home):
    at = _app().run()
    assert not at.exception
    warnings = [e.value for e in at.sidebar.error]
    assert any("No worker is running" in w and "python -m jobs worker" in w for w in warnings)
    assert [m.value for m in at.sidebar.metric] == ["0 · 0"]
    assert any(str(home) in c.value for c in at.sidebar.caption)
    assert at.title[0].value == "Launch a study"  # the default page


def test_right_after_up_the_sidebar_says_its_worker_is_starting(home, monkeypatch):
    monkeypatch.setenv(UP_LAUNCHED_ENV, str(time.time()))
    at = _app().run()
    assert not at.exception
    assert not [e.value for e in at.sidebar.error]
    assert any(WORKER_STARTING in i.value for i in at.sidebar.info)
    monkeypatch.setenv(UP_LAUNCHED_ENV, str(time.time() - STARTING_WITHIN_S - 1))
    at.run()
    assert any("No worker is running" in e.value for e in at.sidebar.error)


def test_shell_with_alive_worker_shows_its_devices(home):
    path = default_store_path()
    init_schema(path)
    store_jobs.register_worker(
        hostname="lab-gpu",
        pid=123,
        executor="local",
        devices=["cuda:0", "cuda:1"],
        slots=4,
        path=path,
    )
    store_jobs.enqueue_job({"name": "waiting"}, path=path)
    at = _app().run()
    assert not at.exception
    assert not at.sidebar.error
    alive = [s.value for s in at.sidebar.success]
    assert len(alive) == 1 and "Worker alive · 4 slot(s) on cuda:0, cuda:1" in alive[0]
    assert [m.value for m in at.sidebar.metric] == ["1 · 0"]


def test_a_pages_heading_comes_before_the_sidebars_store_reads(home, monkeypatch):
    # A new visitor's wait for the heading must not include the sidebar's worker and queue
    # reads (two store opens, 0.1-1 s on a busy 2-core machine): they follow the heading.
    from pages.widgets import shell

    events: list[str] = []
    draw_title, read_workers = shell.st.title, shell.alive_workers

    def noted_title(*args: object, **kwargs: object) -> object:
        events.append("heading")
        return draw_title(*args, **kwargs)

    def noted_workers(path: Path) -> object:
        events.append("sidebar reads the store")
        return read_workers(path)

    monkeypatch.setattr(shell.st, "title", noted_title)
    monkeypatch.setattr(shell, "alive_workers", noted_workers)
    at = _app().run()
    assert not at.exception
    assert events == ["heading", "sidebar reads the store"]
    assert any("No worker is running" in e.value for e in at.sidebar.error)


def test_the_sign_in_check_reads_the_store_once_per_run_and_again_the_next(home, monkeypatch):
    # app.py and the page's guard both ask whether sign-in is needed; each answer opened the
    # store (15-50 ms on a busy machine) before the page's heading. Once per script run, and
    # a new run asks again: an account made between two runs turns sign-in on at the next.
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    from pages.widgets import sign_in
    from store import users as store_users

    asked: list[object] = []  # each script run's cursor table (new every run), per question
    read: list[object] = []
    has_accounts, current_account = store_users.has_accounts, sign_in.current_account

    def counted_has_accounts(*, path: Path | None = None) -> bool:
        read.append(get_script_run_ctx().cursors)
        return has_accounts(path=path)

    def counted_current_account() -> object:
        asked.append(get_script_run_ctx().cursors)
        return current_account()

    monkeypatch.setattr(store_users, "has_accounts", counted_has_accounts)
    monkeypatch.setattr(sign_in, "current_account", counted_current_account)
    at = _app().run()
    assert not at.exception
    assert at.title[0].value == "Launch a study"
    runs = list({id(run): run for run in asked}.values())
    assert any(sum(a is run for a in asked) == 2 for run in runs)  # app.py and Launch's guard
    assert [sum(r is run for r in read) for run in runs] == [1] * len(runs)
    store_users.add_user("ada", "admin", "a long passphrase 1", path=default_store_path())
    at.run()
    assert at.title[0].value == "Sign in to SoftGrade"


@pytest.mark.parametrize(("page", "title"), PAGES.items())
def test_every_page_opens_inside_the_shell(home, page, title):
    # AppTest starts every run like a fresh server process, where Streamlit first runs a
    # sub-page file alone (legacy pages/ mode); `run_inside_shell` must bring app.py back.
    at = _app().run()
    at.switch_page(page).run()
    assert not at.exception
    assert at.title[0].value == title
    assert [m.label for m in at.sidebar.metric] == ["Jobs queued · running"]
    assert any("No worker is running" in e.value for e in at.sidebar.error)


def test_only_the_registered_page_scripts_live_directly_in_pages():
    # Streamlit's legacy discovery lists every pages/*.py file as a page (never a
    # sub-package's): the helpers live in pages/widgets and pages/present, and each page file
    # has its row in the one page registry that the menu and the guards derive from.
    files = {path.stem for path in (APP.parent / "pages").glob("*.py")}
    assert files == {page.stem for page in access.PAGES}


@pytest.mark.slow  # starts a process (tests/helpers/tier_guard.py)
def test_presentation_helpers_load_without_streamlit():
    # pages/present is the presentation that needs no server; a fresh interpreter imports
    # every module of it and must not have loaded streamlit along the way.
    code = (
        "import importlib, pkgutil, sys, pages.present as p\n"
        "for m in pkgutil.iter_modules(p.__path__):\n"
        "    importlib.import_module(f'pages.present.{m.name}')\n"
        "print('streamlit' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=APP.parent, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False", done.stderr


@pytest.mark.slow  # starts a process (tests/helpers/tier_guard.py)
def test_the_shell_every_page_runs_loads_no_statistics_libraries():
    # Every page and every new browser session runs app.py's imports and the sidebar; scipy's
    # statistics and baycomp (pulled in by engine.analysis.paired) cost ~0.5 s idle and 1.7 s
    # on a loaded 2-core machine, for a correction only result pages' tests use.
    code = (
        "import sys\n"
        "import jobs.services.access, jobs.services.kiosk, jobs.services.serve_app\n"
        "import pages.widgets.shell, pages.widgets.sign_in\n"
        "print(sorted(m for m in ('scipy', 'baycomp', 'statsmodels', 'torch', 'altair')"
        " if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=APP.parent, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
