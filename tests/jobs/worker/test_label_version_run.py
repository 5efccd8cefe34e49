"""A study naming a label version trains and is scored on that version's grades: the folder
imported twice (the second time with every KL grade moved), a tiny study on each version run
by a real worker on the CPU, each run's stored labels those of its version."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.config import StudySpec
from engine.films import check_import
from jobs.services.importer import register_import
from jobs.services.label_choice import with_label_version
from jobs.worker.executors import InlineExecutor
from jobs.worker.runner import Worker
from store import jobs as store_jobs
from store import label_versions as store_versions
from store import runs as store_runs
from store.datasets import dataset_labels
from store.db import init_schema
from tests.helpers.films import write_film_folder
from tests.helpers.studies import tiny_study


@pytest.mark.slow
def test_each_version_s_study_trains_and_scores_on_that_version_s_grades(tmp_path):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    folder, csv, _ = write_film_folder(tmp_path, n=30, n_joint=30, seed=6)
    table = pd.read_csv(csv).assign(kl=[i % 5 for i in range(30)])
    table.to_csv(csv, index=False)
    register_import(check_import(folder, labels_csv=csv), home=tmp_path, store_path=store)
    second = folder / "labels_second_reading.csv"  # as a second reader's export: other grades
    table.assign(kl=(table["kl"] + 2) % 5).to_csv(second, index=False)
    register_import(check_import(folder, labels_csv=second), home=tmp_path, store_path=store)
    versions = store_versions.label_versions(folder, path=store)
    assert [v.version for v in versions] == [1, 2]

    for version in versions:
        dataset = {"kind": "folder", "path": str(folder), "label_version": version.version}
        raw = tiny_study(dataset=dataset, tasks=["KL"], methods=["nominal"])
        spec = with_label_version(StudySpec.from_dict(raw), path=store)
        job_id = store_jobs.enqueue_job(spec.to_dict(), path=store)
        Worker(InlineExecutor("cpu"), store_path=store, home=tmp_path).serve(stop_when_idle=True)
        job = store_jobs.get_job(job_id, path=store)
        assert job.status == "succeeded", job

        grades = dataset_labels(version.dataset_id, path=store).set_index("image_id")["kl"]
        (run_id,) = store_runs.list_runs([job.study_id], path=store)["run_id"]
        stored = store_runs.run_predictions(run_id, path=store).set_index("image_id")
        assert len(stored) > 0
        assert (stored["y_true"] == grades.loc[stored.index]).all(), version.version
    # The two versions disagree on every film, so this could not pass on one set of labels.
    first, other = (dataset_labels(v.dataset_id, path=store)["kl"] for v in versions)
    assert (first.to_numpy() != other.to_numpy()).all()
