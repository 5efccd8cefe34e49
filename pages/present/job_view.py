"""What the Jobs page says about one job, as text: its progress bar, live numbers, how long it
ran and what a cancel did. No streamlit, so it is unit-tested."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from engine.config import StudySpec
from engine.study import plan_runs
from engine.vocab import TASKS
from jobs.services.run_costs import PLANNED_COLUMNS, TimeLeft
from pages.present.estimates import eta_seconds
from pages.present.formatting import format_duration, run_label
from pages.present.imported_text import is_imported_results


def value(row: Any, name: str) -> Any:
    """A column of a job row (a ``list_jobs`` tuple), with pandas' missing markers as None."""
    found = getattr(row, name)
    return None if found is None or pd.isna(found) else found


#: A queued job's bar while every live worker trains another job (issue 39: it said
#: "waiting for a worker" while one was busy).
QUEUED_BEHIND = "queued: the worker is busy with another job; this one starts when it is free"


def progress(job: Any, *, workers_busy: bool = False) -> tuple[float, str] | None:
    """The progress bar's fill and text; None once a job without a run plan has ended.
    ``workers_busy``: a worker is alive but every one is on another job."""
    runs_done = int(value(job, "runs_done") or 0)
    runs_total = value(job, "runs_total")
    if runs_total:
        total = int(runs_total)
        return min(1.0, runs_done / total), f"{runs_done} / {total} runs finished"
    if job.status == "queued":
        return 0.0, QUEUED_BEHIND if workers_busy else "waiting for a worker to pick it up"
    if job.status == "running":
        return 0.0, "preparing the dataset and planning runs…"
    return None


#: Result pages a study must hold something for: KL × CPPD both tasks, Attention a trained
#: model (a study of imported results has none).
NEEDS_BOTH_TASKS = ("pages/relationship.py",)
NEEDS_MODELS = ("pages/attention.py",)


def result_pages_for(
    pages: Sequence[tuple[str, str, str]], spec: Mapping[str, Any] | str | None
) -> tuple[tuple[str, str, str], ...]:
    """The result pages (path, label, icon) that can show a study of ``spec`` (its JSON or
    mapping): no KL × CPPD link for a KL-only study, no Attention link for imported results."""
    return tuple(page for page in pages if page_shows(page[0], spec))


def page_shows(page: str, spec: Mapping[str, Any] | str | None) -> bool:
    """Whether the result page ``page`` (its script's path) can show a study of ``spec``: KL ×
    CPPD needs both tasks, Attention a trained model; a spec that cannot be read is offered."""
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except ValueError:
            spec = None
    spec = spec if isinstance(spec, Mapping) else {}
    if page in NEEDS_BOTH_TASKS and not set(TASKS) <= set(spec.get("tasks") or TASKS):
        return False
    return not (page in NEEDS_MODELS and is_imported_results(spec))


def running_numbers(job: Any, measured: TimeLeft | None = None) -> str:
    """A running job's latest run, epoch, val AMAE, elapsed time and time left, in one line.

    Time left is ``measured`` (the study's own measured run costs) when given, else the
    elapsed time per finished run times the runs left."""
    runs_done = int(value(job, "runs_done") or 0)
    runs_total = value(job, "runs_total")
    elapsed = value(job, "elapsed_s")
    eta = eta_seconds(elapsed, runs_done, int(runs_total) if runs_total else None)
    if measured is not None:
        eta = measured.seconds
    amae = value(job, "latest_val_amae")
    epoch = value(job, "current_epoch")
    numbers = {
        "Latest run": run_label(value(job, "current_run")),
        "Epoch": "—" if epoch is None else str(int(epoch)),
        "Latest val AMAE": "—" if amae is None else f"{amae:.3f}",
        "Elapsed": format_duration(elapsed),
        "Time left": "estimating…" if eta is None else format_duration(eta),
    }
    return " &nbsp;·&nbsp; ".join(f"{k}: **{v}**" for k, v in numbers.items())


def time_left_basis(measured: TimeLeft | None, parallel: int) -> str:
    """Where a running job's time left comes from, in one sentence."""
    if measured is None:
        return (
            "Time left: the elapsed time per finished run times the runs left (no run of "
            "this study has a measured cost yet)."
        )
    runs = f"{measured.measured_runs} run{'s' * (measured.measured_runs != 1)}"
    units = f"{parallel} {'GPU' if not measured.device_name.startswith('CPU ') else 'slot'}"
    return (
        "Time left: each run still to train at its expected cost (training images × epoch "
        f"cap), scaled by what this study's {runs} measured on {measured.device_name} took "
        f"against theirs, shared by {units}{'s' * (parallel != 1)}."
    )


