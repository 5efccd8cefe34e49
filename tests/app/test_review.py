"""The Review crops page: crops worst confidence first, filters, and decisions that are
stored and change the next study's cache (excluded films out, corrected boxes cropped)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from engine.datasets import open_prepared, prepare_dataset
from engine.detect import crop_and_resize
from engine.films import check_import, read_film_file
from jobs.services.detector_status import TrainingStatus, read_status, status_file, write_status
from jobs.services.importer import register_import
from jobs.services.review import reviewed_spec
from pages.present.review_view import review_crops_dir
from store import sign_in as store_sign_in
from store.reviews import crop_reviews
from tests.helpers.films import write_film_folder, write_reviewed_folder

PAGE = Path(__file__).parents[2] / "pages" / "review.py"
CACHE_PX = 64


def _page() -> AppTest:
    return AppTest.from_file(str(PAGE), default_timeout=120)


@pytest.fixture
def imported(path, tmp_path):
    folder, _, _ = write_film_folder(tmp_path, n=8, n_joint=8, seed=2)
    done = register_import(check_import(folder), name="lab", store_path=path)
    return done, folder


def test_an_empty_store_says_where_films_come_from(path):
    at = _page().run()
    assert not at.exception
    assert "No folder of films is registered yet" in at.info[0].value


def test_crops_come_worst_confidence_first_and_filter_by_grade(imported, home):
    done, _ = imported
    at = _page().run()
    assert not at.exception
    assert "**8 films**" in at.markdown[0].value
    meta = open_prepared(review_crops_dir(home, done.dataset_id)).meta
    assert meta["knee_confidence"].notna().all()
    worst_first = meta.sort_values(["knee_confidence", "image_id"])["image_id"].tolist()
    assert at.selectbox(key="review_film").options == worst_first
    tiles = [b.key for b in at.button if b.key.startswith("review_pick_")]
    assert tiles == [f"review_pick_{i}" for i in worst_first]
    at.selectbox(key="review_kl").set_value("no grade").run()
    assert not at.exception and "No film matches these filters." in at.info[0].value


def test_exclude_and_correct_are_stored_and_change_the_next_cache(imported, path, home):
    done, folder = imported
    at = _page().run()
    films = at.selectbox(key="review_film").options
    excluded, corrected = films[0], films[1]

    at.selectbox(key="review_film").set_value(excluded).run()
    at.button(key="review_exclude").click().run()
    assert not at.exception

    at.selectbox(key="review_film").set_value(corrected).run()
    box = (40, 30, 200, 190)
    for key, value in zip(("review_x0", "review_y0", "review_x1", "review_y1"), box, strict=True):
        at.number_input(key=key).set_value(value)
    at.run()
    at.button(key="review_save_box").click().run()
    assert not at.exception

    stored = crop_reviews(done.dataset_id, path=path).set_index("image_id")
    assert stored.loc[excluded, "action"] == "exclude" and stored.loc[excluded, "who"] == "local"
    assert tuple(stored.loc[corrected, ["x0", "y0", "x1", "y1"]]) == box
    at.selectbox(key="review_problem").set_value("excluded").run()
    assert [b.key for b in at.button if b.key.startswith("review_pick_")] == [
        f"review_pick_{excluded}"
    ]

    spec = reviewed_spec(done.dataset_id, store_path=path).spec
    data = prepare_dataset(spec, CACHE_PX, home / "cache")
    ids = data.meta["image_id"].tolist()
    assert excluded not in ids and len(ids) == 7
    row = data.meta.iloc[ids.index(corrected)]
    assert (row.x0, row.y0, row.x1, row.y1, row.box_source) == (*box, "review")
    film = read_film_file(folder / f"{corrected}.png")
    np.testing.assert_array_equal(
        data.images[ids.index(corrected)], crop_and_resize(film, box, CACHE_PX)
    )


def test_a_box_that_is_not_a_box_is_refused_and_not_stored(imported, path):
    done, _ = imported
    at = _page().run()
    at.number_input(key="review_x1").set_value(0).run()
    assert "This box cannot be used: x1 must be above x0" in at.error[0].value
    assert at.button(key="review_save_box").disabled
    assert crop_reviews(done.dataset_id, path=path).empty


def test_undo_forgets_the_decision(imported, path):
    done, _ = imported
    at = _page().run()
    at.button(key="review_exclude").click().run()
    assert len(crop_reviews(done.dataset_id, path=path)) == 1
    at.button(key="review_undo").click().run()
    assert crop_reviews(done.dataset_id, path=path).empty and not at.exception


def test_retrain_is_disabled_with_the_reason_while_too_few_boxes_are_reviewed(path, home):
    write_reviewed_folder(home, path, n=8, n_reviewed=3)
    at = _page().run()
    assert not at.exception
    button = at.button(key="review_retrain")
    assert button.disabled
    assert "on 3 film(s): 3 reviewed box(es)" in button.label
    reason = next(c.value for c in at.caption if "given boxes" in c.value)
    assert "has 3 film(s) with reviewed or given boxes; a detector needs at least 8" in reason
    assert read_status() is None


@pytest.mark.slow  # trains a detector in a background process
def test_retrain_trains_in_the_background_then_shows_the_detectors_scores(path, home):
    dataset_id = write_reviewed_folder(home, path, n=8, n_reviewed=8)
    at = _page().run()
    button = at.button(key="review_retrain")
    assert not button.disabled and "on 8 film(s): 8 reviewed box(es)" in button.label
    assert at.selectbox(key="review_train_device").value == "cpu"
    at.number_input(key="review_train_size").set_value(64)
    at.number_input(key="review_train_epochs").set_value(2)
    at.button(key="review_retrain").click().run()
    assert not at.exception

    started = read_status()
    assert started.running and (started.image_size, started.epochs, started.device) == (
        64,
        2,
        "cpu",
    )
    # While it runs: no second training, and where it is.
    assert at.button(key="review_retrain").disabled
    assert any("one trains at a time" in c.value for c in at.caption)
    progress = at.get("progress")[0].proto.text
    assert f"Training on {dataset_id} (cpu, 64 px)" in progress

    deadline = time.monotonic() + 600
    while (status := read_status()).running and time.monotonic() < deadline:
        time.sleep(1)
    assert status.state == "finished", status.message
    at.run()
    assert not at.exception and not at.button(key="review_retrain").disabled
    done = at.success[0].value
    assert f"Detector {status.key} trained on {dataset_id}" in done
    assert f"held-out mean IoU {status.held_out['mean_iou']:.3f}" in done and "mAP50" in done


@pytest.mark.slow
def test_a_training_that_died_shows_why_and_retrain_is_offered_again(path, home):
    dataset_id = write_reviewed_folder(home, path, n=8, n_reviewed=8)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    started = "2026-11-26T10:00:00+00:00"
    write_status(
        status_file(), TrainingStatus("running", dataset_id, "mo", started, gone.pid, 64, 2, "cpu")
    )
    at = _page().run()
    assert not at.exception
    assert not at.button(key="review_retrain").disabled
    failed = at.error[0].value
    assert f"The last training on {dataset_id} (cpu, 64 px) failed" in failed
    assert "ended without finishing" in failed and "training.log" in failed


def test_a_crop_decision_is_recorded_under_the_signed_in_member(imported, path):
    from pages.widgets.sign_in import TOKEN_KEY
    from store import users as store_users

    done, _ = imported
    store_users.add_user("mo", "member", "correct horse battery", path=path)
    _, token = store_sign_in.sign_in("mo", "correct horse battery", path=path)
    at = _page()
    at.session_state[TOKEN_KEY] = token
    at.run()
    film = at.selectbox(key="review_film").options[0]
    at.selectbox(key="review_film").set_value(film).run()
    at.button(key="review_exclude").click().run()
    assert not at.exception
    assert crop_reviews(done.dataset_id, path=path).set_index("image_id").loc[film, "who"] == "mo"
