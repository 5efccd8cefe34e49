"""Soak: two workers and four page readers on one store for a minute.

Two real workers (`jobs.worker.factory.make_worker`, local executor, one CPU slot each) train a
queue
of tiny phantom studies into one store, while four reader processes do what open pages do:
two "Jobs page" readers (jobs, live workers, the running job's log, a session check) and two
"result page" readers (studies, confusion counts, joint KL x CPPD rows, run counts per
search, the study card, a session check), each refreshing every ``--period-s``.

The workers start first; the measured minute begins once both are training. Every store open
records how long it waited for the file lock (`store.db.LOCK_STATS`; the workers' figures
include their start-up opens); each process writes its waits, operation counts and failures
to a JSON file, and the parent prints one table: failed reads and writes (aim: 0) and
p50/p99 lock wait per role.

    python bench/soak.py [--seconds 60] [--period-s 2.0]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

STUDY = {
    "name": "soak",
    "dataset": {"kind": "phantom", "n_images": 60, "n_joint": 40, "seed": 3},
    "tasks": ["KL", "CPPD"],
    "methods": ["nominal", "beta"],
    "seeds": [0, 1],
    "budget": 1,
    "max_epochs": 1,
    "patience": 1,
    "image_size": 32,
    "batch_size": 16,
    "device": "cpu",
}


class _FailureCount(logging.Handler):
    """Counts warnings and errors (a heartbeat or write that failed is logged so)."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage()[:200])


def run_worker(out: Path) -> None:
    """A worker until SIGTERM; then its lock waits and failures go to ``out``."""
    from jobs.worker.factory import make_worker
    from jobs.worker.runner import WorkerOptions
    from store.db import LOCK_STATS

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    failures = _FailureCount()
    logging.getLogger().addHandler(failures)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        worker = make_worker(
            executor="local",
            device="cpu",
            slots_per_gpu=1,
            cpu_slots=1,
            address=None,
            options=WorkerOptions(beat_s=1.0, stale_after_s=30.0, idle_poll_s=0.5),
        )
        worker.serve()
    except SystemExit:
        pass
    except Exception as exc:  # a worker that cannot even start is a failure
        failures.messages.append(f"{type(exc).__name__}: {str(exc)[:160]}")
    finally:
        out.write_text(
            json.dumps(
                {
                    "role": "worker",
                    "waits": list(LOCK_STATS.recent_waits_s),
                    "ops": len(LOCK_STATS.recent_waits_s),
                    "failed": len(failures.messages),
                    "failures": failures.messages[:20],
                }
            )
        )


def _jobs_page_reads(path: Path, token: str) -> None:
    from store import jobs as store_jobs
    from store import users

    jobs = store_jobs.list_jobs(path=path)
    store_jobs.alive_workers(path=path)
    running = jobs[jobs.status == "running"]
    if len(running):
        store_jobs.job_log(running.job_id.iloc[0], path=path)
    users.validate_session(token, path=path)


def _result_page_reads(path: Path, token: str) -> None:
    from store import runs as store_runs
    from store import studies as store_studies
    from store import users

    studies = store_runs.list_studies(path=path)
    ids = studies.study_id.tolist()
    store_runs.confusion_counts(ids, path=path)
    store_runs.joint_predictions(ids, path=path)
    store_runs.run_group_counts(ids, path=path)
    if ids:
        store_studies.study_card(ids[0], path=path)
    users.validate_session(token, path=path)


def run_reader(kind: str, out: Path, seconds: float, period_s: float, token: str) -> None:
    """Refresh a page's reads every ``period_s`` for ``seconds``; record waits and failures."""
    from store.db import LOCK_STATS, default_store_path

    path = default_store_path()
    reads = _jobs_page_reads if kind == "jobs" else _result_page_reads
    deadline = time.monotonic() + seconds
    failures: list[str] = []
    refreshes, latencies = 0, []
    while time.monotonic() < deadline:
        started = time.monotonic()
        try:
            reads(path, token)
        except Exception as exc:  # every failure is what we count
            failures.append(f"{type(exc).__name__}: {str(exc)[:160]}")
        latencies.append(time.monotonic() - started)
        refreshes += 1
        time.sleep(max(0.0, period_s - (time.monotonic() - started)))
    out.write_text(
        json.dumps(
            {
                "role": f"reader ({kind} page)",
                "waits": list(LOCK_STATS.recent_waits_s),
                "ops": len(LOCK_STATS.recent_waits_s),
                "refreshes": refreshes,
                "latencies": latencies,
                "failed": len(failures),
                "failures": failures[:20],
            }
        )
    )


