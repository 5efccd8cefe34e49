"""Command line: ``python -m jobs {run,submit,status,cancel,worker,...}``.

- ``run STUDY.yaml``: validate, enqueue and run the study in the foreground.
- ``submit STUDY.yaml``: validate and enqueue for a running worker.
- ``status``: workers and jobs.
- ``cancel JOB``: stop a job at its next epoch boundary, keeping finished runs.
- ``worker``: the daemon (``--slots-per-gpu K``, ``--processes-per-gpu P``, ``--cpu-slots N``,
  ``--threads-per-slot T``, ``--executor``, ``--max-retries R`` for Ray).
- ``up``: the Streamlit app on 127.0.0.1 (``--host`` beyond it, with accounts only), and a
  worker whenever none is alive.
- ``users {add,list,remove,set-role,disable,enable,password}``: the lab's accounts.
- ``study ID``: a study's card (who launched it, code and library versions, devices).
- ``backup [-o FILE]``: a consistent copy of the store, safe while the worker runs.
- ``import PATH``: check a folder of films (every row, every film) and register it as a
  dataset (``--labels CSV``, ``--name``, ``--check`` only reports, ``--skip-bad`` registers
  the good films and keeps the report, ``--detector latest|classical|KEY`` picks the knee
  detector).
- ``up --kiosk --study ID [--method M]``: only Grade a film, the study and method fixed;
  ``up --demo demo.zip``: the same kiosk on a demo bundle, without the lab's store.
- ``export-demo STUDY -o demo.zip``: a study's models and example films for a laptop.
- ``import-study FILE``: load an exported study bundle into the store (``reference``: the
  bundled 20-seed reference study); importing it again changes nothing.
- ``export STUDY_ID -o study.zip``: the study's complete seeds as one bundle that
  ``import-study`` loads into any store (``jobs/cli/results_commands.py``).
- ``import-results FILE [--name NAME]``: per-seed metrics or per-film predictions trained by
  another tool (CSV or Parquet) become a study marked "imported: no training provenance"
  (docs/import-results.md); ``import-results --mlflow-uri URI --experiment NAME [--map
  KEY=SOURCE]``: an MLflow experiment's runs, by a small mapping (the ``mlflow`` extra);
  ``export STUDY_ID --mlflow-uri URI``: a study's selected runs to MLflow.
- ``detector train [--phantom N] [--dataset NAME_OR_ID]``: train a YOLOv8n knee detector on
  phantom films and/or a dataset's reviewed boxes; ``detector list``: the trained ones.
- ``stats STUDY_ID [--metric AMAE] [-o FILE.csv|.parquet|.tex]``: paired comparisons of the
  study's methods (corrected resampled t, Wilcoxon, effect sizes); ``stats --list``: the
  studies.
- ``report STUDY_ID [STUDY_ID ...] -o report.html [--pdf] [--latex-dir DIR]``: the studies'
  analysis as one self-contained HTML file that opens offline, and its tables as LaTeX
  (``jobs/cli/report_command.py``).
- ``calibrate-inference -o DIR``: the phantom as referee of the statistics: K phantom
  datasets, S seeds each, every interval's coverage of the true difference and every test's
  type-I error (``jobs/cli/referee_command.py``).
- ``methods [--json]``: the training methods a study file can name, by family, with their
  search spaces; ``metrics [--json]``: the metrics, the primary and the selection metric
  (``jobs/cli/catalogue_command.py``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pandas as pd

from engine.config import SpecError, StudySpec
from engine.seeds import SeedDesignError, seeds_from_text
from jobs.cli import (
    catalogue_command,
    lab_commands,
    referee_command,
    report_command,
    results_commands,
    stats_command,
)
from jobs.cli.arg_types import whole_from
from jobs.cli.cli_logging import log_file, native_stderr_to, route_logs
from jobs.cli.lab_commands import os_user
from jobs.services import demo_bundle
from jobs.services.access import BEHIND_PROXY, SERVED_HOST_ENV, refuse_unprotected_host
from jobs.services.detector import add_commands as add_detector_commands
from jobs.worker.settings import DEFAULT_MAX_RETRIES, DEFAULT_THREADS_PER_SLOT
from store import jobs as store_jobs
from store.db import STORE_ENV, StoreError, default_store_path, init_schema, softgrade_home
from store.users import has_accounts

log = logging.getLogger("jobs")


def _open_store() -> Path:
    """The store, set up or upgraded (`init_schema` refuses a newer or damaged file)."""
    path = default_store_path()
    init_schema(path)
    return path


def _study_of(args: argparse.Namespace) -> StudySpec:
    """The study file, its seeds replaced by ``--seeds`` when given."""
    return StudySpec.from_file(Path(args.study), seeds=args.seeds)


def cmd_submit(args: argparse.Namespace) -> int:
    """Validate a study file and enqueue it."""
    spec = _study_of(args)
    path = _open_store()
    job_id = store_jobs.enqueue_job(spec.to_dict(), request_id=str(uuid.uuid4()), path=path)
    print(f"queued {job_id} ({spec.name}); a running worker will pick it up")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Validate, enqueue and run one study in the foreground; exit 1 unless it succeeds."""
    from jobs.worker.factory import make_worker

    spec = _study_of(args)
    path = _open_store()
    job_id = store_jobs.enqueue_job(spec.to_dict(), request_id=str(uuid.uuid4()), path=path)
    print(f"running {job_id} ({spec.name}) with store {path}")
    worker = make_worker(
        executor=args.executor,
        device=spec.device,
        slots_per_gpu=args.slots_per_gpu,
        processes_per_gpu=args.processes_per_gpu,
        cpu_slots=args.cpu_slots,
        threads_per_slot=args.threads_per_slot,
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
    from engine.analysis.compare import metrics_table, per_run_metrics
    from engine.analysis.metrics import MAE, PRIMARY_METRIC, QWK
    from store.runs import confusion_counts

    job = store_jobs.get_job(job_id, path=path)
    lines = [f"job {job_id}: {job.status}, {job.runs_done}/{job.runs_total} runs"]
    per_run = per_run_metrics(confusion_counts([job.study_id], path=path))
    if not per_run.empty:
        table = metrics_table(per_run)
        shown = [f"{PRIMARY_METRIC}_mean", f"{PRIMARY_METRIC}_std", f"{QWK}_mean", f"{MAE}_mean"]
        cols = ["task", "method", "n_seeds", *dict.fromkeys(shown)]
        lines.append("test metrics of the selected runs (mean over seeds):")
        lines.append(table[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return "\n".join(lines)


def cmd_status(args: argparse.Namespace) -> int:
    """Print workers and jobs."""
    from jobs.services.describe import format_devices

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
        return 0
    print(status_table(jobs))
    return 0


def status_table(jobs: pd.DataFrame) -> str:
    """One line per job under a header: job id, study id (what `stats`, `export` and the
    other study commands take), status, runs and the study's name."""
    rows = [("JOB", "STUDY", "STATUS", "RUNS", "NAME")]
    for _, j in jobs.iterrows():
        total = "?" if pd.isna(j.runs_total) else int(j.runs_total)
        rows.append((j.job_id, j.study_id, j.status, f"{j.runs_done}/{total}", j.study_name))
    widths = [max(len(str(r[i])) for r in rows) for i in range(4)]
    return "\n".join(
        "  ".join(str(c).ljust(w) for c, w in zip(r[:4], widths, strict=True)) + f"  {r[4]}"
        for r in rows
    )


def cmd_cancel(args: argparse.Namespace) -> int:
    """Request cancellation of a job."""
    status = store_jobs.request_cancel(args.job, path=default_store_path())
    if status == "running":
        print(f"{args.job}: cancel requested; it stops at the next epoch boundary")
    else:
        print(f"{args.job}: {status}")
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    """Queue a cancelled job again (the Jobs page's Resume button: the same lab verb)."""
    from jobs.services import lab
    from jobs.services.access import LOCAL_ACCOUNT

    lab.resume_job(LOCAL_ACCOUNT, args.job, path=default_store_path())
    print(f"{args.job}: queued again; a worker resumes it at its first unfinished run")
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    """Run the worker daemon until interrupted."""
    from jobs.worker.factory import make_worker
    from jobs.worker.runner import WorkerOptions

    _open_store()
    worker = make_worker(
        executor=args.executor,
        device=args.device,
        slots_per_gpu=args.slots_per_gpu,
        processes_per_gpu=args.processes_per_gpu,
        cpu_slots=args.cpu_slots,
        threads_per_slot=args.threads_per_slot,
        address=args.address,
        max_retries=args.max_retries,
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


def cmd_import(args: argparse.Namespace) -> int:
    """Check a folder of films and register it; the report is one table and a summary.

    Exit status: 0 clean (or registered); 1 problems found (``--check``) or bad films and no
    ``--skip-bad`` (nothing registered); 2 the folder, CSV or layout cannot be read at all.
    """
    from engine.films import check_import
    from jobs.services.importer import ImportRefused, import_detector, register_import

    # The report's notes name the detector; an unknown key is one message (exit 2).
    detector = import_detector(args.detector)
    # Decoders (libjpeg in GDCM) and the decoding processes write to descriptor 2 themselves:
    # that goes to the log file, the report and progress to the terminal.
    line = ProgressLine(sys.stderr)
    try:
        with native_stderr_to(log_file(softgrade_home()), f"import {args.path}"):
            report = check_import(
                Path(args.path),
                labels_csv=Path(args.labels) if args.labels else None,
                layout=args.layout,
                layout_split=args.layout_split,
                workers=args.workers,
                progress=line,
                detector=detector,
                rows_progress=line.rows,  # a large labels CSV takes seconds before any film
            )
    except OSError as exc:  # e.g. a folder this user may not read
        raise ValueError(f"{args.path} cannot be read ({exc.strerror or exc})") from exc
    print(format_report(report))
    if args.check:
        return 0 if report.clean else 1
    if report.n_errors and not args.skip_bad:
        print(
            "nothing registered: fix the errors above and import again, or pass --skip-bad "
            f"to register the {len(report.films)} good film(s) and keep this report"
        )
        return 1
    _open_store()
    try:
        done = register_import(report, name=args.name, skip_bad=args.skip_bad, by=os_user())
    except ImportRefused as exc:
        print(f"nothing registered: {exc}")
        return 1
    print(
        f"registered {done.dataset_id} ({args.name or report.root.name}): {done.n_films} "
        f"film(s), {done.n_left_out} left out; import {done.import_id} keeps the report"
    )
    params = ", ".join(f"{k}: {v}" for k, v in done.spec.params.items())
    print(f"use it in a study file as  dataset: {{kind: folder, {params}}}")
    return 0


class ProgressLine:
    """Films checked so far and the rate, on one line of a terminal (or every few seconds
    as plain lines when the stream is a file)."""

    def __init__(self, stream: Any, every_s: float = 2.0) -> None:
        self.stream = stream
        self.every_s = every_s
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.last = 0.0

    def __call__(self, done: int, total: int, rate: float) -> None:
        """Show (done, total, films per second), throttled; always the last one."""
        now = time.monotonic()
        final = done == total
        if not final and now - self.last < (0.2 if self.tty else self.every_s):
            return
        self.last = now
        self._show(f"checked {done}/{total} films ({rate:.0f} films/s)", final)

    def rows(self, phase: str, done: int, total: int) -> None:
        """Show (phase, rows done, rows in all) as a labels CSV is read and checked
        (`engine.films.RowsProgress`), throttled the same way; always the last one."""
        now = time.monotonic()
        final = done == total
        if not final and now - self.last < (0.2 if self.tty else self.every_s):
            return
        self.last = now
        self._show(f"{phase}: {done}/{total} rows", final)

    def _show(self, text: str, final: bool) -> None:
        if self.tty:
            self.stream.write("\r" + text + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


def format_report(report: Any, width: int = 100) -> str:
    """The import report as one table (file, row, problem, what to do) and a summary; names
    and cells with control characters are shown escaped (`engine.films.escaped`)."""
    import textwrap

    from engine.films import escaped

    lines = []
    if not report.problems.empty:
        # Escaped: a file name, cell or tag may hold a terminal's escape codes or a U+202E.
        rows = [
            (
                escaped(p.file) or "-",
                "" if pd.isna(p.row) else str(int(p.row)),
                ("warning: " if p.severity == "warning" else "") + escaped(p.problem),
                escaped(p.action),
            )
            for p in report.problems.itertuples()
        ]
        file_w = min(40, max(4, *(len(r[0]) for r in rows)))
        row_w = max(3, *(len(r[1]) for r in rows))
        text_w = max(30, (width - file_w - row_w - 6) * 3 // 5)
        todo_w = max(20, width - file_w - row_w - text_w - 6)
        head = ("file", "row", "problem", "what to do")
        lines.append(_table_line(head, (file_w, row_w, text_w, todo_w)))
        lines.append(
            _table_line(
                tuple("-" * w for w in (file_w, row_w, text_w, todo_w)),
                (file_w, row_w, text_w, todo_w),
            )
        )
        for file, row, problem, action in rows:
            parts = [
                textwrap.wrap(file, file_w) or [""],
                [row],
                textwrap.wrap(problem, text_w) or [""],
                textwrap.wrap(action, todo_w) or [""],
            ]
            for i in range(max(len(p) for p in parts)):
                cells = tuple(p[i] if i < len(p) else "" for p in parts)
                lines.append(_table_line(cells, (file_w, row_w, text_w, todo_w)))
    split = f", layout split {report.layout_split}" if report.layout_split else ""
    lines.append(
        f"{escaped(str(report.root))} ({report.layout} layout{split}): {report.n_rows} row(s), "
        f"{report.n_files} file(s) decoded in {report.checked_s:.1f} s; "
        f"{len(report.films)} good film(s), {len(report.left_out)} left out; "
        f"{report.n_errors} error(s), {report.n_warnings} warning(s)"
    )
    lines += [f"note: {escaped(n)}" for n in report.notes]
    return "\n".join(lines)


def _table_line(cells: tuple[str, ...], widths: tuple[int, ...]) -> str:
    file, row, problem, action = cells
    w = widths
    return f"{file:<{w[0]}}  {row:>{w[1]}}  {problem:<{w[2]}}  {action:<{w[3]}}".rstrip()


# `import-study reference` loads the reference study installed with the package.
REFERENCE_WORD = "reference"


def cmd_import_study(args: argparse.Namespace) -> int:
    """Load a study bundle into the store (idempotent)."""
    from store.bundle import REFERENCE_STUDY, import_study

    path = _open_store()
    bundle = REFERENCE_STUDY if args.file == REFERENCE_WORD else Path(args.file)
    done = import_study(bundle, path=path)
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

    if args.kiosk or args.demo:
        return cmd_up_kiosk(args)
    path = _open_store()
    # Behind a reverse proxy the app listens on loopback but people reach it from anywhere.
    served = BEHIND_PROXY if args.behind_proxy else args.host
    refusal = refuse_unprotected_host(served, has_accounts=has_accounts(path=path))
    if refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    print(f"SoftGrade on http://{args.host}:{args.port} (store {path}); Ctrl+C stops both")
    # SIGTERM (e.g. from a service manager) must also stop the app and the worker.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    children: list[subprocess.Popen] = []
    try:
        app_proc = subprocess.Popen(_app_command(args), env={**os.environ, SERVED_HOST_ENV: served})
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


def _app_command(args: argparse.Namespace) -> list[str]:
    """Streamlit serving ``app.py`` on ``args.host``:``args.port``, as `up` runs it."""
    app = Path(__file__).resolve().parents[2] / "app.py"
    return [
        sys.executable,
        "-m",
        "jobs.services.serve_app",
        "run",
        str(app),
        "--server.address",
        args.host,
        "--server.port",
        str(args.port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        # A lab tool is not deployed from its menu: no "Deploy" button.
        "--client.toolbarMode",
        "minimal",
        # Users do not edit the code while they use the app; watching the checkout
        # (.venv included) exhausts inotify watches and costs CPU the worker needs.
        "--server.fileWatcherType",
        "none",
        # Grade a film's uploads are held in memory only; cap their size.
        "--server.maxUploadSize",
        str(args.max_upload_mb),
    ]


def cmd_up_kiosk(args: argparse.Namespace) -> int:
    """Serve only Grade a film: on a study of the store (``--kiosk --study``) or on a demo
    bundle unpacked into a fresh temporary home (``--demo``). No worker, no sign-in: the
    kiosk can only grade films, so it may be served beyond loopback without accounts."""
    import shutil
    import signal
    import subprocess

    from engine.films import escaped  # a bundle's study name may hold escape codes
    from jobs.services.demo_bundle import fresh_demo_home
    from jobs.services.kiosk import KioskSettings, check_kiosk_study

    home: Path | None = None
    env = dict(os.environ)
    if args.demo:
        if args.study or args.method:
            raise ValueError("--demo FILE carries its own study and method; leave --study out")
        home, bundle = fresh_demo_home(args.demo)
        settings = KioskSettings(demo_dir=bundle.folder)
        env["SOFTGRADE_HOME"] = str(home)
        env.pop(STORE_ENV, None)  # the demo's store is the one in its fresh home
        seeds = len(bundle.manifest["seeds"])
        what = (
            f"the demo bundle {args.demo} ({escaped(bundle.manifest['study']['name'])}, "
            f"{bundle.method}, {seeds} seed{'s' * (seeds != 1)}; unpacked in {home})"
        )
    else:
        if not args.study:
            raise ValueError(
                "--kiosk needs --study ID, the study whose models grade (`python -m jobs "
                "status` lists jobs and their studies), or --demo FILE"
            )
        path = _open_store()
        name, method = check_kiosk_study(args.study, args.method, path=path)
        settings = KioskSettings(study_id=args.study, method=args.method)
        what = f"“{name}” ({args.study}), {method}, store {path}"
    print(
        f"SoftGrade kiosk (Grade a film only) on http://{args.host}:{args.port}: {what}",
        flush=True,
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app_proc: subprocess.Popen | None = None
    try:
        # Visitors see one plain sentence for an error, never a traceback (it is logged).
        command = [*_app_command(args), "--client.showErrorDetails", "none"]
        app_proc = subprocess.Popen(
            command, env={**env, SERVED_HOST_ENV: args.host, **settings.env()}
        )
        return app_proc.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        if app_proc is not None and app_proc.poll() is None:
            app_proc.terminate()
            app_proc.wait(timeout=15)
        if home is not None:
            shutil.rmtree(home, ignore_errors=True)


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
        "--threads-per-slot",
        str(args.threads_per_slot),
        "--max-retries",
        str(args.max_retries),
    ]


def _program_name() -> str:
    """How the user called the CLI: the installed ``softgrade`` script or ``python -m jobs``."""
    called = Path(sys.argv[0]).name if sys.argv else ""
    return "softgrade" if called.startswith("softgrade") else "python -m jobs"


def build_parser() -> argparse.ArgumentParser:
    """The CLI's argument parser."""
    parser = argparse.ArgumentParser(
        prog=_program_name(),
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
        p.add_argument(
            "--seeds",
            type=_seeds_option,
            default=None,
            help="replace the file's seeds: a count (20), a list (0,3,7) or a factorial "
            "design of splits x inits (10x2: every split trained from every init, so "
            "`stats --components` can separate their variance)",
        )
        p.set_defaults(func=func)
        if name == "run":
            _add_executor_args(p, with_device=False)
    sub.add_parser("status", help="show workers and jobs").set_defaults(func=cmd_status)
    p = sub.add_parser("cancel", help="cancel a job (finished runs are kept)")
    p.add_argument("job")
    p.set_defaults(func=cmd_cancel)
    p = sub.add_parser("resume", help="queue a cancelled job again (finished runs are kept)")
    p.add_argument("job")
    p.set_defaults(func=cmd_resume)
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
    p = sub.add_parser("import", help="check a folder of films and register it as a dataset")
    p.add_argument("path", help="the folder of films")
    p.add_argument("--labels", default=None, help="labels CSV (default PATH/labels.csv)")
    p.add_argument("--name", default=None, help="the dataset's name (default: the folder's)")
    p.add_argument("--check", action="store_true", help="only report; register nothing")
    p.add_argument(
        "--skip-bad", action="store_true", help="register the good films, leave the bad out"
    )
    p.add_argument("--layout", default="auto", choices=("auto", "csv", "grade_folders", "dicom"))
    p.add_argument(
        "--layout-split",
        default="ignore",
        choices=("ignore", "test"),
        help="grade folders with train/val/test: ignore their split, or make test the test set",
    )
    p.add_argument("--workers", type=int, default=None, help="decoding processes")
    p.add_argument(
        "--detector",
        default="latest",
        help="knee detector: latest (the newest trained one in SOFTGRADE_HOME/detectors; "
        "classical when none is trained), classical, or a trained detector's key",
    )
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("import-study", help="load an exported study bundle into the store")
    p.add_argument(
        "file",
        help=f"a study bundle (.zip), or '{REFERENCE_WORD}' for the bundled 20-seed reference",
    )
    p.set_defaults(func=cmd_import_study)
    p = sub.add_parser("up", help="start the app and a worker")
    _add_executor_args(p, with_device=True)
    p.add_argument("--port", type=int, default=8501)
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to serve on; beyond 127.0.0.1 (e.g. 0.0.0.0) needs accounts",
    )
    p.add_argument(
        "--behind-proxy",
        action="store_true",
        help="people reach the app through a reverse proxy: sign-in is required as beyond "
        "loopback, even though the app listens on --host 127.0.0.1, and each browser's "
        "address (sign-in limits, audit log) is the one the proxy appends to X-Forwarded-For "
        "(SOFTGRADE_PROXY_HOPS=N when N proxies append to it)",
    )
    p.add_argument(
        "--max-upload-mb", type=int, default=64, help="largest film Grade a film accepts (MB)"
    )
    p.add_argument(
        "--kiosk",
        action="store_true",
        help="serve only Grade a film, with --study (and --method) fixed; no sign-in, no worker",
    )
    p.add_argument("--study", default=None, help="the kiosk's study (with --kiosk)")
    p.add_argument(
        "--method", default=None, help="the kiosk's method (default: best on validation)"
    )
    p.add_argument(
        "--demo",
        default=None,
        metavar="FILE",
        help="open the kiosk on a demo bundle (from export-demo) in a fresh temporary folder",
    )
    p.set_defaults(func=cmd_up)
    demo_bundle.add_commands(sub)
    lab_commands.add_commands(sub)
    stats_command.add_commands(sub)
    report_command.add_commands(sub)
    results_commands.add_commands(sub)
    catalogue_command.add_commands(sub)
    referee_command.add_commands(sub)
    add_detector_commands(sub)
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
    p.add_argument(
        "--threads-per-slot",
        type=whole_from(1),
        default=DEFAULT_THREADS_PER_SLOT,
        help="torch CPU threads of each CPU slot, on every executor (CPU results depend on it; "
        "the study card records it)",
    )
    if with_device:
        p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
        p.add_argument("--address", default=None, help="Ray cluster address (--executor ray)")
        p.add_argument(
            "--max-retries",
            type=whole_from(0),
            default=DEFAULT_MAX_RETRIES,
            help="--executor ray: how often a run whose actor died (lost node, out of memory) "
            "is retried on a fresh actor before the job fails",
        )


def _seeds_option(text: str) -> int | list[int] | dict[str, int]:
    """An argparse type: ``--seeds`` (`engine.seeds.seeds_from_text`), one line on error."""
    try:
        return seeds_from_text(text)
    except SeedDesignError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    """Entry point; bad input ends with one clear message and exit status 2."""
    # SoftGrade's own records on the terminal; libraries' (pydicom's tracebacks...) in a file.
    route_logs(log_file(softgrade_home()))
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (SpecError, StoreError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
