"""``import-results`` and ``export``: results in from another tool, a study out as a bundle.

- ``import-results FILE [--name NAME]``: a CSV or Parquet file of per-seed metrics
  (``task,method,seed,metric,value``) or per-film predictions (``task,method,seed,film,grade,
  p0..pK``), optionally with ``n_train,n_test``, becomes a study whose statistics, pages and
  report work like a trained one's, marked "imported: no training provenance"
  (docs/import-results.md). A bad file is refused with one line naming its first bad row
  and column; nothing of it is stored.
- ``export STUDY -o study.zip``: the study's complete seeds as a bundle with its study card
  (`jobs.services.results_io.export_bundle`, as bench/export_reference.py writes it);
  ``import-study`` loads it into any store.

Exit status: 0 done, 2 bad input (one line naming what is wrong).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.analysis.results_file import ResultsFileError
from engine.films import escaped
from jobs.cli.lab_commands import os_user
from jobs.services import results_io
from store.db import StoreError, default_store_path, init_schema

BAD_INPUT = 2


def cmd_import_results(args: argparse.Namespace) -> int:
    """Store a results file as a new study."""
    path = default_store_path()
    init_schema(path)
    try:
        done = results_io.import_results(args.file, name=args.name, by=os_user(), path=path)
    except ResultsFileError as exc:
        print(f"error: {args.file}: {escaped(str(exc))}; nothing was stored", file=sys.stderr)
        return BAD_INPUT
    what = (
        f"{done.predictions} film predictions"
        if done.predictions
        else f"{done.metric_values} metric values"
    )
    print(
        f"imported “{escaped(done.name)}” ({done.study_id}): {done.runs} runs, {what}, into "
        f"{path}; `softgrade stats {done.study_id}` and `softgrade report {done.study_id}` "
        "analyse it"
    )
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Write a study's bundle."""
    path = default_store_path()
    if not path.exists():
        print(f"error: no store at {path}", file=sys.stderr)
        return BAD_INPUT
    if Path(args.output).suffix.lower() != ".zip":
        print(f"error: {args.output!r}: -o writes a study bundle, a .zip file", file=sys.stderr)
        return BAD_INPUT
    try:
        done = results_io.export_bundle(args.study_id, args.output, name=args.name, path=path)
    except StoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    size = done.file.stat().st_size
    seeds = f"{len(done.seeds)} seed{'s' * (len(done.seeds) != 1)}"
    print(
        f"wrote {done.file} ({size / 2**20:.2f} MiB): study {done.study_id}, {seeds}; "
        "`softgrade import-study` loads it into another store"
    )
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``import-results`` and ``export`` on the CLI's subcommands."""
    p = sub.add_parser(
        "import-results",
        help="a CSV/Parquet of per-seed metrics or per-film predictions from another tool "
        "becomes a study (docs/import-results.md)",
    )
    p.add_argument("file", help="the results file (.csv or .parquet)")
    p.add_argument("--name", default=None, help="the study's name (default: the file's)")
    p.set_defaults(func=cmd_import_results)
    p = sub.add_parser("export", help="a study's complete seeds as one bundle file (.zip)")
    p.add_argument("study_id", metavar="STUDY_ID", help="`stats --list` shows them")
    p.add_argument("-o", "--output", required=True, help="the bundle to write, e.g. study.zip")
    p.add_argument("--name", default=None, help="the study's name on import (default: its own)")
    p.set_defaults(func=cmd_export)
