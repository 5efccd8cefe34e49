"""Training the knee detector from the command line and in the background: progress, the
stored detector, the status file the Review crops page reads, and refusals."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs.cli.main import main
from jobs.services.access import LOCAL_ACCOUNT, AccessDenied
from jobs.services.detector import MIN_FILMS, TooFewFilms, TrainingRefused, reviewed_films
from jobs.services.detector_background import start_training
from jobs.services.detector_status import TrainingStatus, read_status, status_file, write_status
from store.datasets import register_dataset
from store.db import default_store_path, init_schema
from store.reviews import record_review
from store.users import Account, Role
from tests.helpers.films import meta_frame, write_film_folder, write_reviewed_folder
from tests.helpers.studies import run_jobs_cli

TINY = ["--image-size", "64", "--epochs", "2", "--device", "cpu"]


@pytest.fixture
def store(home: Path) -> Path:
    """The store of ``$SOFTGRADE_HOME``, as the CLI and the page open it."""
    path = default_store_path()
    init_schema(path)
    return path


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    return run_jobs_cli(home, "detector", *args, timeout=600)


@pytest.mark.slow
def test_the_cli_trains_a_tiny_detector_on_phantom_films_and_lists_it(tmp_path):
    done = _cli(tmp_path, "train", "--phantom", "16", "--film-size", "160", "160", *TINY)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "training a knee detector on 16 films (phantom seed=101" in out
    assert "epoch 1/2: box_loss" in out and "epoch 2/2: box_loss" in out
    result = next(line for line in out.splitlines() if line.startswith("detector "))
    key = result.split()[1]
    assert "held-out mean IoU" in result and "mAP50" in result
    assert result.endswith(str(tmp_path / "detectors" / key))
    record = json.loads((tmp_path / "detectors" / key / "record.json").read_text())
    assert (record["n_films"], record["image_size"], record["epochs"]) == (16, 64, 2)

    listed = _cli(tmp_path, "list")
    assert listed.returncode == 0
    row = next(line for line in listed.stdout.splitlines() if line.startswith(key))
    assert "phantom seed=101, 16 single-knee films of 160x160 px" in row
    assert f"{record['held_out']['mean_iou']:.3f}" in row


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "nothing to train on: give --phantom N and/or --dataset NAME_OR_ID"),
        (["--dataset", "nope"], "no imported dataset 'nope'; imported datasets: lab (ds-"),
        (
            ["--dataset", "lab"],
            f"has 3 film(s) with reviewed or given boxes; a detector needs at least {MIN_FILMS}",
        ),
        (["--phantom", "4", "--image-size", "50"], "image size 50 must be a multiple of 32"),
        (["--phantom", "4", "--device", "tpu"], "device 'tpu' is not known; allowed: auto, cpu"),
    ],
)
def test_bad_input_gets_one_message_and_no_traceback(store, tmp_path, capsys, args, message):
    write_reviewed_folder(tmp_path, store, n=8, n_reviewed=3)
    capsys.readouterr()
    assert main(["detector", "train", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_dataset_is_found_by_its_import_name_or_id(store, tmp_path):
    from jobs.services.detector import find_dataset

    dataset_id = write_reviewed_folder(tmp_path, store, n=8, n_reviewed=8)
    assert find_dataset("lab", store_path=store) == dataset_id
    assert find_dataset(dataset_id, store_path=store) == dataset_id
    films = reviewed_films(dataset_id, store_path=store)
    assert (films.n_films, films.n_boxes, films.too_few()) == (8, 8, None)


def test_a_bilateral_film_trains_only_when_both_its_knees_are_reviewed(store):
    meta = meta_frame(2)  # two patients, both knees each: one film per patient
    meta["source"] = ["/f/a.png", "/f/a.png", "/f/b.png", "/f/b.png"]
    dataset = register_dataset(
        spec_key="folder(bilateral)", kind="folder", params={}, meta=meta, path=store
    )
    ids = meta["image_id"].tolist()
    record_review(dataset, ids[0], "box", (300, 10, 400, 110), path=store)
    record_review(dataset, ids[1], "box", (10, 10, 110, 110), path=store)
    record_review(dataset, ids[2], "box", (10, 10, 110, 110), path=store)
    films = reviewed_films(dataset, store_path=store)
    assert films.paths == [Path("/f/a.png")] and films.n_partial == 1
    assert films.boxes == [[(10, 10, 110, 110), (300, 10, 400, 110)]]  # viewer's left first
    assert "1 film(s) with reviewed or given boxes (1 more have a knee without" in films.too_few()


@pytest.mark.slow  # trains a detector in a background process
def test_start_training_runs_in_the_background_until_the_status_says_finished(
    store, home, tmp_path
):
    dataset_id = write_reviewed_folder(tmp_path, store, n=8, n_reviewed=8)
    status = start_training(LOCAL_ACCOUNT, dataset_id, image_size=64, epochs=2, device="cpu")
    assert status.running and status.started_by == "local" and status.epochs == 2
    from store.audit import read_audit

    line = read_audit(path=store).iloc[0]
    assert (line.action, line.actor, line.target) == ("train_detector", "local", dataset_id)
    with pytest.raises(TrainingRefused, match="already training .* epoch 0 of 2"):
        start_training(LOCAL_ACCOUNT, dataset_id, image_size=64, epochs=2, device="cpu")

    deadline = time.monotonic() + 600
    while (now := read_status()).running and time.monotonic() < deadline:
        time.sleep(1)
    log = (home / "detectors" / "training.log").read_text()
    assert now.state == "finished", f"{now.message}\n{log}"
    assert (now.epoch, now.n_films, now.dataset_id) == (2, 8, dataset_id)
    assert "epoch 2/2: box_loss" in log
    record = json.loads((home / "detectors" / now.key / "record.json").read_text())
    assert record["trained_on"] == f"dataset {dataset_id}, 8 film(s): 8 reviewed box(es)"
    assert now.held_out["mean_iou"] == record["held_out"]["mean_iou"]
    assert "map50" in now.held_out


def test_a_viewer_may_not_start_a_training_and_too_few_films_are_refused(store, tmp_path):
    dataset_id = write_reviewed_folder(tmp_path, store, n=8, n_reviewed=3)
    viewer = Account(name="vi", role=Role.VIEWER)
    with pytest.raises(AccessDenied, match="vi \\(viewer\\) may not launch studies"):
        start_training(viewer, dataset_id)
    with pytest.raises(TooFewFilms, match="has 3 film\\(s\\) with reviewed or given boxes"):
        start_training(LOCAL_ACCOUNT, dataset_id)
    assert read_status() is None  # nothing was started


@pytest.mark.slow
def test_a_training_whose_process_is_gone_reads_as_failed(home):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    started = "2026-11-26T10:00:00+00:00"
    write_status(
        status_file(), TrainingStatus("running", "ds-x", "mo", started, gone.pid, 64, 2, "cpu")
    )
    status = read_status()
    assert status.state == "failed" and "ended without finishing" in status.message
    assert str(home / "detectors" / "training.log") in status.message


def test_boxes_given_in_the_labels_csv_train_too_unless_reviewed_or_excluded(store, tmp_path):
    import pandas as pd

    from engine.films import check_import
    from engine.phantom import PhantomSpec, render_film
    from jobs.services.importer import register_import

    folder, csv, labels = write_film_folder(tmp_path, n=10, n_joint=10, seed=2)
    spec = PhantomSpec(n_images=10, n_joint=10, seed=2)
    true_boxes = [render_film(spec, row)[2] for _, row in labels.iterrows()]
    table = pd.read_csv(csv)
    for i, column in enumerate(("x0", "y0", "x1", "y1")):  # rows 3-9 give their box
        table[column] = [box[i] if k >= 3 else None for k, box in enumerate(true_boxes)]
    table.to_csv(csv, index=False)
    dataset_id = register_import(check_import(folder), name="lab", store_path=store).dataset_id
    ids = labels["image_id"].tolist()
    for k in range(4):  # rows 0-3 reviewed; row 3's review wins over its CSV box
        record_review(dataset_id, ids[k], "box", true_boxes[k], path=store)
    record_review(dataset_id, ids[9], "exclude", None, path=store)

    films = reviewed_films(dataset_id, store_path=store)

    assert (films.n_boxes, films.n_from_labels, films.n_films) == (4, 5, 9)
    film_names = sorted(path.name for path in films.paths)
    assert len(set(film_names)) == 9 and f"{ids[9]}.png" not in film_names
    assert films.too_few() is None
    assert films.described() == "9 film(s): 4 reviewed box(es), 5 with boxes from the labels CSV"
