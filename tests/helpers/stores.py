"""Stores written straight through store/ (no training) and the schema's text."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from store import jobs as store_jobs
from store import runs as store_runs
from store import studies
from store.datasets import register_dataset, save_splits, set_study_dataset
from store.db import connect


def fresh_store_at(path: Path, template: Path) -> Path:
    """A fresh store with the current schema at ``path``: a copy of ``template``, a store
    `init_schema` just set up (what it writes does not depend on the file's name), private
    as `store.db.connect` makes a store it creates."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, path)
    os.chmod(path, 0o600)
    return path


def repoint_checkpoints(store: Path, old_home: Path, new_home: Path) -> None:
    """Point the store's runs at the checkpoints of ``new_home``, a copy of ``old_home``
    (the only absolute paths a trained study's store holds)."""
    with connect(store) as con:
        con.execute(
            "UPDATE runs SET checkpoint_path = replace(checkpoint_path, ?, ?)",
            [str(old_home), str(new_home)],
        )


def config0_run(
    study_id: str,
    job_id: str | None,
    task: str,
    method: str,
    seed: int,
    predictions: pd.DataFrame,
) -> store_runs.RunRecord:
    """A finished run of configuration 0 (lr 0.001, one epoch on the CPU, validation AMAE
    0.5, no checkpoint) with ``predictions``."""
    fixed = {"config": {"lr": 0.001}, "best_epoch": 1, "epochs_run": 1, "val_amae": 0.5}
    fixed |= {"device": "cpu", "duration_s": 1.0, "weights_init": "random"}
    identity = {"study_id": study_id, "job_id": job_id, "task": task, "method": method}
    return store_runs.RunRecord(
        run_id=f"{study_id}-{task}-{method}-s{seed}-c0",
        seed=seed,
        config_index=0,
        checkpoint_path=None,
        predictions=predictions,
        **identity,
        **fixed,
    )


def rows_of(store: Path, study_id: str) -> dict[str, int]:
    """How many rows each table holds for ``study_id`` (what a delete must clear)."""
    with connect(store, read_only=True) as con:
        q = lambda sql: con.execute(sql, [study_id]).fetchone()[0]  # noqa: E731
        runs = "SELECT run_id FROM runs WHERE study_id = ?"
        jobs = "SELECT job_id FROM jobs WHERE study_id = ?"
        return {
            "studies": q("SELECT count(*) FROM studies WHERE study_id = ?"),
            "runs": q("SELECT count(*) FROM runs WHERE study_id = ?"),
            "predictions": q(f"SELECT count(*) FROM predictions WHERE run_id IN ({runs})"),
            "epoch_metrics": q(f"SELECT count(*) FROM epoch_metrics WHERE run_id IN ({runs})"),
            "jobs": q("SELECT count(*) FROM jobs WHERE study_id = ?"),
            "job_logs": q(f"SELECT count(*) FROM job_logs WHERE job_id IN ({jobs})"),
            "study_environments": q("SELECT count(*) FROM study_environments WHERE study_id = ?"),
        }


def make_two_studies(store: Path, home: Path):
    """Studies "doomed" and "kept" (launched by alice) on one dataset, each with two runs
    and their checkpoint files under ``home``; the store is set up already."""
    meta = pd.DataFrame(
        {"image_id": ["a", "b", "c"], "patient_id": ["p", "q", "r"], "kl": [0, 1, 2]}
    )
    dataset_id = register_dataset(
        spec_key="phantom:1", kind="phantom", params={}, meta=meta, path=store
    )
    save_splits(
        dataset_id, 0, pd.Series(["val", "test", "test"], index=["a", "b", "c"]), path=store
    )
    doomed, doomed_files = finished_synthetic_study(store, home, "doomed", dataset_id)
    kept, kept_files = finished_synthetic_study(store, home, "kept", dataset_id)
    return store, home, dataset_id, (doomed, doomed_files), (kept, kept_files)


def schema_text(path: Path) -> str:
    """Every table's columns and types, one line each: two stores compare as text."""
    with connect(path, read_only=True) as con:
        rows = con.execute(
            "SELECT table_name, column_name, data_type, is_nullable "
            "FROM information_schema.columns ORDER BY table_name, ordinal_position"
        ).fetchall()
    return "\n".join(" ".join(map(str, r)) for r in rows) + "\n"


V1_SCHEMA = Path(__file__).parents[1] / "store" / "fixtures" / "schema_v1.sql"
#: The schema SoftGrade c2c4bab wrote (version 2), whose runs took only the paper's five.
V2_SCHEMA = Path(__file__).parents[1] / "store" / "fixtures" / "schema_v2.sql"
#: The schema of version 3 (main at 9380224): study_environments without the executor.
V3_SCHEMA = Path(__file__).parents[1] / "store" / "fixtures" / "schema_v3.sql"
#: The schema of version 4 (main at 70f0150): runs without the pruned flag, with one seed for
#: split and initialisation.
V4_SCHEMA = Path(__file__).parents[1] / "store" / "fixtures" / "schema_v4.sql"


ENVIRONMENT = {
    "worker_host": "gpu-box",
    "devices": ["cuda:0", "cuda:0", "cuda:1"],
    "gpu_names": ["NVIDIA H100", "NVIDIA H100", "NVIDIA H100"],
    "code_version": "0.1.0",
    "git_commit": "3de5e32aa9bb0c1d2e3f",
    "git_dirty": True,
    "python": "3.11.7",
    "torch": "2.14.1",
    "cuda": "13.0",
    "cudnn": "9.10.2",
    "dlordinal": "2.7.0",
    "ultralytics": "8.4.190",
    "executor": "ray",
    "threads_per_slot": 2,
    "search_pruned": False,
}


def launch_study(store, name="knees", by="alice"):
    """Queue a one-seed study named ``name``, launched by ``by``; return its job."""
    job_id = store_jobs.enqueue_job(
        {"name": name, "seeds": [0]}, launched_by=by, launched_from="10.1.2.3", path=store
    )
    return store_jobs.get_job(job_id, path=store)


def record_study_run(store, study_id, job_id, config, checkpoint):
    """Store one KL beta run (config ``config``) with predictions, epochs and a checkpoint."""
    images = ["a", "b", "c"]
    store_runs.record_run(
        store_runs.RunRecord(
            run_id=f"{study_id}-KL-beta-s0-c{config}",
            study_id=study_id,
            job_id=job_id,
            task="KL",
            method="beta",
            seed=0,
            config_index=config,
            config={"lr": 0.001},
            best_epoch=1,
            epochs_run=2,
            val_amae=0.5 + config,
            device="cuda",
            duration_s=1.0,
            weights_init="random",
            checkpoint_path=None if checkpoint is None else str(checkpoint),
            predictions=pd.DataFrame(
                {
                    "image_id": images,
                    "split": ["val", "test", "test"],
                    "y_true": [0, 1, 2],
                    "y_pred": [0, 1, 1],
                    "probs": [np.full(5, 0.2, dtype=np.float32)] * 3,
                }
            ),
            epochs=pd.DataFrame(
                {
                    "epoch": [0, 1],
                    "train_loss": [1.0, 0.9],
                    "val_loss": [1.1, 1.0],
                    "val_amae": [0.6, 0.5],
                    "duration_s": [0.1, 0.1],
                }
            ),
        ),
        path=store,
    )


def finished_synthetic_study(store: Path, home: Path, name: str, dataset_id: str):
    """A study with a succeeded job, two runs, their checkpoint files and an environment."""
    job = launch_study(store, name)
    set_study_dataset(job.study_id, dataset_id, path=store)
    store_jobs.claim_next_job("w", path=store)
    studies.record_environment(
        job.study_id, job_id=job.job_id, worker_id="w", environment=ENVIRONMENT, path=store
    )
    files = []
    for config in (0, 1):
        ckpt = home / "checkpoints" / job.study_id / f"c{config}.pt"
        ckpt.parent.mkdir(parents=True, exist_ok=True)
        ckpt.write_bytes(b"weights")
        files.append(ckpt)
        record_study_run(store, job.study_id, job.job_id, config, ckpt)
    store_jobs.finish_job(job.job_id, store_jobs.JobStatus.SUCCEEDED, path=store)
    return job, files
