"""Command line: ``python -m jobs {run,submit,status,cancel,worker,...}``.

- ``run STUDY.yaml``: validate, enqueue and run the study in the foreground.
- ``submit STUDY.yaml``: validate and enqueue for a running worker. Both take ``--seeds``
  and ``--pruner {none,asha,...}`` in place of the file's seeds and ``search.pruner``.
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
- ``sets STUDY_ID [--coverage 0.9] [--score NAME] [--per-grade] [-o FILE.csv]``: conformal
  grade sets' coverage and size per method and seed (``jobs/cli/sets_command.py``).
- ``report STUDY_ID [STUDY_ID ...] -o report.html [--pdf] [--latex-dir DIR]``: the studies'
  analysis as one self-contained HTML file that opens offline, and its tables as LaTeX
  (``jobs/cli/report_command.py``).
- ``calibrate-inference -o DIR``: the phantom as referee of the statistics: K phantom
  datasets, S seeds each, every interval's coverage of the true difference and every test's
  type-I error (``jobs/cli/referee_command.py``).
- ``calibrate-sets -o DIR``: the phantom as referee of the grade sets: each score's coverage
  on fresh films, per grade, with Monte-Carlo intervals (``jobs/cli/sets_referee_command.py``).
- ``methods [--json]``: the training methods a study file can name, by family, with their
  search spaces; ``metrics [--json]``: the metrics, the primary and the selection metric
  (``jobs/cli/catalogue_command.py``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import uuid
from pathlib import Path

import pandas as pd

from engine.config import SpecError, StudySpec
from engine.pruning import NO_PRUNER, PRUNERS
from engine.seeds import SeedDesignError, seeds_from_text
from jobs.cli import (
    catalogue_command,
    demo_command,
    import_command,
    lab_commands,
    referee_command,
    report_command,
    results_commands,
    sets_command,
    sets_referee_command,
    stats_command,
    up_command,
)
from jobs.cli.arg_types import add_executor_args, seconds_between, slot_settings
from jobs.cli.cli_logging import log_file, route_logs
from jobs.cli.cli_store import open_store
from jobs.services import label_choice
from jobs.services.detector import add_commands as add_detector_commands
from store import jobs as store_jobs
from store.db import StoreError, default_store_path, softgrade_home

log = logging.getLogger("jobs")


def _study_of(args: argparse.Namespace) -> StudySpec:
    """The study file, its seeds and pruner replaced by ``--seeds`` and ``--pruner`` when
    given, its dataset's ``label_version`` (if it names one) resolved to that version's
    labels (`jobs.services.label_choice`)."""
    spec = StudySpec.from_file(Path(args.study), seeds=args.seeds, pruner=args.pruner)
    return label_choice.with_label_version(spec, path=default_store_path())


def cmd_submit(args: argparse.Namespace) -> int:
    """Validate a study file and enqueue it."""
    spec = _study_of(args)
    path = open_store()
    job_id = store_jobs.enqueue_job(spec.to_dict(), request_id=str(uuid.uuid4()), path=path)
    print(f"queued {job_id} ({spec.name}); a running worker will pick it up")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Validate, enqueue and run one study in the foreground; exit 1 unless it succeeds."""
    from jobs.worker.factory import make_worker

    spec = _study_of(args)
    path = open_store()
    # The worker first: a device or slot setting it refuses leaves no queued job behind for
    # the next worker to run.
    worker = make_worker(
        executor=args.executor,
        device=spec.device,
        **slot_settings(args),
        address=None,
    )
    try:
        job_id = store_jobs.enqueue_job(spec.to_dict(), request_id=str(uuid.uuid4()), path=path)
    except BaseException:
        worker.close()
        raise
    print(f"running {job_id} ({spec.name}) with store {path}")
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
    lines += failed_run_lines(job.study_id, job_id, path)
    per_run = per_run_metrics(confusion_counts([job.study_id], path=path))
    if not per_run.empty:
        table = metrics_table(per_run)
        shown = [f"{PRIMARY_METRIC}_mean", f"{PRIMARY_METRIC}_std", f"{QWK}_mean", f"{MAE}_mean"]
        cols = ["task", "method", "n_seeds", *dict.fromkeys(shown)]
        lines.append("test metrics of the selected runs (mean over seeds):")
        lines.append(table[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return "\n".join(lines)


def failed_run_lines(study_id: str, job_id: str, path: Path) -> list[str]:
    """One line per failed run of a study (its exception's line), and where the rest is."""
    from store.runs import failed_runs

    failed = failed_runs([study_id], path=path)
    if failed.empty:
        return []
    lines = [f"{len(failed)} run(s) failed; the study's other runs are stored:"]
    for row in failed.head(10).itertuples():
        lines.append(
            f"  {row.task} {row.method} seed {row.seed} config {row.config_index}: {row.error_line}"
        )
    if len(failed) > 10:
        lines.append(f"  ... and {len(failed) - 10} more")
    lines.append(f"full tracebacks: softgrade status {job_id}")
    return lines


def cmd_status(args: argparse.Namespace) -> int:
    """Print workers and jobs; with a job id, that job's error and failed runs in full."""
    from jobs.services.describe import format_devices

    path = default_store_path()
    if not path.exists():
        print(f"no store at {path} yet")
        return 0
    if getattr(args, "job", None):
        return _print_job_errors(args.job, path)
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


def _print_job_errors(job_id: str, path: Path) -> int:
    """A job's status, its error and every failed run's traceback; 2 for an unknown id."""
    from store.runs import failed_runs

    try:
        job = store_jobs.get_job(job_id, path=path)
    except StoreError:
        print(f"no job {job_id!r} in {path}; `softgrade status` lists the jobs", file=sys.stderr)
        return 2
    print(f"job {job_id}: {job.status}, {job.runs_done}/{job.runs_total} runs")
    failed = failed_runs([job.study_id], path=path)
    for row in failed.itertuples():
        print(
            f"\n--- run {row.run_id}: {row.task} {row.method} seed {row.seed} config "
            f"{row.config_index} ({row.config})"
        )
        print(row.traceback.rstrip())
    if failed.empty:
        error = store_jobs.list_jobs(path=path).set_index("job_id").loc[job_id, "error"]
        if isinstance(error, str) and error.strip():
            print(error.rstrip())
    return 0


def status_table(jobs: pd.DataFrame) -> str:
    """One line per job under a header: job id, study id (what `stats`, `export` and the
    other study commands take), status, runs and the study's name."""
    rows = [("JOB", "STUDY", "STATUS", "RUNS", "NAME")]
    for _, j in jobs.iterrows():
        total = "?" if pd.isna(j.runs_total) else int(j.runs_total)
        rows.append((j.job_id, j.study_id, j.status, f"{j.runs_done}/{total}", j.study_name))
    widths = [max(len(str(r[i])) for r in rows) for i in range(4)]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(r[:4], widths, strict=True)) + f"  {r[4]}"
        for r in rows
    ]
    failed = [j for _, j in jobs.iterrows() if j.status == "failed" and isinstance(j.error, str)]
    for j in failed:
        text = j.error.strip().splitlines() or [""]
        # A bare traceback's own line is its last; a summary's is its first.
        first = text[-1] if text[0].startswith("Traceback") else text[0]
        lines.append(f"{j.job_id} failed: {first[:200]} (details: softgrade status {j.job_id})")
    return "\n".join(lines)


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

    if args.stale_after_s < 2 * args.beat_s:
        raise ValueError(
            f"--stale-after-s {args.stale_after_s:g} must be at least twice --beat-s "
            f"{args.beat_s:g}: other workers would take this worker's running job between "
            "its heartbeats"
        )
    open_store()
    worker = make_worker(
        executor=args.executor,
        device=args.device,
        **slot_settings(args),
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
        p.add_argument("study", help="study YAML file, e.g. engine/studies/quick.yaml")
        p.add_argument(
            "--seeds",
            type=_seeds_option,
            default=None,
            help="replace the file's seeds: a count (20), a list (0,3,7) or a factorial "
            "design of splits x inits (10x2: every split trained from every init, so "
            "`stats --components` can separate their variance)",
        )
        p.add_argument(
            "--pruner",
            choices=tuple(PRUNERS),
            default=None,
            help="replace the file's search.pruner: stop configurations that have already "
            f"lost at fixed epochs ({NO_PRUNER}: the paper's full search; docs/architecture.md, "
            "Pruned search)",
        )
        p.set_defaults(func=func)
        if name == "run":
            add_executor_args(p, with_device=False)
    status = sub.add_parser(
        "status", help="show workers and jobs; with a job id, that job's failed runs in full"
    )
    status.add_argument(
        "job", nargs="?", help="a job id (JOB column): print its error and failed runs' tracebacks"
    )
    status.set_defaults(func=cmd_status)
    p = sub.add_parser("cancel", help="cancel a job (finished runs are kept)")
    p.add_argument("job")
    p.set_defaults(func=cmd_cancel)
    p = sub.add_parser("resume", help="queue a cancelled job again (finished runs are kept)")
    p.add_argument("job")
    p.set_defaults(func=cmd_resume)
    p = sub.add_parser("worker", help="run the worker daemon")
    add_executor_args(p, with_device=True)
    p.add_argument(
        "--beat-s",
        type=seconds_between(0.5, 600),
        default=5.0,
        help="heartbeat interval (seconds)",
    )
    p.add_argument(
        "--stale-after-s",
        type=seconds_between(2, 86400),
        default=30.0,
        help="requeue running jobs whose worker has not beaten for this long (at least "
        "twice --beat-s, or a live worker's job is taken from it)",
    )
    p.set_defaults(func=cmd_worker)
    import_command.add_commands(sub)
    up_command.add_commands(sub)
    demo_command.add_commands(sub)
    lab_commands.add_commands(sub)
    stats_command.add_commands(sub)
    sets_command.add_commands(sub)
    report_command.add_commands(sub)
    results_commands.add_commands(sub)
    catalogue_command.add_commands(sub)
    referee_command.add_commands(sub)
    sets_referee_command.add_commands(sub)
    add_detector_commands(sub)
    return parser


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
