"""A study's lifecycle (rename, notes, tags, archive, delete) and its provenance card.

Each change writes its audit line in the same transaction. Who may do what is decided by
`jobs.services.access` before these are called; ``by`` names who did it.

Provenance: `store.jobs.enqueue_job` records who launched a study, when and from where;
the worker records where it trained (`record_environment`: host, devices, code and library
versions) each time it claims the study's job. `study_card` gathers both for the pages, the
CLI (`python -m jobs study ID`) and the exports.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from store.audit import LOCAL_ACTOR, record_in
from store.db import StoreError, connect, data_home_of, default_store_path, one_value
from store.label_versions import version_named, versions_in

log = logging.getLogger(__name__)

MAX_NAME_CHARS = 120
MAX_NOTES_CHARS = 20_000
MAX_TAGS = 20
MAX_TAG_CHARS = 32

#: The folder under SOFTGRADE_HOME of pruned searches' journals (`jobs.worker.pruning`).
PRUNING_DIR = "pruning"

# What `record_environment` stores, in the order of the table's columns.
ENVIRONMENT_FIELDS = (
    "worker_host",
    "devices",
    "gpu_names",
    "code_version",
    "git_commit",
    "git_dirty",
    "python",
    "torch",
    "cuda",
    "cudnn",
    "dlordinal",
    "ultralytics",
    "executor",
    "threads_per_slot",
    "search_pruned",
)


@dataclass(frozen=True)
class Study:
    """One row of ``studies`` (the spec as a mapping, tags as a tuple)."""

    study_id: str
    name: str
    dataset_id: str | None
    spec: dict[str, Any]
    created_at: datetime
    launched_by: str | None
    launched_from: str | None
    notes: str | None
    tags: tuple[str, ...]
    archived_at: datetime | None

    @property
    def archived(self) -> bool:
        """Hidden from the pickers (kept in full)."""
        return self.archived_at is not None


@dataclass(frozen=True)
class DeletedStudy:
    """What `delete_study` removed."""

    study_id: str
    name: str
    rows: dict[str, int]  # table -> rows deleted
    files_removed: list[str] = field(default_factory=list)
    files_left: list[str] = field(default_factory=list)  # outside the home, or not removable


def get_study(study_id: str, *, path: Path | str | None = None) -> Study:
    """One study; StoreError naming it if there is none."""
    with connect(path, read_only=True) as con:
        return _read_study(con, study_id)


def _read_study(con: duckdb.DuckDBPyConnection, study_id: str) -> Study:
    row = con.execute(
        """
        SELECT study_id, name, dataset_id, spec, created_at, launched_by, launched_from, notes,
               tags, archived_at
        FROM studies WHERE study_id = ?
        """,
        [study_id],
    ).fetchone()
    if row is None:
        raise StoreError(f"no study {study_id!r}; `python -m jobs status` lists the jobs")
    return Study(
        study_id=row[0],
        name=row[1],
        dataset_id=row[2],
        spec=json.loads(row[3]),
        created_at=row[4],
        launched_by=row[5],
        launched_from=row[6],
        notes=row[7],
        tags=tuple(row[8] or ()),
        archived_at=row[9],
    )


# -- lifecycle --------------------------------------------------------------------------------


def rename_study(
    study_id: str, name: str, *, by: str = LOCAL_ACTOR, path: Path | str | None = None
) -> Study:
    """Give a study another name (its id, runs and exports' ids stay)."""
    name = " ".join(str(name).split())
    if not name or len(name) > MAX_NAME_CHARS:
        raise ValueError(f"a study name needs 1 to {MAX_NAME_CHARS} characters")
    with connect(path) as con:
        old = _read_study(con, study_id)
        con.execute("UPDATE studies SET name = ? WHERE study_id = ?", [name, study_id])
        record_in(con, "rename", actor=by, target=study_id, detail=f"{old.name!r} -> {name!r}")
        return _read_study(con, study_id)


def set_notes(
    study_id: str, notes: str, *, by: str = LOCAL_ACTOR, path: Path | str | None = None
) -> Study:
    """Replace a study's notes (markdown, shown under the result pages' picker); empty
    text clears them."""
    notes = str(notes).strip()
    if len(notes) > MAX_NOTES_CHARS:
        raise ValueError(f"notes hold at most {MAX_NOTES_CHARS:,} characters ({len(notes):,})")
    with connect(path) as con:
        _read_study(con, study_id)
        con.execute("UPDATE studies SET notes = ? WHERE study_id = ?", [notes or None, study_id])
        record_in(con, "notes", actor=by, target=study_id, detail=f"{len(notes)} characters")
        return _read_study(con, study_id)


def clean_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Tags as stored: trimmed, blanks dropped, duplicates dropped (first kept).

    Raises:
        ValueError: A tag too long or holding a comma, or too many tags.
    """
    out: list[str] = []
    for raw in tags:
        tag = " ".join(str(raw).split())
        if not tag or tag in out:
            continue
        if len(tag) > MAX_TAG_CHARS or "," in tag:
            raise ValueError(
                f"tag {tag!r} is not allowed: at most {MAX_TAG_CHARS} characters, no commas"
            )
        out.append(tag)
    if len(out) > MAX_TAGS:
        raise ValueError(f"a study holds at most {MAX_TAGS} tags ({len(out)} given)")
    return tuple(out)


def set_tags(
    study_id: str, tags: Iterable[str], *, by: str = LOCAL_ACTOR, path: Path | str | None = None
) -> Study:
    """Replace a study's tags (see `clean_tags`)."""
    tags = clean_tags(tags)
    with connect(path) as con:
        _read_study(con, study_id)
        con.execute("UPDATE studies SET tags = ? WHERE study_id = ?", [list(tags), study_id])
        record_in(con, "tags", actor=by, target=study_id, detail=", ".join(tags))
        return _read_study(con, study_id)


def archive_study(study_id: str, *, by: str = LOCAL_ACTOR, path: Path | str | None = None) -> Study:
    """Hide a study from the pickers, keeping everything (`unarchive_study` brings it back)."""
    return _set_archived(study_id, True, by=by, path=path)


def unarchive_study(
    study_id: str, *, by: str = LOCAL_ACTOR, path: Path | str | None = None
) -> Study:
    """Show an archived study in the pickers again."""
    return _set_archived(study_id, False, by=by, path=path)


def _set_archived(study_id: str, archived: bool, *, by: str, path: Path | str | None) -> Study:
    with connect(path) as con:
        study = _read_study(con, study_id)
        if study.archived == archived:
            return study
        con.execute(
            "UPDATE studies SET archived_at = CASE WHEN ? THEN current_timestamp END "
            "WHERE study_id = ?",
            [archived, study_id],
        )
        record_in(con, "archive" if archived else "unarchive", actor=by, target=study_id)
        return _read_study(con, study_id)


def delete_study(
    study_id: str,
    *,
    confirm_name: str,
    by: str = LOCAL_ACTOR,
    home: Path | None = None,
    path: Path | str | None = None,
) -> DeletedStudy:
    """Delete a study for good: its runs, predictions, epoch metrics, jobs, job logs,
    environments, the study row, and its runs' checkpoint files and pruned-search journals
    under ``home``.

    Nothing else goes: datasets, splits and other studies' rows and files stay, and the
    audit log keeps the deletion. Rows go in one transaction; files are removed after it
    commits, so a failed delete leaves the study whole.

    Args:
        confirm_name: The study's name as the person typed it (a guard against deleting the
            wrong study).
        home: ``SOFTGRADE_HOME``; only checkpoint files inside it are removed. Defaults to
            `store.db.data_home_of` the store.

    Raises:
        StoreError: No such study, the name does not match, or its job is running (cancel
            it and wait for it to stop first).
    """
    store = Path(path) if path is not None else default_store_path()
    home = (home or data_home_of(store)).resolve()
    with connect(store) as con:
        study = _read_study(con, study_id)
        if confirm_name.strip() != study.name:
            raise StoreError(
                f"type the study's name {study.name!r} exactly to delete it "
                f"({confirm_name.strip()!r} was typed)"
            )
        running = con.execute(
            "SELECT job_id FROM jobs WHERE study_id = ? AND status = 'running'", [study_id]
        ).fetchall()
        if running:
            raise StoreError(
                f"study {study.name!r} is training (job {running[0][0]}); cancel it and wait "
                "until it stops, then delete it"
            )
        checkpoints = [
            r[0]
            for r in con.execute(
                "SELECT checkpoint_path FROM runs WHERE study_id = ? "
                "AND checkpoint_path IS NOT NULL",
                [study_id],
            ).fetchall()
        ]
        rows = _delete_rows(con, study_id)
        record_in(
            con,
            "delete",
            actor=by,
            target=study_id,
            detail=f"{study.name!r}: " + ", ".join(f"{n} {table}" for table, n in rows.items()),
        )
    # A pruned search's journals (jobs.worker.pruning) go with the study too.
    journals = sorted(str(p) for p in (home / PRUNING_DIR / study_id).glob("*.log"))
    removed, left = _remove_files(checkpoints + journals, home)
    return DeletedStudy(study_id, study.name, rows, removed, left)


# Child tables first; each statement names the rows of this study only.
_DELETES = (
    ("predictions", "run_id IN (SELECT run_id FROM runs WHERE study_id = ?)"),
    ("epoch_metrics", "run_id IN (SELECT run_id FROM runs WHERE study_id = ?)"),
    ("run_costs", "run_id IN (SELECT run_id FROM runs WHERE study_id = ?)"),
    ("runs", "study_id = ?"),
    ("failed_runs", "study_id = ?"),
    ("seed_metrics", "study_id = ?"),
    ("seed_split_sizes", "study_id = ?"),
    ("job_logs", "job_id IN (SELECT job_id FROM jobs WHERE study_id = ?)"),
    ("jobs", "study_id = ?"),
    ("study_environments", "study_id = ?"),
    ("studies", "study_id = ?"),
)


def _delete_rows(con: duckdb.DuckDBPyConnection, study_id: str) -> dict[str, int]:
    counts = {}
    for table, where in _DELETES:
        counts[table] = len(
            con.execute(f"DELETE FROM {table} WHERE {where} RETURNING 1", [study_id]).fetchall()
        )
    return counts


def _remove_files(paths: list[str], home: Path) -> tuple[list[str], list[str]]:
    """Remove the files inside ``home``; leave (and report) any other. Empty folders they
    leave behind inside ``home`` go too."""
    removed, left = [], []
    for text in paths:
        file = Path(text).resolve()
        if not file.is_relative_to(home) or file == home:
            log.warning("left %s: outside SOFTGRADE_HOME %s", file, home)
            left.append(text)
            continue
        try:
            file.unlink(missing_ok=True)
        except OSError:
            log.warning("could not remove %s", file, exc_info=True)
            left.append(text)
            continue
        removed.append(text)
        folder = file.parent
        while folder != home and folder.is_relative_to(home):
            try:
                folder.rmdir()  # only if empty
            except OSError:
                break
            folder = folder.parent
    return removed, left


# -- provenance -------------------------------------------------------------------------------


def record_environment(
    study_id: str,
    *,
    job_id: str,
    worker_id: str,
    environment: dict[str, Any],
    path: Path | str | None = None,
) -> None:
    """Record where a study is training (called by the worker when it claims the job).

    Args:
        environment: `ENVIRONMENT_FIELDS` (as `jobs.services.provenance.worker_environment` builds
            them); missing ones are stored as NULL, unknown ones refused.
    """
    unknown = set(environment) - set(ENVIRONMENT_FIELDS)
    if unknown:
        raise ValueError(f"unknown environment fields {sorted(unknown)}")
    values = [environment.get(f) for f in ENVIRONMENT_FIELDS]
    for i, name in enumerate(ENVIRONMENT_FIELDS):
        if name in ("devices", "gpu_names") and values[i] is not None:
            values[i] = json.dumps(values[i])
    columns = ", ".join(ENVIRONMENT_FIELDS)
    marks = ", ".join("?" for _ in ENVIRONMENT_FIELDS)
    with connect(path) as con:
        con.execute(
            f"INSERT INTO study_environments (study_id, job_id, worker_id, {columns}) "
            f"VALUES (?, ?, ?, {marks})",
            [study_id, job_id, worker_id, *values],
        )


def study_environments(study_id: str, *, path: Path | str | None = None) -> pd.DataFrame:
    """Every environment a study trained in, oldest first."""
    with connect(path, read_only=True) as con:
        return con.execute(
            "SELECT * FROM study_environments WHERE study_id = ? ORDER BY recorded_at",
            [study_id],
        ).df()


def study_card(study_id: str, *, path: Path | str | None = None) -> dict[str, str]:
    """What a study is and where it came from, as label -> one-line text, in reading order.

    Labels: study, study id, tags, archived, status, launched by, launched at, launched
    from, dataset, code, python, torch, CUDA, cuDNN, dlordinal, ultralytics, worker,
    devices, executor, threads per slot, search, run devices, weights init (how the runs'
    networks were initialised: random or ImageNet weights; the paper starts from ImageNet),
    resumed on. Fields not known are left out (e.g. the environment of a study no worker has
    claimed yet, the executor of one trained before version 4, or provenance of studies
    stored before version 2, whose "launched by" reads "not recorded"). Notes are not on the
    card (`get_study`).
    """
    with connect(path, read_only=True) as con:
        study = _read_study(con, study_id)
        job = con.execute(
            "SELECT job_id, status, runs_done, runs_total FROM jobs WHERE study_id = ? "
            "ORDER BY created_at DESC LIMIT 1",
            [study_id],
        ).fetchone()
        dataset = con.execute(
            "SELECT spec_key, n_images FROM datasets WHERE dataset_id = ?", [study.dataset_id]
        ).fetchone()
        envs = con.execute(
            f"SELECT {', '.join(ENVIRONMENT_FIELDS)} FROM study_environments "
            "WHERE study_id = ? ORDER BY recorded_at",
            [study_id],
        ).fetchall()
        devices = con.execute(
            "SELECT device, count(*) FROM runs WHERE study_id = ? GROUP BY device ORDER BY 1",
            [study_id],
        ).fetchall()
        inits = con.execute(
            "SELECT weights_init, count(*) FROM runs WHERE study_id = ? "
            "GROUP BY weights_init ORDER BY 1",
            [study_id],
        ).fetchall()
        pruned_runs = _pruned_counts(con, [study_id]).get(study_id, (0, 0))
        trouble = _run_trouble(con, study_id)
        labels = label_version_text(con, study.spec)
    card = {"study": study.name, "study id": study.study_id}
    if study.tags:
        card["tags"] = ", ".join(study.tags)
    if study.archived_at is not None:
        card["archived"] = f"{study.archived_at:%Y-%m-%d %H:%M}"
    if job:
        total = "?" if job[3] is None else job[3]
        card["status"] = f"{job[1]}, {job[2]}/{total} runs (job {job[0]})"
    imported = study.spec.get("imported_results")
    if isinstance(imported, dict):  # results from another tool (store.results)
        card["provenance"] = (
            f"{imported.get('provenance', 'imported')} ({imported.get('format', 'results')} "
            f"from {imported.get('file', 'a file')}; split sizes {imported.get('split sizes')})"
        )
    card["launched by"] = study.launched_by or "not recorded (stored before SoftGrade kept it)"
    card["launched at"] = f"{study.created_at:%Y-%m-%d %H:%M:%S}"
    if study.launched_from:
        card["launched from"] = study.launched_from
    if dataset:
        card["dataset"] = f"{study.dataset_id} ({dataset[0]}, {dataset[1]} images)"
    if labels:
        card["label version"] = labels
    if envs:
        card.update(_environment_card(dict(zip(ENVIRONMENT_FIELDS, envs[-1], strict=True))))
        others = {e[0] for e in envs[:-1]} - {envs[-1][0]}
        if len(envs) > 1:
            card["resumed on"] = f"{len(envs)} claims by workers" + (
                f" (also on {', '.join(sorted(others))})" if others else ""
            )
    # From the spec and the runs, not the worker's environment: a study imported from a
    # bundle has no environment rows but keeps its pruned runs (`store.bundle`).
    pruner = pruner_of(study.spec)
    if pruner is not None:
        card["search"] = pruned_search_text(pruner, *pruned_runs)
    card.update(trouble)
    if isinstance(imported, dict):  # no device or weights recorded: nothing trained here
        return card
    if devices:
        card["run devices"] = ", ".join(f"{d or '?'} x{n}" for d, n in devices)
    if inits:
        card["weights init"] = weights_init_text(inits, study.spec.get("weights_path"))
    return card


def label_version_text(con: duckdb.DuckDBPyConnection, spec: dict[str, Any]) -> str | None:
    """Which label version of its folder a study trains on, in one line
    (`store.label_versions`); None for a dataset without a labels CSV (the phantom, a
    grade-folder layout prepared without an import)."""
    dataset = spec.get("dataset")
    if not isinstance(dataset, dict) or dataset.get("kind") != "folder":
        return None
    labels = dataset.get("labels_csv")
    if not labels:
        return None
    found = version_named(versions_in(con, str(dataset.get("path", ""))), str(labels))
    if found is None:
        return f"{Path(str(labels)).name} (not one of this store's imported label versions)"
    return found.describe()


# How each `runs.weights_init` value reads on the card (the paper starts from ImageNet).
WEIGHTS_INIT_WORDS = {
    "random": "random (trained from scratch, no pretrained weights)",
    "imagenet": "ImageNet weights",
}


def weights_init_text(counts: list[tuple[str | None, int]], weights_path: str | None) -> str:
    """The card's "weights init" line from ``(weights_init, runs)`` counts: one value for
    every run reads ``"random (trained from scratch, …) on all 1800 runs"``; a mixture lists
    each with its count. The ImageNet file is named when the study's spec gives it."""

    def words(init: str | None) -> str:
        text = WEIGHTS_INIT_WORDS.get(str(init), str(init or "not recorded"))
        if init == "imagenet" and weights_path:
            text += f" from {weights_path}"
        return text

    if len(counts) == 1:
        init, n = counts[0]
        return f"{words(init)} on all {n} runs"
    return "; ".join(f"{words(init)} on {n} runs" for init, n in counts)


def _environment_card(env: dict[str, Any]) -> dict[str, str]:
    """The worker-side lines of the card from one `study_environments` row."""
    out: dict[str, str] = {}
    if env["git_commit"]:
        dirty = " with uncommitted changes" if env["git_dirty"] else ""
        out["code"] = f"git {env['git_commit'][:12]}{dirty} (softgrade {env['code_version']})"
    elif env["code_version"]:
        out["code"] = f"softgrade {env['code_version']} (not a git checkout)"
    for label, key in (
        ("python", "python"),
        ("torch", "torch"),
        ("CUDA", "cuda"),
        ("cuDNN", "cudnn"),
        ("dlordinal", "dlordinal"),
        ("ultralytics", "ultralytics"),
    ):
        out[label] = env[key] or "none"
    out["worker"] = env["worker_host"]
    devices = json.loads(env["devices"]) if env["devices"] else []
    if devices and not any(str(d).startswith("cuda") for d in devices):
        # torch reports the CUDA and cuDNN it was built with, GPU or not: say so where the
        # runs trained on the CPU, or the card reads as if a GPU had trained them.
        for label in ("CUDA", "cuDNN"):
            if out[label] != "none":
                out[label] += " (torch's build; these runs used no GPU)"
    names = json.loads(env["gpu_names"]) if env["gpu_names"] else []
    text = ", ".join(_count(devices))
    out["devices"] = text + (f" ({', '.join(_count(names))})" if names else "")
    out.update(_training_card(env))
    return out


def _training_card(env: dict[str, Any]) -> dict[str, str]:
    """How the runs trained: executor, CPU threads per slot, search. Left out for rows of
    stores before version 4, which did not record them."""
    out: dict[str, str] = {}
    if env["executor"]:
        out["executor"] = env["executor"]
    if env["threads_per_slot"] is not None:
        n = env["threads_per_slot"]
        out["threads per slot"] = (
            f"{n} CPU thread{'s' if n != 1 else ''} per slot (CPU runs' numbers depend on it)"
        )
    if env["search_pruned"] is not None:
        out["search"] = (
            "pruned (configurations that had lost were stopped early)"
            if env["search_pruned"]
            else "full (every configuration trained to its stopping rule)"
        )
    return out


def pruner_of(spec: dict[str, Any]) -> str | None:
    """The pruner a study's spec names (``search: {pruner: ...}``, `engine.pruning`), or None
    for the full search (the paper's protocol, and every study stored before pruning)."""
    search = spec.get("search")
    pruner = search.get("pruner") if isinstance(search, dict) else None
    return None if pruner in (None, "none") else str(pruner)


def pruned_run_counts(
    study_ids: Iterable[str], *, path: Path | str | None = None
) -> dict[str, tuple[int, int]]:
    """Study id -> (runs a pruned search stopped, runs stored), for the given studies that
    have runs (the study card's "search" line and the Compare page's pruned note)."""
    with connect(path, read_only=True) as con:
        return _pruned_counts(con, list(study_ids))


def _pruned_counts(
    con: duckdb.DuckDBPyConnection, study_ids: list[str]
) -> dict[str, tuple[int, int]]:
    """`pruned_run_counts` on an open connection."""
    if not study_ids:
        return {}
    rows = con.execute(
        "SELECT study_id, count(*) FILTER (WHERE coalesce(pruned, false)), count(*) FROM runs "
        "WHERE list_contains(?, study_id) GROUP BY study_id",
        [study_ids],
    ).fetchall()
    return {str(study): (int(stopped), int(total)) for study, stopped, total in rows}


def _run_trouble(con: duckdb.DuckDBPyConnection, study_id: str) -> dict[str, str]:
    """The card's "diverged" and "failed runs" lines, where the study has such runs: how
    many, and which method at which learning rate."""
    lines: dict[str, str] = {}
    total = one_value(con, "SELECT count(*) FROM runs WHERE study_id = ?", [study_id])
    diverged = con.execute(
        "SELECT method, CAST(json_extract(config, '$.lr') AS DOUBLE) AS lr, count(*) FROM runs "
        "WHERE study_id = ? AND diverged_epoch IS NOT NULL GROUP BY ALL ORDER BY 3 DESC, 1, 2",
        [study_id],
    ).fetchall()
    if diverged:
        n = sum(row[2] for row in diverged)
        lines["diverged"] = (
            f"{n} of {total} runs diverged (their loss went non-finite; each kept its best "
            "finite epoch and is never selected over a run that stayed finite): "
            + ", ".join(_method_at_lr(m, lr, k) for m, lr, k in diverged)
        )
    failed = con.execute(
        "SELECT method, count(*) FROM failed_runs WHERE study_id = ? GROUP BY 1 ORDER BY 2 DESC, 1",
        [study_id],
    ).fetchall()
    if failed:
        n = sum(row[1] for row in failed)
        lines["failed runs"] = (
            f"{n} run(s) failed and are not stored: "
            + ", ".join(f"{m} x{k}" if k > 1 else str(m) for m, k in failed)
            + " (`softgrade status JOB_ID` gives each traceback; resuming trains them again)"
        )
    return lines


def _method_at_lr(method: str, lr: float | None, count: int) -> str:
    text = f"{method} at lr {lr:g}" if lr is not None else str(method)
    return f"{text} x{count}" if count > 1 else text


def pruned_search_text(pruner: str, n_pruned: int, n_runs: int) -> str:
    """The card's "search" line of a pruned study: which pruner, how many runs it stopped."""
    return (
        f"pruned with {pruner} (Optuna): configurations that had already lost were stopped "
        f"early and never selected; {n_pruned} of {n_runs} runs stopped so far"
    )


def _count(items: list[str]) -> list[str]:
    """['a', 'a', 'b'] -> ['a x2', 'b']: slots on one GPU read as one device."""
    seen: dict[str, int] = {}
    for item in items:
        seen[item] = seen.get(item, 0) + 1
    return [f"{k} x{n}" if n > 1 else k for k, n in seen.items()]
