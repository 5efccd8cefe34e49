"""Many finished runs written at once (`store.runs.record_runs`): all in one transaction."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from store import jobs as store_jobs
from store import runs as store_runs
from store.db import StoreError
from tests.helpers.stores import config0_run, rows_of


def _run(
    study_id: str, seed: int, splits: tuple[str, ...] = ("val", "test")
) -> store_runs.RunRecord:
    images = [f"im{i}" for i in range(len(splits))]
    predictions = pd.DataFrame(
        {
            "image_id": images,
            "split": list(splits),
            "y_true": [0] * len(images),
            "y_pred": [1] * len(images),
            "probs": [np.full(5, 0.2, dtype=np.float32)] * len(images),
        }
    )
    return config0_run(study_id, None, "KL", "beta", seed, predictions)


def _study(store: Path) -> str:
    job_id = store_jobs.enqueue_job({"name": "batch"}, path=store)
    return store_jobs.get_job(job_id, path=store).study_id


def test_runs_recorded_together_are_each_stored_with_their_predictions(store):
    study_id = _study(store)
    store_runs.record_runs([_run(study_id, seed) for seed in range(3)], path=store)
    counts = rows_of(store, study_id)
    assert counts["runs"] == 3 and counts["predictions"] == 3 * 2
    assert store_runs.finished_run_ids(study_id, path=store) == {
        f"{study_id}-KL-beta-s{seed}-c0" for seed in range(3)
    }


def test_a_refused_run_leaves_none_of_its_batch_stored(store):
    study_id = _study(store)
    store_runs.record_run(_run(study_id, 1), path=store)
    with pytest.raises(StoreError, match="is already stored"):
        store_runs.record_runs([_run(study_id, 0), _run(study_id, 1)], path=store)
    assert rows_of(store, study_id)["runs"] == 1  # seed 0 rolled back with the duplicate
    with pytest.raises(StoreError, match=r"has no \['val'\] predictions"):
        store_runs.record_runs([_run(study_id, 2), _run(study_id, 3, ("test",))], path=store)
    assert rows_of(store, study_id)["runs"] == 1
