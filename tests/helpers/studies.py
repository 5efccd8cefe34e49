"""Tiny studies and the command line as a person types it."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

TINY_PHANTOM = {"n_images": 60, "n_joint": 40, "seed": 3}


REPO_ROOT = Path(__file__).resolve().parents[2]


def run_jobs_cli(home: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m jobs ARGS`` in a process of its own on ``home`` (``SOFTGRADE_HOME``), as a
    person types it; its output captured."""
    env = {**os.environ, "SOFTGRADE_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "jobs", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def tiny_study(**overrides: object) -> dict:
    """A study mapping small enough to train in seconds on a CPU."""
    study = {
        "name": "tiny",
        "dataset": {"kind": "phantom", **TINY_PHANTOM},
        "tasks": ["KL", "CPPD"],
        "methods": ["nominal", "beta"],
        "seeds": [0],
        "budget": 1,
        "max_epochs": 2,
        "patience": 2,
        "image_size": 32,
        "batch_size": 16,
        "device": "cpu",
    }
    study.update(overrides)
    return study


@dataclass(frozen=True)
class FinishedStudy:
    """A tiny study trained for real into its own store (shared by page tests)."""

    home: Path
    store: Path
    study_id: str
    job_id: str


def run_import(home: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m jobs import ARGS`` in its own process on ``home``."""
    return run_jobs_cli(home, "import", *args)


def train_finished_study(home: Path) -> dict[str, str]:
    """Train three seeds × two tasks × three methods, two epochs each, at 32 px on the CPU
    into ``home``'s store; return the study's and job's ids (the session's `finished_study`)."""
    from engine.config import StudySpec
    from jobs.worker.executors import InlineExecutor
    from jobs.worker.runner import Worker
    from store import jobs as store_jobs
    from store.db import init_schema

    store = home / "softgrade.duckdb"
    init_schema(store)
    spec = StudySpec.from_dict(
        tiny_study(seeds=[0, 1, 2], methods=["nominal", "beta", "triangular"])
    )
    job_id = store_jobs.enqueue_job(spec.to_dict(), path=store)
    Worker(InlineExecutor("cpu"), store_path=store, home=home).serve(stop_when_idle=True)
    job = store_jobs.get_job(job_id, path=store)
    assert job.status == "succeeded", job
    return {"study_id": job.study_id, "job_id": job_id}
