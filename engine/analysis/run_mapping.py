"""A tracker's runs (MLflow's shape: each run's params, metrics and tags) as the long per-seed
table that `engine.analysis.results_file.check_results` takes, by a small mapping.

The mapping says which run field gives each key column and which metric key gives each
SoftGrade metric (docs/import-results.md, "From MLflow"):

============ ==================== ==========================================================
key          default source       what it gives
============ ==================== ==========================================================
``task``     param ``task``       ``KL`` or ``CPPD``
``method``   param ``method``     the method's name
``seed``     param ``seed``       the seed (runs of one seed are paired across methods)
``n_train``  param ``n_train``    optional: films fitted and selected on
``n_test``   param ``n_test``     optional: films tested on
a metric     metric of its name   e.g. ``amae`` from the run's metric ``amae`` (any case)
============ ==================== ==========================================================

A source is a param's name, ``tags.NAME`` for a tag (``tags.mlflow.runName``), or
``params.NAME``; a metric's source is a metric key (``metrics.`` may precede it). Once the
mapping names any metric, only the metrics it names are read. Nothing here imports MLflow:
`jobs.services.mlflow_io` reads the runs and hands them over as `TrackedRun` records.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import pandas as pd

from engine.analysis.metrics import REGISTRY
from engine.analysis.results_file import (
    KEY_COLUMNS,
    METRIC_COLUMNS,
    SIZE_COLUMNS,
    Places,
    ResultsFile,
    ResultsFileError,
    check_results,
    shown,
)

#: The key columns a mapping may point elsewhere, in the table's order.
MAPPED_KEYS: tuple[str, ...] = (*KEY_COLUMNS, *SIZE_COLUMNS)
TAG_PREFIX = "tags."
PARAM_PREFIX = "params."
METRIC_PREFIX = "metrics."
#: The key of a mapping file's metric section.
METRICS_SECTION = "metrics"


class RunMappingError(ResultsFileError):
    """A mapping that cannot be applied; the message is the one line to show."""


@dataclass(frozen=True)
class TrackedRun:
    """One run of a tracker's experiment: its id, params, latest metric values and tags."""

    run_id: str
    params: Mapping[str, str]
    metrics: Mapping[str, float]
    tags: Mapping[str, str] = field(default_factory=dict)

    def field_value(self, source: str) -> str | None:
        """The value of a key's source (a param, or a tag after ``tags.``); None if absent."""
        if source.startswith(TAG_PREFIX):
            return self.tags.get(source.removeprefix(TAG_PREFIX))
        return self.params.get(source.removeprefix(PARAM_PREFIX))


@dataclass(frozen=True)
class RunMapping:
    """Where each key column and each SoftGrade metric comes from.

    Attributes:
        keys: key column (`MAPPED_KEYS`) -> source (a param name or ``tags.NAME``).
        metrics: SoftGrade metric -> the run's metric key; empty reads every metric key
            named as the registry names a metric (any case).
    """

    keys: Mapping[str, str] = field(default_factory=lambda: {k: k for k in MAPPED_KEYS})
    metrics: Mapping[str, str] = field(default_factory=dict)

    def with_entries(self, entries: Mapping[str, str], origin: str) -> RunMapping:
        """This mapping with ``entries`` (key or metric -> source) laid over it.

        Raises:
            RunMappingError: an entry names neither a key nor a metric, or has no source.
        """
        keys, metrics = dict(self.keys), dict(self.metrics)
        for name, source in entries.items():
            key, source = str(name).strip().lower(), str(source).strip()
            if not source:
                raise RunMappingError(
                    f"{origin}: {shown(name)} needs a source, e.g. {str(name)[:40]}=my_param"
                )
            if key in MAPPED_KEYS:
                keys[key] = source
            elif key in REGISTRY:
                metrics[key] = source.removeprefix(METRIC_PREFIX)
            else:
                raise RunMappingError(
                    f"{origin}: {shown(name)} is not a mapping key; {ALLOWED_KEYS}"
                )
        return replace(self, keys=keys, metrics=metrics)

    def metric_sources(self, runs: Sequence[TrackedRun]) -> dict[str, str]:
        """SoftGrade metric -> metric key: the mapping's own, else every key of the runs
        that the registry names (in any case)."""
        if self.metrics:
            return dict(self.metrics)
        found: dict[str, str] = {}
        for run in runs:
            for key in run.metrics:
                if key.lower() in REGISTRY:
                    found.setdefault(key.lower(), key)
        return found


