"""A crop review reaches a study: the reviewed spec, its cache, and splits without the
excluded film, while the dataset as imported stays as it was."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.config import StudySpec
from engine.films import check_import
from jobs.services.importer import register_import
from jobs.services.review import base_dataset_id, reviewed_spec
from jobs.worker.executors import InlineExecutor
from jobs.worker.runner import Worker
from store import jobs as store_jobs
from store.datasets import dataset_labels, load_splits
from store.db import connect
from store.reviews import record_review
from tests.helpers.films import write_film_folder
from tests.helpers.studies import tiny_study


@pytest.fixture
def imported(tmp_path, store):
    folder, csv, _ = write_film_folder(tmp_path, n=20, n_joint=20, seed=6)
    table = pd.read_csv(csv)
    table.assign(kl=[i % 5 for i in range(20)]).to_csv(csv, index=False)
    done = register_import(check_import(folder), home=tmp_path, store_path=store)
    return done, tmp_path


def test_without_a_review_the_spec_is_the_imported_one(imported, store):
    done, home = imported
    reviewed = reviewed_spec(done.dataset_id, home=home, store_path=store)
    assert reviewed.spec == done.spec and not reviewed.reviewed


@pytest.mark.slow
def test_a_study_on_the_reviewed_spec_never_splits_an_excluded_film(imported, store):
    done, home = imported
    images = dataset_labels(done.dataset_id, path=store)["image_id"].tolist()
    excluded = images[3]
    record_review(done.dataset_id, excluded, "exclude", path=store)
    record_review(done.dataset_id, images[4], "box", (30, 30, 200, 200), path=store)
    reviewed = reviewed_spec(done.dataset_id, home=home, store_path=store)
    assert (reviewed.n_excluded, reviewed.n_boxes) == (1, 1)
    assert reviewed.spec.params["review_csv"].startswith(str(home / "reviews"))
    assert base_dataset_id("folder", reviewed.spec.params) == done.dataset_id
    dataset = {"kind": "folder", **reviewed.spec.params}
    study = StudySpec.from_dict(
        tiny_study(dataset=dataset, tasks=["KL"], methods=["nominal"], max_epochs=1)
    )
    job_id = store_jobs.enqueue_job(study.to_dict(), path=store)
    Worker(InlineExecutor("cpu"), store_path=store, home=home).serve(stop_when_idle=True)
    job = store_jobs.get_job(job_id, path=store)
    assert job.status == "succeeded", job
    with connect(store, read_only=True) as con:
        (dataset_id,) = con.execute(
            "SELECT dataset_id FROM studies WHERE study_id = ?", [job.study_id]
        ).fetchone()
    assert dataset_id != done.dataset_id  # the imported dataset and its splits are untouched
    split = load_splits(dataset_id, 0, path=store)
    assert excluded not in split.index and len(split) == len(images) - 1
    assert len(dataset_labels(done.dataset_id, path=store)) == len(images)
