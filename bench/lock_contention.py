"""Lock contention while a study runs with the app open.

Starts a real worker process on a fresh store, submits a study, and meanwhile reads the
store the way the open Jobs page does (jobs, workers and the job's log every second, from
another process). Prints the time from submit to the first visible progress and the lock
retries seen by the reader and by the worker.

    python bench/lock_contention.py [engine/studies/quick.yaml]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from engine.config import StudySpec
from store import jobs as store_jobs
from store.db import LOCK_STATS, StoreError, init_schema

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    study = Path(sys.argv[1] if len(sys.argv) > 1 else REPO / "engine" / "studies" / "quick.yaml")
    home = Path(tempfile.mkdtemp(prefix="sg-locks-"))
    store = home / "softgrade.duckdb"
    init_schema(store)
    env = {**os.environ, "SOFTGRADE_HOME": str(home)}
    worker = subprocess.Popen(
        [sys.executable, "-m", "jobs", "worker", "--device", "cpu"],
        cwd=REPO,
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(2)
        submitted = time.monotonic()
        job_id = store_jobs.enqueue_job(StudySpec.from_file(study).to_dict(), path=store)
        first_progress = None
        reads = 0
        while True:
            time.sleep(1.0)
            try:
                jobs = store_jobs.list_jobs(path=store)
                store_jobs.list_workers(path=store)
                store_jobs.job_log(job_id, path=store)
                reads += 3
            except StoreError as exc:
                print("read failed:", exc)
                continue
            job = jobs.set_index("job_id").loc[job_id]
            if first_progress is None and (pd.notna(job.current_epoch) or job.runs_done > 0):
                first_progress = time.monotonic() - submitted
            if job.status in ("succeeded", "failed", "cancelled"):
                break
        wall = time.monotonic() - submitted
        log = store_jobs.job_log(job_id, path=store)["message"]
        worker_line = [m for m in log if m.startswith("store lock retries")]
        print(f"study {study.name}: {job.status} in {wall:.0f} s, {job.runs_done} runs")
        print(f"submit -> first visible progress: {first_progress:.1f} s")
        print(
            f"reader ('app'): {reads} reads, {LOCK_STATS.retries} lock retries, "
            f"{LOCK_STATS.waited_s:.2f} s waited"
        )
        print(f"worker: {worker_line[-1] if worker_line else 'no line'}")
    finally:
        worker.terminate()
        worker.wait(30)


if __name__ == "__main__":
    main()
