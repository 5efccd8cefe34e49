"""``import-results`` and ``export``: results in from another tool, a study out as a bundle.

- ``import-results FILE [--name NAME]``: a CSV or Parquet file of per-seed metrics
  (``task,method,seed,metric,value``) or per-film predictions (``task,method,seed,film,grade,
  p0..pK``), optionally with ``n_train,n_test``, becomes a study whose statistics, pages and
  report work like a trained one's, marked "imported: no training provenance"
  (docs/import-results.md). A bad file is refused with one line naming its first bad row
  and column; nothing of it is stored.
- ``import-results --mlflow-uri URI --experiment NAME [--map KEY=SOURCE] [--mapping FILE]
  [--filter F]``: an MLflow experiment's finished runs, mapped to the same per-seed table
  (`engine.analysis.run_mapping`), with the same checks (the ``mlflow`` extra).
- ``export STUDY -o study.zip``: the study's complete seeds as a bundle with its study card
  (`jobs.services.results_io.export_bundle`, as bench/export_reference.py writes it);
  ``import-study`` loads it into any store. ``export STUDY --mlflow-uri URI [--experiment
  NAME]`` logs its selected runs to MLflow instead (`jobs.services.mlflow_io`).

Exit status: 0 done, 2 bad input (one line naming what is wrong).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from engine.analysis.results_file import ResultsFileError
from engine.analysis.run_mapping import (
    RunMapping,
    RunMappingError,
    mapping_from_document,
    parse_entries,
)
from engine.films import escaped
from jobs.cli.arg_types import add_force_arg
from jobs.cli.lab_commands import os_user
from jobs.services import mlflow_io, results_io
from jobs.services.mlflow_io import EXTRA
from store.db import StoreError, default_store_path, init_schema
from store.outputs import OutputRefused
from store.results import StoredResults

BAD_INPUT = 2


def cmd_import_results(args: argparse.Namespace) -> int:
    """Store a results file, or an MLflow experiment's runs, as a new study."""
    if args.mlflow_uri is not None or args.experiment is not None:
        return _import_mlflow(args)
    if args.file is None:
        print(
            "error: name a results file (.csv or .parquet), or an MLflow experiment with "
            "--mlflow-uri URI --experiment NAME",
            file=sys.stderr,
        )
        return BAD_INPUT
    if args.map or args.mapping or args.filter:
        print(
            "error: --map, --mapping and --filter read MLflow runs (--mlflow-uri)", file=sys.stderr
        )
        return BAD_INPUT
    path = default_store_path()
    init_schema(path)
    try:
        done = results_io.import_results(
            args.file, name=args.name, by=os_user(), again=args.again, path=path
        )
    except ResultsFileError as exc:
        print(f"error: {args.file}: {escaped(str(exc))}; nothing was stored", file=sys.stderr)
        return BAD_INPUT
    print(_imported(done, path))
    return 0


def _imported(done: StoredResults, path: Path) -> str:
    what = (
        f"{done.predictions} film predictions"
        if done.predictions
        else f"{done.metric_values} metric values"
    )
    return (
        f"imported “{escaped(done.name)}” ({done.study_id}): {done.runs} runs, {what}, into "
        f"{path}; `softgrade stats {done.study_id}` and `softgrade report {done.study_id}` "
        "analyse it"
    )