ALLOWED_KEYS = (
    f"the keys are {', '.join(MAPPED_KEYS)} (a run param, or tags.NAME for a tag) and the "
    f"metrics `softgrade metrics` lists ({', '.join(REGISTRY)}; a run's metric key)"
)


def parse_entries(items: Iterable[str]) -> dict[str, str]:
    """``--map KEY=SOURCE`` items as a dict.

    Raises:
        RunMappingError: an item without ``=``.
    """
    entries: dict[str, str] = {}
    for item in items:
        name, sep, source = item.partition("=")
        if not sep or not name.strip():
            raise RunMappingError(
                f"--map {shown(item)}: write KEY=SOURCE, e.g. task=dataset or amae=test_amae; "
                + ALLOWED_KEYS
            )
        entries[name.strip()] = source
    return entries


def mapping_from_document(document: object, origin: str) -> RunMapping:
    """A mapping file's content (parsed YAML): key: source lines and a ``metrics:`` section
    of metric: key lines, laid over the defaults.

    Raises:
        RunMappingError: not a mapping of names, or an entry `RunMapping.with_entries` refuses.
    """
    if document is None:
        return RunMapping()
    if not isinstance(document, Mapping):
        raise RunMappingError(
            f"{origin}: a mapping file holds KEY: SOURCE lines and a 'metrics:' section; "
            + ALLOWED_KEYS
        )
    entries = {str(k): v for k, v in document.items() if str(k).lower() != METRICS_SECTION}
    section: object = next(
        (v for k, v in document.items() if str(k).lower() == METRICS_SECTION), {}
    )
    if not isinstance(section, Mapping):
        raise RunMappingError(f"{origin}: 'metrics:' holds METRIC: KEY lines, e.g. amae: test_amae")
    bad = next((k for k in section if str(k).lower() not in REGISTRY), None)
    if bad is not None:
        raise RunMappingError(
            f"{origin}: metrics: {shown(bad)} is not a SoftGrade metric; allowed: "
            f"{', '.join(REGISTRY)} (`softgrade metrics`)"
        )
    for name, value in [*entries.items(), *section.items()]:
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise RunMappingError(
                f"{origin}: {shown(name)} needs a name as its source, not {shown(value)}"
            )
    mapping = RunMapping().with_entries({k: str(v) for k, v in entries.items()}, origin)
    metrics = {str(k): str(v) for k, v in section.items()}
    return mapping.with_entries(metrics, origin) if metrics else mapping


@dataclass(frozen=True)
class MappedRuns:
    """The runs as a checked per-seed results table.

    Attributes:
        results: the checked table (`ResultsFile`), exactly as a CSV of it would give.
        runs_read: runs the table was built from.
        runs_skipped: runs with none of the key fields (task, method, seed), e.g. the
            parent run of a sweep, left out.
        metric_sources: SoftGrade metric -> the metric key read.
    """

    results: ResultsFile
    runs_read: int
    runs_skipped: int
    metric_sources: dict[str, str]


class _RunPlaces(Places):
    """Messages name the tracker's run and the field a column came from."""

    def __init__(self, run_ids: list[str], sources: Mapping[str, str], what: str) -> None:
        super().__init__()
        self.run_ids = run_ids
        self.sources = sources
        self.what = what

    def __call__(self, index: int) -> str:
        return f"{self.what} run {self.run_ids[index]}"

    def column(self, name: str) -> str:
        source = self.sources.get(name)
        if source is None:
            return f"column {shown(name)}"
        kind = "tag" if source.startswith(TAG_PREFIX) else "param"
        bare = source.removeprefix(TAG_PREFIX).removeprefix(PARAM_PREFIX)
        return f"{kind} {shown(bare)} (mapped to {name})"


