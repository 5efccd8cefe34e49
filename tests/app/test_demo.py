"""The Grade-a-film page: a test film or an uploaded one, graded by a tiny trained study."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from streamlit import config

from store import runs as store_runs
from tests.helpers.films import dicom_bomb_bytes, dicom_bytes, phantom_film, png_bytes
from tests.helpers.pages import copy_home, images, run_page, texts

PAGE = "../../pages/demo.py"


def _upload(at, name: str, data: bytes, mime: str) -> None:
    """Switch the page to 'Upload a film' and upload one file."""
    at.segmented_control(key="demo_source").set_value("Upload a film").run()
    at.file_uploader(key="demo_upload").upload(name, data, mime).run()


def test_a_test_film_is_graded_by_the_best_methods_models(finished_study, monkeypatch):
    at = run_page(finished_study.home, monkeypatch, PAGE)
    runs = store_runs.list_runs(
        [finished_study.study_id], selected_only=True, path=finished_study.store
    )
    best = runs.groupby("method")["val_amae"].mean().idxmin()
    assert at.selectbox(key="demo_method").value == best
    assert [m.label for m in at.metric] == ["KL grade", "CPPD grade"]
    assert all(m.value.split()[0] in ("KL", "CPPD") for m in at.metric)
    markdown = texts(at, "markdown")
    assert "Annotated:" in markdown and "seed " in markdown
    assert len(images(at)) == 1 + 2  # the crop, and one map per task
    assert len(at.get("arrow_vega_lite_chart") or at.get("vega_lite_chart")) == 2

    at.number_input(key="demo_film").set_value(2).run()
    at.selectbox(key="demo_method").set_value("nominal").run()
    assert not at.exception
    assert "Models: Nominal" in texts(at, "markdown")


def test_an_uploaded_film_is_cropped_to_the_knee_and_graded(finished_study, monkeypatch):
    film = phantom_film(index=0)
    at = run_page(finished_study.home, monkeypatch, PAGE)
    at.segmented_control(key="demo_source").set_value("Upload a film").run()
    assert "Upload a film to grade it." in texts(at, "info")

    at.file_uploader(key="demo_upload").upload("knee.png", png_bytes(film), "image/png").run()

    assert not at.exception
    captions = [img.caption for img in images(at)]
    assert captions[:2] == ["the knee SoftGrade found", "what the models saw"]
    assert [m.label for m in at.metric] == ["KL grade", "CPPD grade"]


def test_an_upload_that_is_no_film_gets_one_message(finished_study, monkeypatch):
    at = run_page(finished_study.home, monkeypatch, PAGE)
    _upload(at, "scan.png", b"DICM....", "image/png")
    assert not at.exception
    assert "scan.png is not an image SoftGrade can read" in texts(at, "error")
    assert not at.metric


def test_an_uploaded_dicom_bomb_is_refused_from_its_header(finished_study, monkeypatch):
    at = run_page(finished_study.home, monkeypatch, PAGE)
    _upload(at, "bomb.dcm", dicom_bomb_bytes(), "application/dicom")
    assert not at.exception
    assert "30000 x 30000 px" in texts(at, "error") and "not decoded" in texts(at, "error")
    assert not at.metric


def test_without_saved_weights_the_page_says_so(finished_study, tmp_path, monkeypatch):
    home = copy_home(finished_study, tmp_path / "copy", "checkpoints")
    at = run_page(home, monkeypatch, PAGE)
    assert "cannot grade a film here" in texts(at, "warning")


def test_a_dicom_film_without_an_extension_is_graded(finished_study, monkeypatch):
    film = phantom_film(index=1)
    at = run_page(finished_study.home, monkeypatch, PAGE)
    _upload(at, "IM000123", dicom_bytes(film.astype(np.uint16) * 16), "application/octet-stream")
    assert not at.exception and not at.error
    assert [m.label for m in at.metric] == ["KL grade", "CPPD grade"]


def _files_under(*folders: Path) -> set[Path]:
    return {f for folder in folders for f in folder.rglob("*") if f.is_file()}


def test_an_upload_over_the_limit_gets_one_message_and_nothing_is_written(
    finished_study, monkeypatch, tmp_path
):
    monkeypatch.chdir(tmp_path)
    before = _files_under(finished_study.home, tmp_path)
    at = run_page(finished_study.home, monkeypatch, PAGE)
    limit = config.get_option("server.maxUploadSize")
    config.set_option("server.maxUploadSize", 1)
    try:
        _upload(at, "big.png", b"\x00" * (2**20 + 1), "image/png")
        assert not at.exception
        assert texts(at, "error").startswith("big.png is 1.0 MB; Grade a film takes films up to 1")
        assert not at.metric
        _upload(at, "knee.png", png_bytes(phantom_film(index=0)), "image/png")
        assert not at.exception and not at.error
        assert [m.label for m in at.metric] == ["KL grade", "CPPD grade"]
    finally:
        config.set_option("server.maxUploadSize", limit)
    assert _files_under(finished_study.home, tmp_path) == before  # the films stayed in memory


def test_the_seeds_that_tested_a_film_are_compared_and_the_others_left_out(
    finished_study, monkeypatch
):
    at = run_page(finished_study.home, monkeypatch, PAGE)
    assert "the 3 seeds' models with weights here are compared" in texts(at, "markdown")
    seen_all, seen_left_out = False, False
    for number in range(1, 13):
        at.number_input(key="demo_film").set_value(number).run()
        assert not at.exception
        markdown, captions = texts(at, "markdown"), texts(at, "caption")
        votes = [m for m in markdown.splitlines() if " seeds say " in m or "seed's model" in m]
        if "All 3 seeds say" in markdown or "of 3 seeds say" in markdown:
            seen_all = True
            assert len(votes) == 2  # one sentence per task
            assert len(at.get("arrow_vega_lite_chart") or at.get("vega_lite_chart")) == 2
        if "so their models are left out of the comparison" in captions:
            seen_left_out = True
        if seen_all and seen_left_out:
            break
    assert seen_all, "no test film of the best seed was tested by all three seeds"
    assert seen_left_out, "every film was tested by every seed (splits differ by seed)"