def planned_runs(spec: Mapping[str, Any], study_id: str) -> pd.DataFrame:
    """The study's planned runs: run_id, task, method, split_seed, max_epochs (the rows
    `jobs.services.run_costs.time_left` reads)."""
    plan = plan_runs(StudySpec.from_dict(dict(spec)), study_id, "cpu")
    rows = [(r.run_id, r.task, r.method, r.split_seed, r.config.max_epochs) for r in plan]
    # The planner knows no image counts: `with_train_images` adds ``n_train``.
    return pd.DataFrame(rows, columns=[c for c in PLANNED_COLUMNS if c != "n_train"])


def parallel_units(devices_json: str | None) -> int:
    """Devices a worker trains on at once: its distinct GPUs, else its CPU slots."""
    devices = json.loads(devices_json) if devices_json else []
    gpus = {d for d in devices if str(d).startswith("cuda")}
    return len(gpus) or max(len(devices), 1)


def ended_caption(job: Any, bundle: Mapping[str, Any] | None = None) -> str:
    """How long an ended job ran and when it finished: "Ran 3 min 05 s · finished …".

    Args:
        job: A ``list_jobs`` row.
        bundle: The card an imported study came with (`store.bundle.imported_card`), if any.
            A study run in parts (the reference study: two sessions 12 h apart) then says its
            compute time, the parts' time from start to last run, apart from the span from
            the first start to the last finish, which is all the job's own times give.
    """
    elapsed = value(job, "elapsed_s")
    finished = value(job, "finished_at")
    when = f"finished {finished:%Y-%m-%d %H:%M}" if finished is not None else ""
    ran = "never started" if elapsed is None else f"ran {format_duration(elapsed)}"
    parts = per_part(bundle, "wall_s_to_last_run")
    if elapsed is not None and len(parts) > 1:
        ran = (
            f"ran {format_duration(sum(parts.values()))} of compute in {len(parts)} parts "
            f"({', '.join(f'{k}: {format_duration(v)}' for k, v in parts.items())}), "
            f"spanning {format_duration(elapsed)} from the first start to the last finish"
        )
    return " · ".join(part for part in (ran, when) if part).capitalize()


def per_part(bundle: Mapping[str, Any] | None, field: str) -> dict[str, float]:
    """A bundle card's number per part (``{"seeds 0-12": 1240.5, ...}``); one part's plain
    number reads as ``{"all": value}``; missing or unreadable reads as ``{}``."""
    found = (bundle or {}).get(field)
    if isinstance(found, Mapping):
        numbers = {str(k): v for k, v in found.items() if isinstance(v, int | float)}
        return numbers if len(numbers) == len(found) else {}
    return {"all": float(found)} if isinstance(found, int | float) else {}


def runs_note(bundle: Mapping[str, Any] | None, runs_kept: int) -> str | None:
    """Why a study run in parts stored more runs than it keeps; None when they agree.

    The reference study's first part (seeds 0-12) was cancelled inside seed 13 after 1,238
    runs; the merge kept its 13 complete seeds (1,170 runs) and the second part ran seeds
    13-19 in full (630 runs): 1,868 stored, 1,800 kept.
    """
    stored = per_part(bundle, "runs_stored")
    total = int(sum(stored.values()))
    if len(stored) < 2 or total == runs_kept:
        return None
    counts = " + ".join(f"{int(n):,} ({part})" for part, n in stored.items())
    return (
        f"Its parts stored {counts} = {total:,} runs; {runs_kept:,} are kept, one per planned "
        f"run. The other {total - runs_kept:,} belong to a seed a part left unfinished when it "
        "was stopped; they were dropped when the parts were merged, and a later part ran "
        "that seed in full."
    )


def cancel_text(job_id: str, status: str) -> str:
    """What a cancel request did, from the status ``store.jobs.request_cancel`` returned."""
    if status == "cancelled":
        return f"Job `{job_id}` was cancelled before it started."
    if status == "running":
        return (
            f"Cancel requested for `{job_id}`: it stops at the next epoch boundary and "
            "keeps its finished runs."
        )
    return f"Job `{job_id}` had already finished ({status})."


def resume_text(job_id: str, status: str) -> str:
    """What a resume request did (``store.jobs.resume_job`` returns the job's new status)."""
    return (
        f"Job `{job_id}` is {status} again: a worker resumes it at its first unfinished run; "
        "the runs it finished are kept."
    )
