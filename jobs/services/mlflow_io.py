"""Results in from, and out to, an MLflow tracking store (the optional ``mlflow`` extra).

- `import_experiment`: an experiment's finished runs, mapped to the long per-seed table by
  `engine.analysis.run_mapping` (which param gives task, method, seed, n_train, n_test;
  which metric key gives each SoftGrade metric), checked as a CSV of it would be and stored
  as a study marked "imported: no training provenance" (`results_io.store_imported`).
- `export_study`: a study's selected runs as MLflow runs, one per (task, method, seed):
  params task, method, seed, n_train, n_test and the run's configuration (``config.*``),
  its per-seed test metrics under the registry's names, and tags naming the SoftGrade study
  and run. The default mapping reads them back unchanged (docs/import-results.md).

MLflow is imported only here, and only when asked for: without it `MlflowUnavailable` says
which extra to install. ``mlflow-skinny`` suffices: it talks to a tracking server
(``http(s)://``) and reads and writes a local ``file:`` store. MLflow 3 refuses to open a
``file:`` store unless ``MLFLOW_ALLOW_FILE_STORE`` is set (it steers new work to a database);
the older experiments people want to bring in are mostly such ``./mlruns`` folders, so
SoftGrade sets it while it works on one (`_mlflow_environment`). ``sqlite:`` and other
database stores need the full ``mlflow`` package.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit
from urllib.request import url2pathname

import pandas as pd

from engine.analysis import probability_metrics
from engine.analysis.metrics import REGISTRY
from engine.analysis.results_file import shown
from engine.analysis.run_mapping import MappedRuns, RunMapping, TrackedRun, map_runs
from jobs.services import results_io
from store import analysis as store_analysis
from store import results as store_results
from store import runs as store_runs
from store import studies as store_studies

EXTRA = "softgrade[mlflow]"
INSTALL_HINT = f"pip install '{EXTRA}' (or pip install mlflow-skinny)"
#: Tags a study's exported runs carry (read back by nothing: they name where a run came from).
STUDY_TAG = "softgrade.study_id"
STUDY_NAME_TAG = "softgrade.study"
RUN_TAG = "softgrade.run_id"
SELECTED_TAG = "softgrade.selected"
CONFIG_PREFIX = "config."
FINISHED = "FINISHED"
PAGE_SIZE = 1000
StorePath = Path | str | None


class MlflowUnavailable(RuntimeError):
    """MLflow is not installed, or the tracking store cannot be used; the message is the
    one line to show."""


@dataclass(frozen=True)
class ImportedExperiment:
    """What `import_experiment` stored, and what it read."""

    stored: store_results.StoredResults
    mapped: MappedRuns
    runs_unfinished: int


@dataclass(frozen=True)
class ExportedRuns:
    """What `export_study` logged."""

    tracking_uri: str
    experiment: str
    experiment_id: str
    runs: int
    metric_values: int


def shown_uri(uri: str) -> str:
    """The tracking URI without any user name or password in it (it is stored and printed)."""
    parts = urlsplit(uri)
    if "@" not in parts.netloc:
        return uri
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _mlflow() -> ModuleType:
    try:
        import mlflow
    except ImportError as exc:
        raise MlflowUnavailable(
            f"MLflow is not installed; reading or writing an MLflow experiment needs the "
            f"mlflow extra: {INSTALL_HINT}"
        ) from exc
    return mlflow


def _is_file_store(uri: str) -> bool:
    scheme = urlsplit(uri).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")  # C:\...


#: The tracking URIs SoftGrade hands to MLflow (docs/import-results.md): a tracking server,
#: a local ``mlruns`` folder, or a database store (the full ``mlflow`` package).
SERVER_SCHEMES = ("http", "https")
DATABASE_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql")
#: One HTTP request to a tracking server may take this long, and is retried this often
#: (MLflow's own 120 s and 7 retries with back-off kept an unreachable server's import
#: waiting 4 minutes). A person's own ``MLFLOW_HTTP_REQUEST_*`` settings win.
HTTP_TIMEOUT_S = 10
HTTP_RETRIES = 1
_HTTP_SETTINGS = {
    "MLFLOW_HTTP_REQUEST_TIMEOUT": str(HTTP_TIMEOUT_S),
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": str(HTTP_RETRIES),
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "0",
    "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0",
}


def check_uri(uri: str, *, writing: bool) -> None:
    """Refuse a tracking URI SoftGrade will not hand to MLflow, before MLflow sees it.

    A ``file:`` URI (or a bare folder) must name an MLflow store: a folder MLflow made
    (its ``.trash`` or an experiment's ``meta.yaml`` in it); an export may also name a new or
    empty folder. MLflow's FileStore writes ``.trash`` into any folder it opens, so
    ``file:///etc`` created ``/etc/.trash``, and ``file:///etc/passwd`` ended in a traceback.

    Raises:
        MlflowUnavailable: another scheme, a server URI without a host, or a ``file:`` URI
            naming a file or a folder that is not an MLflow store.
    """
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    allowed = (
        "an MLflow tracking URI is http(s)://HOST[:PORT] (a tracking server), file:FOLDER or "
        f"a folder (an mlruns store) or a database URI ({', '.join(DATABASE_SCHEMES)})"
    )
    if _is_file_store(uri):
        _check_file_store(_store_folder(uri), writing=writing)
    elif scheme in SERVER_SCHEMES:
        if not parts.hostname:
            raise MlflowUnavailable(f"{shown(shown_uri(uri))} names no host; {allowed}")
    elif scheme not in DATABASE_SCHEMES:
        raise MlflowUnavailable(f"{shown(scheme + ':')} is not a tracking URI; {allowed}")


def _store_folder(uri: str) -> Path:
    parts = urlsplit(uri)
    if parts.scheme == "file":
        return Path(url2pathname(parts.path)).expanduser()
    return Path(uri).expanduser()


def _check_file_store(folder: Path, *, writing: bool) -> None:
    named = shown(str(folder))
    if folder.exists() and not folder.is_dir():
        raise MlflowUnavailable(f"{named} is a file; a file: URI names an MLflow store folder")
    if not folder.exists():
        if writing:
            return  # MLflow makes a new store where it is asked to
        raise MlflowUnavailable(f"no MLflow store at {named}: no such folder")
    if _is_mlflow_store(folder):
        return
    if writing and not any(folder.iterdir()):
        return
    raise MlflowUnavailable(
        f"{named} is not an MLflow store (no .trash and no experiment's meta.yaml in it); "
        "SoftGrade opens only a folder MLflow made (MLflow writes .trash into any folder it "
        "opens), or, to export, a new or empty folder"
    )


def _is_mlflow_store(folder: Path) -> bool:
    """Whether ``folder`` looks like a store MLflow made (its first 1,000 entries looked at)."""
    if (folder / ".trash").is_dir():
        return True
    try:
        entries = list(itertools.islice(folder.iterdir(), 1000))
    except OSError:
        return False
    return any((entry / "meta.yaml").is_file() for entry in entries if entry.is_dir())


def scrubbed(text: str, uri: str) -> str:
    """``text`` (an MLflow or HTTP library message) without the URI's user name or password:
    MLflow's own messages quote the URL it was given, credentials included."""
    parts = urlsplit(uri)
    secrets = {s for s in (parts.password, parts.username) if s}
    for secret in sorted(secrets, key=len, reverse=True):
        for form in {secret, unquote(secret), quote(secret, safe="")}:
            text = text.replace(form, "***")
    return text


@contextlib.contextmanager
def _mlflow_environment(uri: str) -> Iterator[None]:
    """MLflow's opt-in to a ``file:`` store, and short HTTP timeouts and retries, for the
    duration of one import or export; a setting the person made is kept."""
    wanted = dict(_HTTP_SETTINGS)
    if _is_file_store(uri):
        wanted["MLFLOW_ALLOW_FILE_STORE"] = "true"
    added = {k: v for k, v in wanted.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


@contextlib.contextmanager
def _client(uri: str, *, writing: bool = False) -> Iterator[Any]:
    """An MLflow client on ``uri`` once `check_uri` allows it; MLflow's own errors (and the
    HTTP and file errors under them) become `MlflowUnavailable` with the first line of the
    message, cut short and without the URI's credentials."""
    mlflow = _mlflow()
    from mlflow.exceptions import MlflowException

    check_uri(uri, writing=writing)
    with _mlflow_environment(uri):
        try:
            yield mlflow.tracking.MlflowClient(tracking_uri=uri)
        except (MlflowException, OSError) as exc:
            message = exc.message if isinstance(exc, MlflowException) else str(exc)
            first = (str(message).strip().splitlines() or [type(exc).__name__])[0]
            said = scrubbed(first, uri)
            said = said if len(said) <= 300 else said[:300] + "…"
            raise MlflowUnavailable(f"MLflow at {shown_uri(uri)}: {said}") from None


def _experiment(client: Any, name: str, uri: str) -> Any:
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        names = sorted(e.name for e in client.search_experiments())
        held = ", ".join(repr(n) for n in names[:12]) or "none"
        raise MlflowUnavailable(
            f"no MLflow experiment {name!r} at {shown_uri(uri)}; its experiments: {held}"
        )
    return experiment


def read_runs(
    uri: str, experiment: str, *, filter_string: str = ""
) -> tuple[list[TrackedRun], int, str]:
    """An experiment's active runs: the finished ones oldest first, how many others were left
    out (running, failed, killed), and the experiment's id.

    Raises:
        MlflowUnavailable: no MLflow, no such experiment, or MLflow refused the store or
            the filter.
    """
    with _client(uri) as client:
        found = _experiment(client, experiment, uri)
        runs: list[Any] = []
        token = None
        while True:
            page = client.search_runs(
                [found.experiment_id],
                filter_string=filter_string,
                max_results=PAGE_SIZE,
                page_token=token,
            )
            runs.extend(page)
            token = page.token
            if not token:
                break
    finished = [r for r in runs if r.info.status == FINISHED]
    finished.sort(key=lambda r: (r.info.start_time or 0, r.info.run_id))
    tracked = [
        TrackedRun(r.info.run_id, dict(r.data.params), dict(r.data.metrics), dict(r.data.tags))
        for r in finished
    ]
    return tracked, len(runs) - len(finished), str(found.experiment_id)


def import_experiment(
    uri: str,
    experiment: str,
    *,
    mapping: RunMapping,
    name: str | None = None,
    filter_string: str = "",
    by: str,
    path: StorePath = None,
) -> ImportedExperiment:
    """Map an experiment's finished runs to per-seed results and store them as a study.

    Raises:
        MlflowUnavailable: see `read_runs`.
        engine.analysis.run_mapping.RunMappingError: a mapping the runs cannot satisfy.
        engine.analysis.results_file.ResultsFileError: a bad value (naming the run and field).
    """
    runs, unfinished, experiment_id = read_runs(uri, experiment, filter_string=filter_string)
    mapped = map_runs(runs, mapping)
    source = {
        "file": f"MLflow experiment {experiment!r} at {shown_uri(uri)}",
        "mlflow": {
            "tracking_uri": shown_uri(uri),
            "experiment": experiment,
            "experiment_id": experiment_id,
            "runs": mapped.runs_read,
            "filter": filter_string,
            "keys": dict(mapping.keys),
            "metrics": mapped.metric_sources,
        },
    }
    stored = results_io.store_imported(
        mapped.results,
        name=(name or experiment).strip() or experiment,
        source=source,
        by=by,
        path=path,
    )
    return ImportedExperiment(stored, mapped, unfinished)


def selected_run_metrics(study_id: str, *, path: StorePath = None) -> pd.DataFrame:
    """Each selected run's per-seed test metrics, long: ``run_id, metric, value`` (the grade
    metrics, and the probability metrics where its films' probabilities are stored); only
    finite values."""
    # Here, not at the top: the study's statistics (statsmodels) are for an export only, and
    # every command line imports this module to build its parser.
    from jobs.services import study_analysis

    wide = study_analysis.per_run(study_id, path=path)
    frames = [wide]
    films = store_runs.selected_probabilities([study_id], path=path)
    if not films.empty:
        scores = probability_metrics.per_run_probability_metrics(films)
        frames.append(scores[["run_id", *probability_metrics.PROBABILITY_METRICS]])
    parts = []
    for frame in frames:
        metrics = [c for c in frame.columns if c in REGISTRY]
        long = frame.melt(id_vars=["run_id"], value_vars=metrics, var_name="metric")
        parts.append(long[pd.to_numeric(long["value"], errors="coerce").notna()])
    long = pd.concat(parts, ignore_index=True)
    return long[long["value"].map(lambda v: math.isfinite(float(v)))]


def export_study(
    study_id: str, uri: str, *, experiment: str | None = None, path: StorePath = None
) -> ExportedRuns:
    """Log a study's selected runs to an MLflow experiment (created when absent; the study's
    name by default).

    Raises:
        StoreError: no such study.
        MlflowUnavailable: no MLflow, MLflow refused the store, the study has no selected run,
            or the experiment already holds this study's runs (exporting twice would pair
            every seed with itself).
    """
    study = store_studies.get_study(study_id, path=path)
    runs = store_runs.list_runs([study_id], selected_only=True, path=path)
    if runs.empty:
        raise MlflowUnavailable(f"study {study_id!r} has no selected run yet; nothing to export")
    experiment = experiment or study.name
    metrics = selected_run_metrics(study_id, path=path)
    sizes = store_analysis.split_sizes(study_id, path=path).set_index(["task", "seed"])
    with _client(uri, writing=True) as client:
        found = client.get_experiment_by_name(experiment)
        experiment_id = (
            found.experiment_id if found is not None else client.create_experiment(experiment)
        )
        earlier = client.search_runs(
            [experiment_id], filter_string=f"tags.`{STUDY_TAG}` = '{study_id}'", max_results=1
        )
        if len(earlier):
            raise MlflowUnavailable(
                f"MLflow experiment {experiment!r} at {shown_uri(uri)} already holds runs of "
                f"study {study_id}; export to another one (--experiment NAME) or delete them"
            )
        logged = 0
        for run in runs.itertuples(index=False):
            values = metrics[metrics["run_id"] == run.run_id]
            _log_run(client, experiment_id, study, run, values, sizes)
            logged += len(values)
    return ExportedRuns(shown_uri(uri), experiment, str(experiment_id), len(runs), logged)


def _log_run(
    client: Any,
    experiment_id: str,
    study: Any,
    run: Any,
    values: pd.DataFrame,
    sizes: pd.DataFrame,
) -> None:
    """One selected run as one finished MLflow run."""
    from mlflow.entities import Metric, Param

    params = {"task": run.task, "method": run.method, "seed": int(run.seed)}
    if (run.task, run.seed) in sizes.index:
        size = sizes.loc[(run.task, run.seed)]
        params |= {"n_train": int(size["n_fit"]), "n_test": int(size["n_test"])}
    config = json.loads(run.config) if isinstance(run.config, str) and run.config else {}
    params |= {f"{CONFIG_PREFIX}{k}": v for k, v in config.items()}
    tags = {
        STUDY_TAG: study.study_id,
        STUDY_NAME_TAG: study.name,
        RUN_TAG: run.run_id,
        SELECTED_TAG: "true",
    }
    created = client.create_run(
        experiment_id, tags=tags, run_name=f"{run.task}/{run.method}/s{int(run.seed)}"
    )
    now = int(time.time() * 1000)
    client.log_batch(
        created.info.run_id,
        metrics=[
            Metric(str(m), float(v), now, 0)
            for m, v in zip(values["metric"], values["value"], strict=True)
        ],
        params=[Param(k, str(v)) for k, v in params.items()],
    )
    client.set_terminated(created.info.run_id, status=FINISHED)
