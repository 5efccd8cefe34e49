"""End to end in a real browser: a lab member imports a folder of films with one bad film,
reads the report, skips the bad film, queues a study on the good ones, and corrects a crop
with two clicks on the Review crops page.

`python -m jobs up` serves the app and a worker on a fresh SOFTGRADE_HOME (the fixtures of
``test_browser.py``); headless Chromium is driven by Playwright. The study is tiny (one seed,
one epoch, 32 px) and only has to be queued. Any Streamlit exception box or Python traceback
on a page fails the test.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers.browser import (
    CHROMIUM,
    assert_no_error,
    click_enabled_button,
    open_page,
    set_number,
    type_until_kept,
)
from tests.helpers.films import write_film_folder

pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)"
)

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium here: apt-get install chromium (.ci/run does)"
)
N_GOOD = 12


@pytest.fixture
def films_with_one_bad(tmp_path: Path) -> Path:
    """Twelve phantom films, every one KL-graded, and a text file listed as a film."""
    (tmp_path / "lab").mkdir()
    folder, csv, _ = write_film_folder(tmp_path / "lab", n=N_GOOD, n_joint=N_GOOD, seed=4)
    (folder / "notes.png").write_text("knee study notes: not a film\n")
    table = pd.read_csv(csv)
    extra = {"image": "notes.png", "patient_id": "q9", "side": "L", "kl": 1, "cppd": 1}
    pd.concat([table, pd.DataFrame([extra])], ignore_index=True).to_csv(csv, index=False)
    return folder


def _store_rows(home: Path, sql: str) -> list[tuple]:
    """Rows of a query on the app's store (read-only; waits out the worker's writes)."""
    from store.db import connect

    with connect(home / "softgrade.duckdb", read_only=True) as con:
        return con.execute(sql).fetchall()


def _rows_when_written(home: Path, sql: str, timeout_s: float = 60.0) -> list[tuple]:
    """The query's rows once the app's write has landed ("Registered" can show while the
    one transaction is still committing on a loaded machine); [] after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    rows = _store_rows(home, sql)
    while not rows and time.monotonic() < deadline:
        time.sleep(0.5)
        rows = _store_rows(home, sql)
    return rows


def test_import_a_folder_skip_its_bad_film_queue_a_study_and_review_a_crop(
    app_url: str,
    page: object,
    films_with_one_bad: Path,
    tmp_path: Path,
) -> None:
    tab = page
    open_page(tab, f"{app_url}/", "Launch a study")
    tab.get_by_role("button", name="Quick look").click()
    _settled(tab.get_by_label("Dataset", exact=True)).click()
    tab.get_by_role("option", name="Import a folder of films").click()
    folder_box = tab.get_by_role("textbox", name="Film folder")
    type_until_kept(tab, folder_box, str(films_with_one_bad))
    tab.get_by_text("check the folder first").wait_for()
    assert tab.get_by_role("button", name="Queue this study").is_disabled()

    tab.get_by_role("button", name="Check the folder").click()
    tab.get_by_text("Left out: notes.png.").wait_for()  # the report names the bad film
    assert "1 error(s)" in tab.inner_text("body")
    assert tab.get_by_role("button", name="Queue this study").is_disabled()
    assert_no_error(tab, "Launch, import report")

    tab.get_by_role(
        "button", name=f"Skip the bad films and register the {N_GOOD} good ones"
    ).click()
    # The success line itself: a bare "Registered" also matches (case-insensitively) the
    # report's "nothing is registered until ..." shown before the click.
    tab.get_by_text(re.compile(r"^Registered ds-")).first.wait_for()
    imported = _store_rows(tmp_path, "SELECT n_good, n_left_out FROM dataset_imports")
    assert imported == [(N_GOOD, 1)]
    assert _store_rows(tmp_path, "SELECT count(*) FROM jobs") == [(0,)]  # nothing queued yet

    set_number(tab, "Number of seeds", 1)
    set_number(tab, "Max epochs", 1)
    set_number(tab, "Image size (px)", 32)
    type_until_kept(tab, tab.get_by_role("textbox", name="Study name"), "lab films")
    click_enabled_button(tab, "Queue this study")
    tab.get_by_text("Queued lab films as job").wait_for()
    assert_no_error(tab, "Launch after queueing")
    ((spec,),) = _store_rows(tmp_path, "SELECT spec FROM studies")
    assert f'"path": "{films_with_one_bad}"' in spec and "/imports/" in spec

    # Crop review: two clicks on the film set the box, which is stored.
    open_page(tab, f"{app_url}/review", "Review crops")
    tab.get_by_text(f"{N_GOOD} films").first.wait_for()
    frame = tab.frame_locator("iframe[title*='streamlit_image_coordinates']")
    film = frame.locator("#image")
    film.wait_for()
    width = film.evaluate("img => img.width")
    film.click(position={"x": width * 0.2, "y": width * 0.2})
    tab.get_by_text("(one more click)").wait_for()
    film.click(position={"x": width * 0.6, "y": width * 0.5})
    _wait_for_text_gone(tab, "(one more click)")
    tab.get_by_role("button", name="Save this box").click()
    tab.get_by_text("Now: cropped with a corrected box.").wait_for()
    assert_no_error(tab, "Review crops")
    ((x0, y0, x1, y1),) = _store_rows(tmp_path, "SELECT x0, y0, x1, y1 FROM crop_reviews")
    assert x1 > x0 and y1 > y0


def _settled(locator: object, timeout_s: float = 30.0) -> object:
    """The one element a locator finds once a rerun has replaced the page's old elements
    (while Streamlit reruns, the old and the new widget can both be in the page)."""
    deadline = time.monotonic() + timeout_s
    while locator.count() != 1:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{locator} found {locator.count()} elements, not one")
        locator.page.wait_for_timeout(200)
    return locator


def _wait_for_text_gone(tab: object, text: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while text in tab.inner_text("body"):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{text!r} still shown after {timeout_s} s")
        tab.wait_for_timeout(200)
