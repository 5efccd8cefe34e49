"""Reads behind the results pages: run counts per search group and joint KL × CPPD rows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from store import jobs as store_jobs
from store import runs as store_runs

# Seed 0's images: j* have both grades, c* a CPPD grade only.
JOINT = {"j0": (0, 0), "j1": (1, 0), "j2": (2, 1), "j3": (4, 3), "j4": (3, 2)}
CPPD_ONLY = {"c0": 1, "c1": 3}
TEST = {"j0", "j1", "j2", "j3", "c0"}  # j4 and c1 are validation images


def _record(store, study_id, task, method, seed, config, val_amae, y_pred):
    """Store one run whose predictions cover the task's images (y_pred by image id)."""
    if task == "KL":
        truth = {image: kl for image, (kl, _) in JOINT.items()}
    else:
        truth = {image: cppd for image, (_, cppd) in JOINT.items()} | CPPD_ONLY
    images = sorted(truth)
    n_classes = 5 if task == "KL" else 4
    predictions = pd.DataFrame(
        {
            "image_id": images,
            "split": ["test" if i in TEST else "val" for i in images],
            "y_true": [truth[i] for i in images],
            "y_pred": [y_pred.get(i, truth[i]) for i in images],
            "probs": [np.full(n_classes, 1 / n_classes, dtype=np.float32) for _ in images],
        }
    )
    store_runs.record_run(
        store_runs.RunRecord(
            run_id=f"{study_id}-{task}-{method}-s{seed}-c{config}",
            study_id=study_id,
            job_id=None,
            task=task,
            method=method,
            seed=seed,
            config_index=config,
            config={"lr": 0.001},
            best_epoch=1,
            epochs_run=2,
            val_amae=val_amae,
            device="cpu",
            duration_s=1.0,
            weights_init="random",
            checkpoint_path=None,
            predictions=predictions,
        ),
        path=store,
    )


def _study(store):
    job_id = store_jobs.enqueue_job({"name": "reads"}, path=store)
    return store_jobs.get_job(job_id, path=store).study_id


def test_run_group_counts_counts_runs_and_selected_per_group(store):
    study = _study(store)
    for config, val in enumerate([0.5, 0.3, 0.4]):
        _record(store, study, "KL", "beta", 0, config, val, {})
    _record(store, study, "CPPD", "beta", 0, 0, 0.2, {})
    store_runs.select_best_runs(study, path=store)
    counts = store_runs.run_group_counts([study], path=store)
    rows = {(r.task, r.method, r.seed): (r.n_runs, r.n_selected) for r in counts.itertuples()}
    assert rows == {("KL", "beta", 0): (3, 1), ("CPPD", "beta", 0): (1, 1)}
    assert store_runs.run_group_counts(["no-such-study"], path=store).empty


def test_joint_predictions_pairs_the_selected_kl_and_cppd_runs_on_shared_test_images(store):
    study = _study(store)
    # KL: config 1 wins on validation; its predictions differ from config 0's.
    _record(store, study, "KL", "beta", 0, 0, 0.9, {"j0": 4})
    _record(store, study, "KL", "beta", 0, 1, 0.1, {"j1": 2, "j3": 3})
    _record(store, study, "CPPD", "beta", 0, 0, 0.2, {"j2": 3, "c0": 0})
    _record(store, study, "KL", "nominal", 0, 0, 0.2, {})  # no CPPD model: no joint rows
    store_runs.select_best_runs(study, path=store)

    joint = store_runs.joint_predictions([study], path=store)
    assert list(joint.columns) == [
        "study_id",
        "method",
        "seed",
        "image_id",
        "kl_true",
        "cppd_true",
        "kl_pred",
        "cppd_pred",
    ]
    # Only jointly graded test images: j4 is validation, c0 has no KL grade.
    assert list(joint["image_id"]) == ["j0", "j1", "j2", "j3"]
    assert set(joint["method"]) == {"beta"}
    by_image = joint.set_index("image_id")
    for image, (kl, cppd) in JOINT.items():
        if image in by_image.index:
            assert (by_image.at[image, "kl_true"], by_image.at[image, "cppd_true"]) == (kl, cppd)
    # The selected KL run (config 1), not config 0.
    assert by_image.at["j0", "kl_pred"] == 0
    assert by_image.at["j1", "kl_pred"] == 2
    assert by_image.at["j3", "kl_pred"] == 3
    assert by_image.at["j2", "cppd_pred"] == 3

    val = store_runs.joint_predictions([study], split="val", path=store)
    assert list(val["image_id"]) == ["j4"]


def test_joint_predictions_is_empty_when_a_task_is_missing(store):
    study = _study(store)
    _record(store, study, "KL", "beta", 0, 0, 0.2, {})
    store_runs.select_best_runs(study, path=store)
    assert store_runs.joint_predictions([study], path=store).empty


def test_study_methods_lists_each_stored_method_once_known_or_not(store):
    study_id = _study(store)
    other = _study(store)
    for method in ("nominal", "my_imported_loss"):
        for seed in (0, 1):
            _record(store, study_id, "KL", method, seed, 0, 0.5, {})
    _record(store, other, "KL", "beta", 0, 0, 0.5, {})
    assert store_runs.study_methods([study_id], path=store) == ["my_imported_loss", "nominal"]
    assert store_runs.study_methods([study_id, other], path=store) == [
        "beta",
        "my_imported_loss",
        "nominal",
    ]
    assert store_runs.study_methods(["no-such-study"], path=store) == []
