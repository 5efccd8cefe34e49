"""Results in and out of the store, for the command line (and any page that wants them).

- `import_results`: a per-seed metrics or per-film predictions file from another tool
  (`engine.analysis.results_file`) becomes a study (`store.results`), marked as imported
  with no training provenance; `store_imported` stores any checked table (an MLflow
  experiment's runs too: `jobs.services.mlflow_io`).
- `export_bundle`: a study's complete seeds as one bundle file with its study card
  (`store.bundle.export_study`), what ``softgrade export`` and bench/export_reference.py
  write; ``softgrade import-study`` reads it back.
"""

from __future__ import annotations

import hashlib
import json
import platform
import socket
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from engine.analysis.compare import finished_seeds
from engine.analysis.results_file import ResultsFile, read_results
from engine.films import escaped
from engine.vocab import run_id
from store import results as store_results
from store.bundle import export_study
from store.db import StoreError, connect
from store.runs import list_studies, run_group_counts

#: The marker an imported study carries on its card and in the report.
NO_PROVENANCE = "imported: no training provenance"
PACKAGES = ("torch", "torchvision", "numpy", "pandas", "duckdb", "dlordinal", "scikit-learn")
StorePath = Path | str | None


class AlreadyImported(StoreError):
    """The same results file was imported before; the message names its study."""


def import_results(
    file: Path | str,
    *,
    name: str | None = None,
    by: str,
    again: bool = False,
    path: StorePath = None,
) -> store_results.StoredResults:
    """Check a results file and store it as a new study (all of it or nothing).

    The file's SHA-256 is kept on the study (``imported_results.sha256``): the same file
    imported again (under any name) is refused naming the study it already is, unless
    ``again`` (``import-results --again``) asks for a second copy.

    Raises:
        engine.analysis.results_file.ResultsFileError: a bad file (first bad row and column).
        AlreadyImported: the same file is a study already (and ``again`` is False).
        StoreError: the store refused it.
    """
    file = Path(file)
    results = read_results(file)
    with file.open("rb") as handle:
        sha256 = hashlib.file_digest(handle, "sha256").hexdigest()
    if not again:
        earlier = imported_study_of(sha256, path=path)
        if earlier is not None:
            raise AlreadyImported(
                f"{file.name} holds the same results as study {earlier['study_id']} "
                f"(“{escaped(str(earlier['name']))}”, imported {str(earlier['created_at'])[:16]})"
                "; nothing was stored. `import-results --again` stores a second copy"
            )
    name = (name or file.stem).strip() or file.stem
    return store_imported(
        results, name=name, source={"file": file.name, "sha256": sha256}, by=by, path=path
    )


def imported_study_of(sha256: str, *, path: StorePath = None) -> dict[str, Any] | None:
    """The study (archived ones too) imported from a file with this SHA-256, or None."""
    studies = list_studies(include_archived=True, path=path)
    for study in studies.to_dict("records"):
        try:
            source = json.loads(study["spec"]).get("imported_results") or {}
        except (TypeError, ValueError, AttributeError):
            continue
        if isinstance(source, dict) and source.get("sha256") == sha256:
            return study
    return None


def store_imported(
    results: ResultsFile,
    *,
    name: str,
    source: dict[str, Any],
    by: str,
    path: StorePath = None,
) -> store_results.StoredResults:
    """Store checked results (from a file, or an MLflow experiment's runs mapped to the
    same table: `jobs.services.mlflow_io`) as a new study marked `NO_PROVENANCE`.

    Args:
        results: the checked table.
        name: the study's name.
        source: where the results came from, for the study card and the report: ``file``
            (a phrase: the file's name, or the MLflow experiment and its URI) and any detail.
        by: who imported them.
        path: the store.
    """
    study_id = store_results.new_study_id()
    runs = results.runs.assign(
        run_id=[
            run_id(study_id, r.task, r.method, int(r.seed), 0)
            for r in results.runs.itertuples(index=False)
        ]
    )
    keys = ["task", "method", "seed"]
    predictions = results.predictions.merge(runs, on=keys, how="left")
    spec = {
        "name": name,
        "tasks": results.tasks,
        "methods": results.methods,
        "seeds": results.seeds,
        "budget": 1,
        "imported_results": {
            "provenance": NO_PROVENANCE,
            **source,
            "format": results.format,
            "rows": results.rows,
            "split sizes": "given" if len(results.sizes) else "not given",
        },
    }
    return store_results.store_results(
        study_id=study_id,
        name=name,
        spec=spec,
        runs=runs[["run_id", *keys]],
        predictions=predictions[["run_id", "film", "split", "grade", "y_pred", "probs"]],
        metrics=results.metrics,
        sizes=results.sizes,
        by=by,
        path=path,
    )


