"""A tiny synthetic study written through store/ functions, no training: a dataset of
patients with two knees, recorded grades with annotation noise beside the true grades,
one split per seed, and every (task, method, seed, configuration) run with val and test
predictions whose quality depends on the method. Selection is the store's own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from store import datasets as store_datasets
from store import jobs as store_jobs
from store import runs as store_runs

# How often a method's predicted grade misses by one: nominal errs most.
METHOD_NOISE = {"nominal": 0.5, "binomial": 0.3, "beta": 0.3, "triangular": 0.35}


def study_meta(n_patients: int, rng: np.random.Generator) -> pd.DataFrame:
    """Two knees per patient, all graded for both tasks; 10 % of recorded grades are one off
    the true grade."""
    rows = []
    for p in range(n_patients):
        for side in ("L", "R"):
            kl_true, cppd_true = int(rng.integers(0, 5)), int(rng.integers(0, 4))
            kl = int(np.clip(kl_true + rng.choice([-1, 0, 1], p=[0.05, 0.9, 0.05]), 0, 4))
            cppd = int(np.clip(cppd_true + rng.choice([-1, 0, 1], p=[0.05, 0.9, 0.05]), 0, 3))
            rows.append(
                {
                    "image_id": f"im{p:03d}{side}",
                    "patient_id": f"p{p:03d}",
                    "side": side,
                    "kl": kl,
                    "kl_true": kl_true,
                    "cppd": cppd,
                    "cppd_true": cppd_true,
                }
            )
    return pd.DataFrame(rows)


def _predict(true: np.ndarray, n_classes: int, noise: float, rng: np.random.Generator):
    step = rng.choice([-1, 0, 1], size=true.size, p=[noise / 2, 1 - noise, noise / 2])
    pred = np.clip(true + step, 0, n_classes - 1)
    probs = np.full((true.size, n_classes), 0.1 / (n_classes - 1), dtype=np.float32)
    probs[np.arange(true.size), pred] = 0.9
    return pred, probs


def write_synthetic_study(
    store: Path,
    *,
    n_seeds: int = 4,
    n_patients: int = 40,
    methods: tuple[str, ...] = ("nominal", "binomial", "beta"),
    configs: dict[str, int] | None = None,
    keep_unselected_test: bool = True,
    seed: int = 0,
    lr_scale: dict[str, float] | None = None,
) -> str:
    """Write the study and return its id (the study of a queued job, as the worker's).
    Configuration ``c`` of a method has learning rate ``0.001 * (c + 1)``, times the method's
    ``lr_scale`` (1 unless named: a method off Nominal's grid)."""
    rng = np.random.default_rng(seed)
    configs = configs or {m: 1 for m in methods}
    meta = study_meta(n_patients, rng)
    dataset_id = store_datasets.register_dataset(
        spec_key=f"synthetic-{seed}-{n_patients}",
        kind="phantom",
        params={"n": n_patients},
        meta=meta,
        path=store,
    )
    job_id = store_jobs.enqueue_job(
        {"name": "synthetic", "methods": list(methods), "seeds": list(range(n_seeds))}, path=store
    )
    study_id = store_jobs.get_job(job_id, path=store).study_id
    store_datasets.set_study_dataset(study_id, dataset_id, path=store)
    patients = meta["patient_id"].unique()
    runs: list[store_runs.RunRecord] = []  # written in one transaction, as the store allows
    for s in range(n_seeds):
        order = rng.permutation(patients)
        n_test, n_val = len(order) * 3 // 10, len(order) * 2 // 10
        split_of = {p: "test" for p in order[:n_test]}
        split_of.update({p: "val" for p in order[n_test : n_test + n_val]})
        splits = pd.Series(
            [split_of.get(p, "train") for p in meta["patient_id"]], index=meta["image_id"]
        )
        store_datasets.save_splits(dataset_id, s, splits, path=store)
        held = meta[splits.to_numpy() != "train"]
        for task, column, n_classes in (("KL", "kl", 5), ("CPPD", "cppd", 4)):
            true = held[column].to_numpy()
            for method in methods:
                for c in range(configs[method]):
                    noise = min(METHOD_NOISE.get(method, 0.3) + 0.03 * c, 0.9)
                    pred, probs = _predict(true, n_classes, noise, rng)
                    predictions = pd.DataFrame(
                        {
                            "image_id": held["image_id"].to_numpy(),
                            "split": splits[held["image_id"]].to_numpy(),
                            "y_true": true,
                            "y_pred": pred,
                            "probs": list(probs),
                        }
                    )
                    val = predictions[predictions["split"] == "val"]
                    runs.append(
                        store_runs.RunRecord(
                            run_id=f"{study_id}-{task}-{method}-s{s}-c{c}",
                            study_id=study_id,
                            job_id=job_id,
                            task=task,
                            method=method,
                            seed=s,
                            config_index=c,
                            config={"lr": 0.001 * (c + 1) * (lr_scale or {}).get(method, 1)},
                            best_epoch=1,
                            epochs_run=1,
                            val_amae=float(np.mean(np.abs(val["y_true"] - val["y_pred"]))),
                            device="cpu",
                            duration_s=1.0,
                            weights_init="random",
                            checkpoint_path=None,
                            predictions=predictions,
                        )
                    )
    store_runs.record_runs(runs, path=store)
    store_runs.select_best_runs(study_id, path=store)
    if not keep_unselected_test:
        _drop_unselected_test_predictions(store, study_id)
    return study_id


def _drop_unselected_test_predictions(store: Path, study_id: str) -> None:
    """As a bundle import leaves a study: test predictions of the selected runs only."""
    from store.db import connect

    with connect(store) as con:
        con.execute(
            "DELETE FROM predictions WHERE run_id IN (SELECT run_id FROM runs "
            "WHERE study_id = ? AND NOT selected)",
            [study_id],
        )