def _import_mlflow(args: argparse.Namespace) -> int:
    """``import-results --mlflow-uri URI --experiment NAME``: the experiment's runs."""
    if args.file is not None:
        print(
            f"error: {args.file!r}: import a file or an MLflow experiment (--mlflow-uri), not both",
            file=sys.stderr,
        )
        return BAD_INPUT
    if not args.mlflow_uri or not args.experiment:
        print(
            "error: an MLflow import needs --mlflow-uri URI and --experiment NAME", file=sys.stderr
        )
        return BAD_INPUT
    where = f"MLflow experiment {args.experiment!r}"
    try:
        mapping = _mapping(args)
        path = default_store_path()
        init_schema(path)
        done = mlflow_io.import_experiment(
            args.mlflow_uri,
            args.experiment,
            mapping=mapping,
            name=args.name,
            filter_string=args.filter or "",
            by=os_user(),
            path=path,
        )
    except mlflow_io.MlflowUnavailable as exc:
        print(f"error: {escaped(str(exc))}", file=sys.stderr)
        return BAD_INPUT
    except ResultsFileError as exc:
        print(f"error: {escaped(where)}: {escaped(str(exc))}; nothing was stored", file=sys.stderr)
        return BAD_INPUT
    print(_imported(done.stored, path))
    left_out = []
    if done.mapped.runs_skipped:
        left_out.append(f"{done.mapped.runs_skipped} without task, method or seed")
    if done.runs_unfinished:
        left_out.append(f"{done.runs_unfinished} not finished")
    read = ", ".join(f"{m} from {k!r}" for m, k in done.mapped.metric_sources.items())
    print(f"read {done.mapped.runs_read} MLflow runs ({read})", end="")
    print(f"; left out {' and '.join(left_out)}" if left_out else "")
    return 0


#: Largest ``--mapping`` file read: a mapping is a dozen lines (a 50 MB one was echoed whole).
MAX_MAPPING_BYTES = 64 * 1024


class _NoAliasLoader(yaml.SafeLoader):
    """YAML without anchors' aliases: a mapping never needs one, and a 389-byte alias bomb
    (``a: &a [x, x, ...]``, ``b: &b [*a, *a, ...]``, ...) expanded to a MemoryError after a
    minute."""

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise RunMappingError(
                f"--mapping: line {mark.line + 1} uses a YAML alias (*name); a mapping file "
                "holds plain KEY: SOURCE lines, without anchors or aliases"
            )
        return super().compose_node(parent, index)


def _mapping(args: argparse.Namespace) -> RunMapping:
    """The defaults, under the ``--mapping`` file, under each ``--map`` item."""
    mapping = RunMapping()
    if args.mapping:
        file = Path(args.mapping)
        try:
            with file.open("rb") as handle:
                raw = handle.read(MAX_MAPPING_BYTES + 1)
            if len(raw) > MAX_MAPPING_BYTES:
                raise RunMappingError(
                    f"--mapping {file.name}: larger than {MAX_MAPPING_BYTES // 1024} KiB; a "
                    "mapping file holds a few KEY: SOURCE lines"
                )
            document = yaml.load(raw.decode("utf-8"), Loader=_NoAliasLoader)  # a SafeLoader
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            raise RunMappingError(f"--mapping {file}: cannot be read as YAML ({first})") from exc
        mapping = mapping_from_document(document, f"--mapping {file.name}")
    if args.map:
        mapping = mapping.with_entries(parse_entries(args.map), "--map")
    return mapping


def cmd_export(args: argparse.Namespace) -> int:
    """Write a study's bundle, or log its selected runs to MLflow."""
    path = default_store_path()
    if not path.exists():
        print(f"error: no store at {path}", file=sys.stderr)
        return BAD_INPUT
    if (args.output is None) == (args.mlflow_uri is None):
        print(
            "error: export to a bundle (-o study.zip) or to MLflow (--mlflow-uri URI), one of "
            "the two",
            file=sys.stderr,
        )
        return BAD_INPUT
    if args.mlflow_uri is not None:
        return _export_mlflow(args, path)
    if args.experiment is not None:
        print("error: --experiment names an MLflow experiment (--mlflow-uri)", file=sys.stderr)
        return BAD_INPUT
    if Path(args.output).suffix.lower() != ".zip":
        print(f"error: {args.output!r}: -o writes a study bundle, a .zip file", file=sys.stderr)
        return BAD_INPUT
    try:
        done = results_io.export_bundle(
            args.study_id,
            args.output,
            name=args.name,
            all_test_predictions=args.all_test_predictions,
            force=args.force,
            path=path,
        )
    except (StoreError, OutputRefused) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    size = done.file.stat().st_size
    seeds = f"{len(done.seeds)} seed{'s' * (len(done.seeds) != 1)}"
    print(
        f"wrote {done.file} ({size / 2**20:.2f} MiB): study {done.study_id}, {seeds}; "
        "`softgrade import-study` loads it into another store"
    )
    return 0