@dataclass(frozen=True)
class ExportedBundle:
    """What `export_bundle` wrote."""

    file: Path
    study_id: str
    seeds: list[int]
    card: dict[str, Any]


def export_bundle(
    study_id: str | None,
    out: Path | str,
    *,
    name: str | None = None,
    command: str = "",
    all_test_predictions: bool = False,
    force: bool = False,
    path: Path,
) -> ExportedBundle:
    """Write a study's complete seeds (every (task, method) search stored in full) as a
    bundle with its study card; ``study_id`` None takes the newest study. ``name`` (the
    study's name on import; None keeps its own) may hold ``{n}``, the seeds exported.
    ``all_test_predictions`` also ships every unselected run's test predictions, which the
    Robustness tab's budget-matched comparison needs (a larger file). ``out`` is written
    through `store.outputs.atomic_output` (never through a link; over a file only with
    ``force``).

    Raises:
        StoreError: no such study, no complete seed yet, or a study of imported results
            (it has no films to ship: its source file is its portable form).
    """
    studies = list_studies(include_archived=True, path=path)
    if studies.empty and study_id is None:
        raise StoreError(f"no study in {path}")
    if study_id is None:
        study_id = str(studies.iloc[0]["study_id"])
    chosen = studies[studies["study_id"] == study_id]
    if chosen.empty:
        raise StoreError(f"no study {study_id!r} in {path}; `softgrade stats --list` lists them")
    spec = json.loads(chosen.iloc[0]["spec"])
    if isinstance(spec.get("imported_results"), dict):
        raise StoreError(
            f"study {study_id!r} holds results imported from {spec['imported_results'].get('file')}"
            " with no films; that file is its portable form (`softgrade stats -o` and "
            "`softgrade report` export its analysis)"
        )
    seeds = finished_seeds(run_group_counts([study_id], path=path), spec)
    if not seeds:
        raise StoreError(f"study {study_id!r} has no complete seed yet; nothing to export")
    card = study_card(path, study_id, command)
    card["seeds_planned"] = len(spec.get("seeds", []))
    card["seeds_complete"] = seeds
    named = name.replace("{n}", str(len(seeds))) if name else None
    written = export_study(
        study_id,
        out,
        seeds=seeds,
        card=card,
        name=named,
        all_test_predictions=all_test_predictions,
        force=force,
        path=path,
    )
    return ExportedBundle(written, study_id, seeds, card)


def study_card(store: Path, study_id: str, command: str) -> dict[str, Any]:
    """Where, when and how the study ran: GPUs, versions, date, command, wall time (the
    exporting machine's versions: export where the study ran)."""
    card: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "command": command,
        "python": platform.python_version(),
        "host": socket.gethostname(),
        "packages": {},
    }
    for package in PACKAGES:
        try:
            card["packages"][package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            card["packages"][package] = None
    try:
        import torch

        if torch.cuda.is_available():
            card["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
            card["cuda"] = torch.version.cuda
    except ImportError:  # pragma: no cover - torch is a requirement
        pass
    with connect(store, read_only=True) as con:
        job = con.execute(
            "SELECT started_at, finished_at, status FROM jobs WHERE study_id = ? "
            "ORDER BY created_at DESC LIMIT 1",
            [study_id],
        ).fetchone()
        runs = con.execute(
            "SELECT min(created_at), max(created_at), sum(duration_s), count(*), "
            "list(DISTINCT device) FROM runs WHERE study_id = ?",
            [study_id],
        ).fetchone()
    assert runs is not None  # an aggregate without GROUP BY always returns one row
    if job is not None:
        card["job"] = {"started_at": str(job[0]), "finished_at": str(job[1]), "status": job[2]}
        if job[0] is not None and runs[1] is not None:
            card["wall_s_to_last_run"] = round((runs[1] - job[0]).total_seconds(), 1)
    card["runs_stored"] = int(runs[3])
    card["run_seconds_total"] = round(float(runs[2] or 0.0), 1)
    card["devices"] = sorted(d for d in (runs[4] or []) if d is not None)
    return card
