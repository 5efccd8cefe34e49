"""``softgrade sets STUDY [--coverage 0.9] [--score NAME] [--per-grade] [-o FILE.csv]``: conformal
grade sets of a study's selected runs (`engine.analysis.conformal`, docs/conformal.md).

Each run's thresholds come from its validation films and are applied to its test films. The
terminal shows the mean over seeds per task, method and score; ``-o`` writes one row per
task, method, seed and score (coverage, coverage per true grade, mean set size, singleton
share, the share of sets that are ranges) under the study card, as the pages' exports are.
An existing ``-o`` file is kept unless ``--force``; a link is never written through.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from engine.analysis import conformal
from engine.analysis.table_columns import GRADE_SETS
from jobs.cli.sets_referee_command import coverage_arg
from jobs.services import grade_sets
from jobs.services.csv_safe import escape_csv_cells
from jobs.services.export_cards import export_cards, headed
from store import analysis as store_analysis
from store.db import default_store_path

#: Exit status for bad input (an unknown study, score or coverage, an output it will not write).
BAD_INPUT = 2
#: The columns it prints (`engine.analysis.table_columns.GRADE_SETS`).
PRINTED: tuple[str, ...] = GRADE_SETS.view("printed")


def cmd_sets(args: argparse.Namespace) -> int:
    """Print the sets' summary, or write the per-seed rows as CSV."""
    path = default_store_path()
    problem = _input_problem(args, path)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return BAD_INPUT
    scores = (conformal.get_score(args.score).name,) if args.score else tuple(conformal.SCORES)
    table = grade_sets.study_sets(
        args.study_id,
        coverage=args.coverage,
        scores=scores,
        per_grade=args.per_grade,
        path=path,
    )
    if table.empty:
        print(f"study {args.study_id!r} has no run to give sets: {grade_sets.NO_VALIDATION_NOTE}")
        return 0
    if args.output:
        text = escape_csv_cells(table.drop(columns="run_id")).to_csv(index=False)
        output = Path(args.output)
        write_new_file(
            output,
            headed(text, export_cards(str(path), [args.study_id]), output.name),
            force=args.force,
        )
        print(f"{len(table)} rows written to {args.output}")
        return 0
    summary = conformal.method_summary(table)
    print(summary[list(PRINTED)].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    kind = "per true grade" if args.per_grade else "over all films"
    print(
        f"\ncoverage: share of test films whose recorded grade is in its set; target "
        f"{args.coverage:g} {kind}, thresholds from each run's validation films; mean over "
        "seeds. -o writes each seed's row with the coverage per grade."
    )
    return 0


def _input_problem(args: argparse.Namespace, path: Path) -> str | None:
    """What is wrong with the command's input, in one line, or None."""
    if not path.exists() or not store_analysis.study_exists(args.study_id, path=path):
        return f"no study {args.study_id!r} in {path}; `softgrade stats --list` lists them"
    try:
        conformal.check_coverage(args.coverage)
        if args.score:
            conformal.get_score(args.score)
    except ValueError as exc:
        return str(exc)
    if args.output:
        output = Path(args.output)
        if output.suffix.lower() != ".csv":
            return f"{args.output!r}: -o writes a .csv file"
        if output.is_symlink():
            return f"{args.output!r} is a link; write to a plain file name (nothing was written)"
        if output.exists() and not args.force:
            return f"{args.output!r} exists; pass --force to replace it (nothing was written)"
        if not output.parent.is_dir():
            return f"no folder {str(output.parent)!r} for {args.output!r}"
    return None


def write_new_file(output: Path, text: str, *, force: bool) -> None:
    """Write ``text`` to a temporary file beside ``output`` and rename it over, so a reader
    never sees half a file; never through a link, and over an existing file only if
    ``force``.

    Raises:
        ValueError: ``output`` is a link, or exists without ``force``.
    """
    if output.is_symlink():
        raise ValueError(f"{output} is a link; nothing was written")
    if output.exists() and not force:
        raise ValueError(f"{output} exists; pass --force to replace it (nothing was written)")
    handle, partial = tempfile.mkstemp(prefix=f".{output.name}.", dir=output.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        os.replace(partial, output)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``sets`` on the CLI's subcommands."""
    p = sub.add_parser(
        "sets", help="conformal grade sets of a study's runs: coverage and set size per method"
    )
    p.add_argument("study_id", help="the study (`softgrade stats --list` shows them)")
    p.add_argument(
        "--coverage",
        type=coverage_arg,
        default=conformal.DEFAULT_COVERAGE,
        help=f"nominal coverage, between 0 and 1 (default {conformal.DEFAULT_COVERAGE:g})",
    )
    p.add_argument(
        "--score",
        default=None,
        help=f"one score: {', '.join(conformal.SCORES)} (default: all; docs/conformal.md)",
    )
    p.add_argument(
        "--per-grade",
        action="store_true",
        help="thresholds per true grade (class-conditional coverage) instead of one for all",
    )
    p.add_argument("-o", "--output", default=None, help="write one row per seed here (.csv)")
    p.add_argument("--force", action="store_true", help="replace an existing -o file")
    p.set_defaults(func=cmd_sets)
