"""Command line: ``python -m jobs {run,submit,status,cancel,worker}``.

- ``run STUDY.yaml``: validate, enqueue and run the study in the foreground.
- ``submit STUDY.yaml``: validate and enqueue for a running worker.
- ``status``: workers and jobs.
- ``cancel JOB``: stop a job at its next epoch boundary, keeping finished runs.
- ``worker``: the daemon (``--slots-per-gpu K``, ``--processes-per-gpu P``, ``--cpu-slots N``,
  ``--executor``).
- ``up``: the Streamlit app on 127.0.0.1, and a worker whenever none is alive.
- ``import-study FILE``: load an exported study bundle (e.g. the bundled reference study,
  ``examples/reference-study.zip``) into the store; importing it again changes nothing.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from engine.config import SpecError, StudySpec
from store import jobs as store_jobs
from store.db import StoreError, check_schema, default_store_path, init_schema

log = logging.getLogger("jobs")


def load_study(path: Path) -> StudySpec:
    """Read and validate a study file; SpecError names the field at fault."""
    if not path.is_file():
        raise SpecError(f"study file {path} does not exist")
    try:
        raw: Any = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise SpecError(f"study file {path} is not valid YAML: {exc}") from exc
    return StudySpec.from_dict(raw)


def _open_store() -> Path:
    path = default_store_path()
    if path.exists():
        check_schema(path)
    init_schema(path)
    return path


def cmd_submit(args: argparse.Namespace) -> int:
    """Validate a study file and enqueue it."""
    spec = load_study(Path(args.study))
    path = _open_store()
    job_id = store_jobs.enqueue_job(spec.to_dict(), request_id=str(uuid.uuid4()), path=path)
    print(f"queued {job_id} ({spec.name}); a running worker will pick it up")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Validate, enqueue and run one study in the foreground; exit 1 unless it succeeds."""
    from jobs.worker import make_worker

    spec = load_study(Path(args.study))
    path = _open_store()
    job_id = store_jobs.enqueue_job(spec.to_dict(), request_id=str(uuid.uuid4()), path=path)
    print(f"running {job_id} ({spec.name}) with store {path}")
    worker = make_worker(
        executor=args.executor,
        device=spec.device,
        slots_per_gpu=args.slots_per_gpu,
        processes_per_gpu=args.processes_per_gpu,
        cpu_slots=args.cpu_slots,
        address=None,
    )
    try:
        while store_jobs.get_job(job_id, path=path).status in ("queued", "running"):
            if not worker.run_once():
                break
    finally:
        worker.close()
    job = store_jobs.get_job(job_id, path=path)
    print(_summary(job_id, path))
    return 0 if job.status == "succeeded" else 1


def _summary(job_id: str, path: Path) -> str:
    from engine.compare import metrics_table, per_run_metrics
    from store.runs import confusion_counts

    job = store_jobs.get_job(job_id, path=path)
    lines = [f"job {job_id}: {job.status}, {job.runs_done}/{job.runs_total} runs"]
    per_run = per_run_metrics(confusion_counts([job.study_id], path=path))
    if not per_run.empty:
        table = metrics_table(per_run)
        cols = ["task", "method", "n_seeds", "amae_mean", "amae_std", "qwk_mean", "mae_mean"]
        lines.append("test metrics of the selected runs (mean over seeds):")
        lines.append(table[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return "\n".join(lines)


def cmd_status(args: argparse.Namespace) -> int:
    """Print workers and jobs."""
    from engine.plots import format_devices

    path = default_store_path()
    if not path.exists():
        print(f"no store at {path} yet")
        return 0
    alive = store_jobs.alive_workers(path=path)
    print(f"store: {path}")
    print(f"workers alive: {len(alive)}")
    for _, w in alive.iterrows():
        devices = format_devices(json.loads(w.devices))
        print(f"  {w.worker_id} pid {w.pid} on {w.hostname}: {w.slots} slot(s) on {devices}")
    jobs = store_jobs.list_jobs(path=path)
    if jobs.empty:
        print("no jobs")
    for _, j in jobs.iterrows():
        total = "?" if pd.isna(j.runs_total) else int(j.runs_total)
        print(f"{j.job_id}  {j.status:<10} {j.runs_done}/{total} runs  {j.study_name}")
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    """Request cancellation of a job."""
    status = store_jobs.request_cancel(args.job, path=default_store_path())
    if status == "running":
        print(f"{args.job}: cancel requested; it stops at the next epoch boundary")
    else:
        print(f"{args.job}: {status}")
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    """Run the worker daemon until interrupted."""
    from jobs.runner import WorkerOptions
    from jobs.worker import make_worker

    _open_store()
    worker = make_worker(
        executor=args.executor,
        device=args.device,
        slots_per_gpu=args.slots_per_gpu,
        processes_per_gpu=args.processes_per_gpu,
        cpu_slots=args.cpu_slots,
        address=args.address,
        options=WorkerOptions(beat_s=args.beat_s, stale_after_s=args.stale_after_s),
    )
    import signal

    # SIGTERM stops the worker cleanly: slots are closed and the worker is marked stopped
    # (a running job is left to be requeued and resumed by the next worker).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        worker.serve()
    except KeyboardInterrupt:
        log.info("worker stopped")
    return 0


def cmd_import_study(args: argparse.Namespace) -> int:
    """Load a study bundle into the store (idempotent)."""
    from store.bundle import import_study

    path = _open_store()
    done = import_study(Path(args.file), path=path)
    seeds = f"{len(done.seeds)} seed{'s' * (len(done.seeds) != 1)}"
    if done.created:
        print(f"imported “{done.name}” ({done.study_id}): {done.runs} runs, {seeds}, into {path}")
    else:
        print(f"“{done.name}” ({done.study_id}) is already in {path}; nothing changed")
    return 0


# How often `up` checks that a worker serves its store.
UP_CHECK_S = 5.0


def cmd_up(args: argparse.Namespace) -> int:
    """Serve the Streamlit app on 127.0.0.1 and keep a worker running for its store.

    A worker is started whenever none is alive: at once, or later if the one alive at start
    (e.g. from a previous ``up`` still shutting down) stops or dies.
    """
    import signal
    import subprocess

    path = _open_store()
    app = Path(__file__).resolve().parent.parent / "app.py"
    print(f"SoftGrade on http://127.0.0.1:{args.port} (store {path}); Ctrl+C stops both")
    # SIGTERM (e.g. from a service manager) must also stop the app and the worker.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    children: list[subprocess.Popen] = []
    try:
        app_proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                str(app),
                "--server.address",
                "127.0.0.1",
                "--server.port",
                str(args.port),
                "--server.headless",
                "true",
                "--browser.gatherUsageStats",
                "false",
                # Users do not edit the code while they use the app; watching the checkout
                # (.venv included) exhausts inotify watches and costs CPU the worker needs.
                "--server.fileWatcherType",
                "none",
            ]
        )
        children.append(app_proc)
        worker: subprocess.Popen | None = None
        while app_proc.poll() is None:
            if (worker is None or worker.poll() is not None) and store_jobs.alive_workers(
                path=path
            ).empty:
                if worker is not None:
                    log.warning(
                        "the worker exited (status %s); starting another", worker.returncode
                    )
                worker = subprocess.Popen(_worker_command(args))
                children.append(worker)
            time.sleep(UP_CHECK_S)
        return app_proc.returncode
    except KeyboardInterrupt:
        return 0
    finally:
        for child in children:
            if child.poll() is None:
                child.terminate()
        for child in children:
            child.wait(timeout=15)


