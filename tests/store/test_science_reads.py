"""Reads behind the probability metrics, the search explorer and the learning curves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from store import jobs as store_jobs
from store import runs as store_runs


def _study(store, name: str = "science") -> str:
    job_id = store_jobs.enqueue_job({"name": name}, path=store)
    return store_jobs.get_job(job_id, path=store).study_id


def record(
    store,
    study_id: str,
    task: str,
    method: str,
    seed: int,
    config: int,
    *,
    val_amae: float,
    params: dict | None = None,
    n_epochs: int = 3,
    best_epoch: int = 2,
    probs: list[list[float]] | None = None,
) -> str:
    """Store one run: two test and one validation film, ``n_epochs`` epoch rows."""
    n_classes = 5 if task == "KL" else 4
    if probs is None:
        probs = [list(np.full(n_classes, 1 / n_classes)) for _ in range(3)]
    predictions = pd.DataFrame(
        {
            "image_id": ["a", "b", "c"],
            "split": ["test", "test", "val"],
            "y_true": [0, 1, 1],
            "y_pred": [int(np.argmax(p)) for p in probs],
            "probs": [np.asarray(p, dtype=np.float32) for p in probs],
        }
    )
    epochs = pd.DataFrame(
        {
            "epoch": range(1, n_epochs + 1),
            "train_loss": np.linspace(1.5, 0.5, n_epochs),
            "val_loss": np.linspace(1.6, 0.9, n_epochs),
            "val_amae": np.linspace(0.9, val_amae, n_epochs),
            "duration_s": 0.1,
        }
    )
    run_id = f"{study_id}-{task}-{method}-s{seed}-c{config}"
    store_runs.record_run(
        store_runs.RunRecord(
            run_id=run_id,
            study_id=study_id,
            job_id=None,
            task=task,
            method=method,
            seed=seed,
            config_index=config,
            config={"task": task, "method": method, "lr": 0.001, **(params or {})},
            best_epoch=best_epoch,
            epochs_run=n_epochs,
            val_amae=val_amae,
            device="cpu",
            duration_s=2.5,
            weights_init="random",
            checkpoint_path=None,
            predictions=predictions,
            epochs=epochs,
        ),
        path=store,
    )
    return run_id


def test_selected_probabilities_splits_probs_into_grade_columns_for_selected_test_films(store):
    study = _study(store)
    kl = [[0.6, 0.2, 0.1, 0.05, 0.05], [0.1, 0.7, 0.1, 0.05, 0.05], [0.2] * 5]
    record(store, study, "KL", "beta", 0, 0, val_amae=0.2, probs=kl)
    record(store, study, "KL", "beta", 0, 1, val_amae=0.8)  # loses the search
    cppd = [[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1], [0.25] * 4]
    record(store, study, "CPPD", "beta", 0, 0, val_amae=0.3, probs=cppd)
    store_runs.select_best_runs(study, path=store)

    frame = store_runs.selected_probabilities([study], path=store)
    assert list(frame.columns) == [
        "study_id",
        "run_id",
        "task",
        "method",
        "seed",
        "y_true",
        "y_pred",
        "p0",
        "p1",
        "p2",
        "p3",
        "p4",
    ]
    assert set(frame["run_id"]) == {f"{study}-KL-beta-s0-c0", f"{study}-CPPD-beta-s0-c0"}
    kl_rows = frame[frame["task"] == "KL"]
    assert kl_rows[["p0", "p1", "p2", "p3", "p4"]].to_numpy() == pytest.approx(
        np.array(kl[:2]), abs=1e-6
    )
    cppd_rows = frame[frame["task"] == "CPPD"]
    assert cppd_rows["p4"].isna().all()
    assert cppd_rows[["p0", "p1", "p2", "p3"]].to_numpy() == pytest.approx(
        np.array(cppd[:2]), abs=1e-6
    )
    val = store_runs.selected_probabilities([study], split="val", path=store)
    assert len(val) == 2 and set(val["y_true"]) == {1}


def test_study_epoch_metrics_carry_run_keys_and_filter_selected_or_listed_runs(store):
    study = _study(store)
    other = _study(store, "other")
    won = record(store, study, "KL", "beta", 0, 0, val_amae=0.2, n_epochs=4, best_epoch=2)
    lost = record(store, study, "KL", "beta", 0, 1, val_amae=0.6, n_epochs=3)
    record(store, other, "KL", "beta", 0, 0, val_amae=0.1)
    store_runs.select_best_runs(study, path=store)

    every = store_runs.study_epoch_metrics([study], path=store)
    assert list(every.groupby("run_id").size().items()) == [(won, 4), (lost, 3)]
    assert {"task", "method", "seed", "config_index", "selected", "best_epoch"} <= set(every)
    assert every.loc[every["run_id"] == won, "epoch"].tolist() == [1, 2, 3, 4]
    selected = store_runs.study_epoch_metrics([study], selected_only=True, path=store)
    assert set(selected["run_id"]) == {won} and selected["selected"].all()
    listed = store_runs.study_epoch_metrics([study], run_ids=[lost], path=store)
    assert set(listed["run_id"]) == {lost}
    assert store_runs.study_epoch_metrics([study], run_ids=[], path=store).empty
    # The long-standing read of any run list still works.
    assert len(store_runs.epoch_metrics([won, lost], path=store)) == 7


def test_the_explorer_reads_a_tiny_store_end_to_end(store):
    """Every configuration of a search, its parameters and curves, straight from the store."""
    from engine.analysis import explorer

    study = _study(store)
    for config, (lr, eta, amae) in enumerate([(0.001, 0.8, 0.5), (0.01, 1.0, 0.3)]):
        for seed in (0, 1):
            record(
                store,
                study,
                "CPPD",
                "binomial",
                seed,
                config,
                val_amae=amae + 0.01 * seed,
                params={"eta": eta, "lr": lr},
                n_epochs=3 + config,
            )
    store_runs.select_best_runs(study, path=store)

    search = explorer.search_table(store_runs.list_runs([study], path=store))
    assert len(search) == 4
    assert set(search.loc[search["selected"], "config_key"]) == {"lr=0.01, eta=1"}
    summary = explorer.parameter_summary(explorer.parameter_effects(search))
    eta = summary[summary["param"] == "eta"].set_index("value")
    assert eta.loc[1.0, "selected_share"] == 1.0 and eta.loc[0.8, "n_selected"] == 0
    curves = explorer.learning_curves(
        store_runs.study_epoch_metrics([study], selected_only=True, path=store)
    )
    assert curves["run_id"].nunique() == 2
    assert curves.groupby("run_id")["epoch"].max().tolist() == [4, 4]
    assert curves["best"].sum() == 2 * 3  # epoch 2 of each run, three series