def map_runs(
    runs: Sequence[TrackedRun], mapping: RunMapping, *, what: str = "MLflow"
) -> MappedRuns:
    """The runs as the long per-seed table (``task, method, seed, metric, value`` and, when
    mapped and given, ``n_train, n_test``), checked as a results file is.

    Args:
        runs: the experiment's runs.
        mapping: where each column and metric comes from.
        what: the tracker's name, for messages.

    Raises:
        RunMappingError: a mapped field or metric no run has (the message lists what the
            runs do have), or a run that has its keys but none of the mapped metrics.
        ResultsFileError: a bad value (naming the run and the field it came from).
    """
    if not runs:
        raise RunMappingError(f"the {what} experiment holds no finished run to import")
    keys = dict(mapping.keys)
    _require_fields(runs, keys, what)
    sizes = [k for k in SIZE_COLUMNS if any(r.field_value(keys[k]) is not None for r in runs)]
    if len(sizes) == 1:
        given, other = sizes[0], next(k for k in SIZE_COLUMNS if k not in sizes)
        raise RunMappingError(
            f"{what} runs give {given} ({_kind(keys[given])} {shown(_bare(keys[given]))}) but "
            f"none gives {other} ({_kind(keys[other])} {shown(_bare(keys[other]))}): the corrected "
            f"test needs both; map it with --map {other}=SOURCE, or leave both out"
        )
    sources = mapping.metric_sources(runs)
    _require_metrics(runs, sources, mapping, what)
    rows: list[dict[str, object]] = []
    run_ids: list[str] = []
    skipped = 0
    for run in runs:
        values = {k: run.field_value(keys[k]) for k in (*KEY_COLUMNS, *sizes)}
        if all(values[k] is None for k in KEY_COLUMNS):
            skipped += 1
            continue
        read = [(m, run.metrics[key]) for m, key in sources.items() if key in run.metrics]
        if not read:
            raise RunMappingError(
                f"{what} run {run.run_id} has none of the metric keys the mapping reads "
                f"({', '.join(sources.values())}); its metric keys: "
                f"{_listed(run.metrics)}; map one with --map METRIC=KEY"
            )
        for metric, value in read:
            rows.append({**values, "metric": metric, "value": _number(value)})
            run_ids.append(run.run_id)
    if not rows:
        raise RunMappingError(
            f"no {what} run has any of the key fields {_sources(keys, KEY_COLUMNS)}; "
            + ALLOWED_KEYS
        )
    frame = pd.DataFrame(rows, columns=[*METRIC_COLUMNS, *sizes])
    frame = frame.astype(object).where(frame.notna(), "")
    places = _RunPlaces(run_ids, {k: keys[k] for k in (*KEY_COLUMNS, *sizes)}, what)
    results = check_results(frame, csv=False, places=places)
    return MappedRuns(results, len(runs) - skipped, skipped, sources)


def _require_fields(runs: Sequence[TrackedRun], keys: Mapping[str, str], what: str) -> None:
    """Every mapped key column's source is held by some run (a size left at its default may
    be absent: sizes are optional)."""
    for key, source in keys.items():
        if key in SIZE_COLUMNS and source == key:
            continue
        if any(run.field_value(source) is not None for run in runs):
            continue
        if source.startswith(TAG_PREFIX):
            held = f"their tags: {_listed(t for r in runs for t in r.tags)}"
        else:
            held = f"their params: {_listed(p for r in runs for p in r.params)}"
        raise RunMappingError(
            f"no {what} run has the {_kind(source)} {shown(_bare(source))} that {key} is mapped "
            f"to; {held}; map {key} with --map {key}=SOURCE (a param, or tags.NAME)"
        )


def _require_metrics(
    runs: Sequence[TrackedRun], sources: Mapping[str, str], mapping: RunMapping, what: str
) -> None:
    held = _listed(k for r in runs for k in r.metrics)
    if not sources:
        raise RunMappingError(
            f"no {what} run has a metric key that names a SoftGrade metric "
            f"({', '.join(REGISTRY)}); their metric keys: {held}; map one with --map "
            "METRIC=KEY, e.g. amae=test_amae"
        )
    for metric, key in mapping.metrics.items():
        if not any(key in run.metrics for run in runs):
            raise RunMappingError(
                f"no {what} run has the metric key {shown(key)} that {metric} is mapped to; "
                f"their metric keys: {held}"
            )


def _number(value: object) -> object:
    return "" if isinstance(value, float) and math.isnan(value) else value


def _kind(source: str) -> str:
    return "tag" if source.startswith(TAG_PREFIX) else "param"


def _bare(source: str) -> str:
    return source.removeprefix(TAG_PREFIX).removeprefix(PARAM_PREFIX)


def _sources(keys: Mapping[str, str], names: Iterable[str]) -> str:
    return ", ".join(f"{n} ({_kind(keys[n])} {shown(_bare(keys[n]))})" for n in names)


def _listed(names: Iterable[str], most: int = 12) -> str:
    unique = sorted(dict.fromkeys(names))
    if not unique:
        return "none"
    shown = ", ".join(unique[:most])
    return shown + (f" and {len(unique) - most} more" if len(unique) > most else "")