def _worker_command(args: argparse.Namespace) -> list[str]:
    """`up`'s own choices of executor and slots, passed on to its worker."""
    address = ["--address", args.address] if args.address else []
    return [
        sys.executable,
        "-m",
        "jobs",
        "worker",
        "--executor",
        args.executor,
        *address,
        "--device",
        args.device,
        "--cpu-slots",
        str(args.cpu_slots),
        "--slots-per-gpu",
        str(args.slots_per_gpu),
        "--processes-per-gpu",
        str(args.processes_per_gpu),
    ]


def build_parser() -> argparse.ArgumentParser:
    """The CLI's argument parser."""
    parser = argparse.ArgumentParser(
        prog="python -m jobs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, func, help_text in (
        ("run", cmd_run, "run a study file in the foreground"),
        ("submit", cmd_submit, "queue a study file for the worker"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("study", help="study YAML file, e.g. studies/quick.yaml")
        p.set_defaults(func=func)
        if name == "run":
            _add_executor_args(p, with_device=False)
    sub.add_parser("status", help="show workers and jobs").set_defaults(func=cmd_status)
    p = sub.add_parser("cancel", help="cancel a job (finished runs are kept)")
    p.add_argument("job")
    p.set_defaults(func=cmd_cancel)
    p = sub.add_parser("worker", help="run the worker daemon")
    _add_executor_args(p, with_device=True)
    p.add_argument("--beat-s", type=float, default=5.0, help="heartbeat interval (seconds)")
    p.add_argument(
        "--stale-after-s",
        type=float,
        default=30.0,
        help="requeue running jobs whose worker has not beaten for this long",
    )
    p.set_defaults(func=cmd_worker)
    p = sub.add_parser("import-study", help="load an exported study bundle into the store")
    p.add_argument("file", help="a study bundle, e.g. examples/reference-study.zip")
    p.set_defaults(func=cmd_import_study)
    p = sub.add_parser("up", help="start the app and a worker")
    _add_executor_args(p, with_device=True)
    p.add_argument("--port", type=int, default=8501)
    p.set_defaults(func=cmd_up)
    return parser


def _add_executor_args(p: argparse.ArgumentParser, *, with_device: bool) -> None:
    p.add_argument("--executor", choices=("local", "inline", "ray"), default="local")
    p.add_argument(
        "--slots-per-gpu",
        type=int,
        default=0,
        help="runs trained at once on each GPU (0: chosen from free GPU memory)",
    )
    p.add_argument(
        "--processes-per-gpu",
        type=int,
        default=1,
        help="slot processes per GPU; its slots are CUDA streams of these processes",
    )
    p.add_argument("--cpu-slots", type=int, default=1, help="slot processes when no GPU")
    if with_device:
        p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
        p.add_argument("--address", default=None, help="Ray cluster address (--executor ray)")


def main(argv: list[str] | None = None) -> int:
    """Entry point; bad input ends with one clear message and exit status 2."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (SpecError, StoreError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