def _export_mlflow(args: argparse.Namespace, path: Path) -> int:
    if args.name is not None:
        print("error: --name names a bundle's study; MLflow takes --experiment", file=sys.stderr)
        return BAD_INPUT
    try:
        done = mlflow_io.export_study(
            args.study_id, args.mlflow_uri, experiment=args.experiment, path=path
        )
    except (StoreError, mlflow_io.MlflowUnavailable) as exc:
        print(f"error: {escaped(str(exc))}", file=sys.stderr)
        return BAD_INPUT
    print(
        f"logged {done.runs} runs ({done.metric_values} metric values) of study "
        f"{args.study_id} to MLflow experiment “{escaped(done.experiment)}” "
        f"({done.experiment_id}) at {done.tracking_uri}; `softgrade import-results "
        "--mlflow-uri URI --experiment NAME` reads them back"
    )
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``import-results`` and ``export`` on the CLI's subcommands."""
    p = sub.add_parser(
        "import-results",
        help="a CSV/Parquet of per-seed metrics or per-film predictions from another tool, or "
        "an MLflow experiment's runs, becomes a study (docs/import-results.md)",
    )
    p.add_argument("file", nargs="?", help="the results file (.csv or .parquet)")
    p.add_argument(
        "--name", default=None, help="the study's name (default: the file's or experiment's)"
    )
    p.add_argument(
        "--again",
        action="store_true",
        help="store a second copy of a file imported before (by default it is refused, naming "
        "its study)",
    )
    mlflow = p.add_argument_group(f"from MLflow (the mlflow extra: pip install '{EXTRA}')")
    mlflow.add_argument("--mlflow-uri", default=None, help="the tracking URI (file:, http(s):)")
    mlflow.add_argument("--experiment", default=None, help="the experiment's name")
    mlflow.add_argument(
        "--map",
        action="append",
        metavar="KEY=SOURCE",
        help="where a column or metric comes from: task=dataset, method=tags.mlflow.runName, "
        "seed=random_state, n_train=..., n_test=..., amae=test_amae (repeatable)",
    )
    mlflow.add_argument(
        "--mapping", default=None, metavar="FILE.yaml", help="the same mapping as a YAML file"
    )
    mlflow.add_argument(
        "--filter",
        default=None,
        help="an MLflow search filter choosing the runs, e.g. \"tags.final = 'true'\"",
    )
    p.set_defaults(func=cmd_import_results)
    p = sub.add_parser(
        "export",
        help="a study's complete seeds as one bundle file (.zip), or its selected runs to MLflow",
    )
    p.add_argument("study_id", metavar="STUDY_ID", help="`stats --list` shows them")
    p.add_argument("-o", "--output", default=None, help="the bundle to write, e.g. study.zip")
    add_force_arg(p)
    p.add_argument("--name", default=None, help="the study's name on import (default: its own)")
    p.add_argument(
        "--all-test-predictions",
        action="store_true",
        help="also ship every run's test predictions, not only the selected runs' (a larger "
        "file; the Robustness tab's budget-matched comparison needs them)",
    )
    p.add_argument(
        "--mlflow-uri", default=None, help="log the selected runs to this MLflow tracking URI"
    )
    p.add_argument(
        "--experiment", default=None, help="the MLflow experiment (default: the study's name)"
    )
    p.set_defaults(func=cmd_export)
