"""Grade a film's likely range: the words from the seeds' calibrated sets, and no range for
a film the models were not calibrated on."""

from __future__ import annotations

import numpy as np

from pages.present import grade_range
from tests.helpers.films import phantom_film, png_bytes
from tests.helpers.pages import run_page, texts

PAGE = "../../pages/demo.py"


def test_the_range_spans_every_seed_and_the_grade_shown():
    probs = {0: np.array([0.05, 0.6, 0.3, 0.05, 0.0]), 1: np.array([0.0, 0.1, 0.5, 0.35, 0.05])}
    thresholds = {0: np.full(5, 0.85), 1: np.full(5, 0.85)}
    shown = grade_range.film_range("KL", 2, probs, thresholds)
    assert shown is not None and (shown.lo, shown.hi) == (1, 3)
    assert shown.line == "KL 2, likely range KL 1–3 at 90 %"
    assert "9 in 10" in shown.note and "the models never trained on" in shown.note
    # the grade shown is always inside the range
    assert grade_range.film_range("KL", 4, probs, thresholds).hi == 4
    # a seed without thresholds (no validation films) gives no range on its own
    assert grade_range.film_range("KL", 2, probs, {}) is None
    single = grade_range.film_range("KL", 1, {0: probs[0]}, {0: np.full(5, 0.5)})
    assert single.line == "KL 1, likely KL 1 at 90 %" and "the model never" in single.note


def test_a_test_film_reads_its_range_and_an_upload_gets_none(finished_study, monkeypatch):
    at = run_page(finished_study.home, monkeypatch, PAGE)
    assert not at.exception
    markdown = texts(at, "markdown")
    # The tiny CPU models may not narrow a grade: then the line says so, not "likely range".
    assert "KL" in markdown and "at 90 %" in markdown
    assert "likely" in markdown or "the models cannot narrow it" in markdown
    assert "9 in 10 films like this one" in texts(at, "caption")

    at.segmented_control(key="demo_source").set_value("Upload a film").run()
    film = png_bytes(phantom_film(index=0))
    at.file_uploader(key="demo_upload").upload("knee.png", film, "image/png").run()
    assert not at.exception
    assert "likely range" not in texts(at, "markdown")
    assert "cannot narrow it" not in texts(at, "markdown")
    assert grade_range.NO_RANGE_UPLOAD in texts(at, "caption")