def _percentiles(values: list[float]) -> str:
    if not values:
        return "– / –"
    p50, p99 = np.percentile(np.asarray(values) * 1000, [50, 99])
    return f"{p50:.1f} / {p99:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    # The Jobs page refreshes every 2 s (pages/queue.py); result pages re-read every 10 s,
    # so result readers at 2 s are five times harsher than one open page.
    parser.add_argument("--period-s", type=float, default=2.0)
    parser.add_argument("--studies", type=int, default=6)
    parser.add_argument("--role", default="parent", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--token", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "worker":
        run_worker(args.out)
        return
    if args.role in ("jobs", "results"):
        run_reader(args.role, args.out, args.seconds, args.period_s, args.token)
        return
    soak(args.seconds, args.period_s, args.studies)


def soak(seconds: float, period_s: float, n_studies: int) -> None:
    """Run the soak and print its table."""
    from engine.config import StudySpec
    from engine.datasets import prepare_dataset
    from store import jobs as store_jobs
    from store import sign_in as store_sign_in
    from store import users
    from store.db import init_schema

    home = Path(tempfile.mkdtemp(prefix="sg-soak-"))
    store = home / "softgrade.duckdb"
    init_schema(store)
    spec = StudySpec.from_dict(STUDY)
    prepare_dataset(spec.dataset, spec.image_size, home / "cache")  # not part of the soak
    users.add_user("reader", "viewer", "reader password", path=store)
    _, token = store_sign_in.sign_in("reader", "reader password", path=store)
    for i in range(n_studies):
        store_jobs.enqueue_job({**spec.to_dict(), "name": f"soak {i}"}, path=store)
    env = {**os.environ, "SOFTGRADE_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    me = [sys.executable, str(Path(__file__).resolve())]
    procs, outs = [], []

    def start(role: str) -> None:
        out = home / f"{role}-{len(outs)}.json"
        outs.append(out)
        procs.append(
            subprocess.Popen(
                [*me, "--role", role, "--out", str(out), f"--token={token}"]
                + ["--seconds", str(seconds), "--period-s", str(period_s)],
                cwd=REPO,
                env=env,
                stderr=(home / f"{role}-{len(outs)}.log").open("w"),
            )
        )

    # Warm up: both workers started and training before the measured minute begins.
    for _ in range(2):
        start("worker")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        time.sleep(1.0)
        jobs = store_jobs.list_jobs(path=store)
        if (jobs.status == "running").sum() >= 2:
            break
    else:
        print("warning: the workers did not both start a job within 300 s")
    warm_at = time.monotonic()
    print(
        f"both workers training after {warm_at - deadline + 300:.0f} s; measuring {seconds:.0f} s"
    )
    for role in ("jobs", "jobs", "results", "results"):
        start(role)
    time.sleep(seconds)
    for proc in procs[:2]:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        proc.wait(timeout=120)
    wall = time.monotonic() - warm_at
    reports = [json.loads(out.read_text()) for out in outs if out.exists()]
    _print_report(reports, store, wall, home)


def _print_report(reports: list[dict], store: Path, wall: float, home: Path) -> None:
    from store import jobs as store_jobs
    from store.db import connect

    with connect(store, read_only=True) as con:
        runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
        epochs = con.execute("SELECT count(*) FROM epoch_metrics").fetchone()[0]
    jobs = store_jobs.list_jobs(path=store)
    print(f"store {store}, {wall:.0f} s; logs in {home}")
    print(f"runs stored {runs} ({epochs} epoch rows); jobs: {jobs.status.value_counts().to_dict()}")
    print(
        "| process | store opens | page refreshes | failed | lock wait p50 / p99 (ms) "
        "| refresh time p50 / p99 (ms) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for r in reports:
        print(
            f"| {r['role']} | {r['ops']} | {r.get('refreshes', '–')} | {r['failed']} | "
            f"{_percentiles(r['waits'])} | {_percentiles(r.get('latencies', []))} |"
        )
    for role in ("worker", "reader"):
        waits = [w for r in reports if r["role"].startswith(role) for w in r["waits"]]
        failed = sum(r["failed"] for r in reports if r["role"].startswith(role))
        print(
            f"all {role}s: {len(waits)} opens, {failed} failed, lock wait p50/p99 "
            f"{_percentiles(waits)} ms, max {max(waits, default=0) * 1000:.0f} ms"
        )
    for r in reports:
        for failure in r["failures"]:
            print(f"  {r['role']}: {failure}")


if __name__ == "__main__":
    main()
