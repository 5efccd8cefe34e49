"""``python -m jobs stats STUDY_ID [--metric AMAE] [-o FILE.csv|.parquet|.tex]``: the paired
comparisons.

One row per task × pair of methods × metric, with the mean paired difference over seeds, its
corrected resampled t interval and p (Nadeau & Bengio 2003), the correlation that test assumes
(``rho_assumed``) and the ``r_break_even`` at which its p crosses 0.05, the exact Wilcoxon p
(raw and Holm-adjusted within the task and metric), d_z and the rank-biserial r, the Bayesian
correlated t-test's ``p_bayes_a_better``, ``p_bayes_equivalent``, ``p_bayes_b_better`` within
a ROPE (``--rope``) and its ``verdict`` (`engine.analysis.paired`); then, in the CSV, the
film-sampling bootstrap interval, the naive paired t p, the corrected p at r = 0, 0.1, 0.2,
the ROPE, TOST p, the Holm-adjusted corrected p within its declared family and that family.
A CSV is headed by the study card as ``# `` lines, as the pages' exports are
(`jobs.services.export_cards`); ``-o`` ending ``.parquet`` writes Parquet with the card in its
metadata, ``.tex`` one LaTeX table per metric (the pages' `paired_latex`).

`jobs.services.study_analysis.paired_table` is the same table for any caller (a page, a bench
script).

``--components`` gives, for a factorial study (``seeds: {splits: S, inits: I}``), each pair's
variance components instead (split, init, residual, their shares and the factorial, per-split
and design-corrected intervals: `engine.analysis.variance_components`); ``-o`` writes them as
CSV or Parquet. For any other study it says, in one sentence, why the design cannot separate
them and how to ask for a factorial study.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path, PurePath

import pandas as pd

from engine.analysis import paired
from engine.analysis.metrics import (
    CALIBRATED_METRICS,
    METRIC_LABELS,
    METRICS,
    STATS_METRICS,
    get_metric,
)
from engine.analysis.table_columns import COMPONENTS, PAIRED
from jobs.cli.arg_types import add_force_arg
from jobs.services import study_analysis
from jobs.services.csv_safe import escape_csv_cells
from jobs.services.export_cards import export_cards, headed
from pages.present import variance_tables
from pages.present.reviewer_tables import paired_latex
from store import analysis as store_analysis
from store import runs as store_runs
from store.db import default_store_path
from store.outputs import OutputRefused, atomic_output, check_output, write_text

#: Exit status for bad input (an unknown study, an unknown metric, a bad output name).
BAD_INPUT = 2
DEFAULT_BOOTSTRAP = study_analysis.DEFAULT_BOOTSTRAP


def cmd_stats(args: argparse.Namespace) -> int:
    """Print the paired table, or write it as CSV under the study card."""
    path = default_store_path()
    if args.list:
        return _list_studies(path)
    if not args.study_id:
        print("error: name a study: python -m jobs stats STUDY_ID", file=sys.stderr)
        print(_LIST_HINT, file=sys.stderr)
        return BAD_INPUT
    if not path.exists() or not store_analysis.study_exists(args.study_id, path=path):
        print(f"error: no study {args.study_id!r} in {path}; {_LIST_HINT}", file=sys.stderr)
        return BAD_INPUT
    metric = args.metric.lower() if args.metric else None
    if metric is not None and metric not in STATS_METRICS:
        names = ", ".join(m.upper() for m in STATS_METRICS)
        print(f"error: unknown metric {args.metric!r}; choose one of {names}", file=sys.stderr)
        return BAD_INPUT
    available = {
        name: study_analysis.calibrated_available(args.study_id, name, path=path)
        for name in CALIBRATED_METRICS
    }
    if metric in CALIBRATED_METRICS and not available[metric]:
        print(f"error: {_not_available(metric, args.study_id)}", file=sys.stderr)
        return BAD_INPUT
    chosen = (metric,) if metric else METRICS + tuple(m for m in available if available[m])
    ropes = _ropes(args.rope or [], metric)
    if isinstance(ropes, str):
        print(f"error: {ropes}", file=sys.stderr)
        return BAD_INPUT
    if args.output and PurePath(args.output).suffix.lower() not in OUTPUT_SUFFIXES:
        print(
            f"error: {args.output!r}: -o writes {', '.join(OUTPUT_SUFFIXES)} (CSV, Parquet or "
            "LaTeX, by the file's extension)",
            file=sys.stderr,
        )
        return BAD_INPUT
    refused = _output_refused(args)
    if refused:
        print(f"error: {refused}", file=sys.stderr)
        return BAD_INPUT
    if args.components:
        return _components(args, chosen, path)
    table = study_analysis.paired_table(
        args.study_id,
        metrics=chosen,
        n_boot=args.bootstrap,
        ropes=ropes,
        path=path,
    )
    if table.empty:
        print(
            f"study {args.study_id!r} has no two methods with selected runs yet; nothing to compare"
        )
        return 0
    unsized = study_analysis.unsized_tasks(args.study_id, path=path)
    skipped = [] if metric else [m for m in available if not available[m]]
    if args.output:
        write_table(
            table, Path(args.output), export_cards(str(path), [args.study_id]), force=args.force
        )
        print(f"{len(table)} rows written to {args.output}")
        if unsized:
            print(f"note: no split sizes for {', '.join(unsized)}: {study_analysis.UNSIZED_NOTE}")
        for name in skipped:
            print(f"note: {_not_available(name, args.study_id)}")
        return 0
    print(_verdict_first(table).to_string(index=False, float_format=_number))
    if notes := _verdict_notes(table):
        print("\nWhere a verdict and its p seem to disagree:\n" + "\n".join(notes))
    if unsized:
        print(f"\nnote: no split sizes for {', '.join(unsized)}: {study_analysis.UNSIZED_NOTE}.")
    for name in skipped:
        print(f"\nnote: {_not_available(name, args.study_id)}.")
    if any(name in CALIBRATED_METRICS for name in chosen):
        print(f"\n{_calibrated_note()}")
    print(
        f"\nci_low/ci_high: {paired.MEAN_CI_KIND.replace('mean ±', 'difference ±')}; it "
        "assumes the between-seed correlation rho_assumed, which one dataset cannot measure: "
        "below r_break_even (the r = rho/(1 - rho) where p_corrected = 0.05) the difference "
        "would be significant. p_wilcoxon: exact, ties and zeros included. p_bayes_*: the "
        "Bayesian correlated t-test on the same variance, 'better' in the metric's direction "
        f"(ROPE: --rope, default {paired.DEFAULT_ROPE:g}). {paired.VERDICT_RULE} "
        f"{paired.families_sentence(table)} The CSV adds p_corrected_holm, boot_ci "
        f"({paired.BOOTSTRAP_CI_KIND}), p at r = 0, 0.1, 0.2 and TOST p."
    )
    if study_analysis.is_factorial(args.study_id, path=path):
        print(
            "\nThis study is a factorial seeds design: `stats STUDY_ID --components` separates "
            "each difference's variance into split, init and residual."
        )
    return 0


def _not_available(metric: str, study_id: str) -> str:
    """One line: a calibrated metric cannot be given for this study, and why."""
    return (
        f"{METRIC_LABELS[metric]} ({metric}) is not available for study {study_id!r}: "
        f"{study_analysis.NO_CALIBRATION_NOTE}"
    )


def _calibrated_note() -> str:
    """What the calibrated rows are, said under the table (their coverage included)."""
    return " ".join(
        f"{METRIC_LABELS[name]} ({name}): {get_metric(name).meaning} Its rows have no film "
        "bootstrap (boot_ci blank)."
        for name in CALIBRATED_METRICS
    )


def _verdict_first(table: pd.DataFrame) -> pd.DataFrame:
    """The printed columns: the verdict and its Holm p right after the difference and its
    interval (`paired.VERDICT_FIRST_COLUMNS`), then the rest of the paired columns."""
    return table[list(PAIRED.view("printed"))]


def _verdict_notes(table: pd.DataFrame) -> list[str]:
    """One line per row whose corrected p and verdict seem to disagree, saying why."""
    notes = []
    for row in table.to_dict("records"):
        if note := paired.verdict_note(row, paired.ALPHA).strip():
            pair = (
                f"{row['task']} {str(row['metric']).upper()}, {row['method_a']} - {row['method_b']}"
            )
            notes.append(f"  {pair}: {note}")
    return notes


#: The columns `stats --components` prints, in the engine's order (the CSV has every one;
#: `engine.analysis.table_columns.COMPONENTS` says which are left to it).
COMPONENT_PRINTED: tuple[str, ...] = COMPONENTS.view("printed")


def _components(args: argparse.Namespace, chosen: tuple[str, ...], path: Path) -> int:
    """``stats --components``: the variance components of a factorial study."""
    if args.output and PurePath(args.output).suffix.lower() == ".tex":
        print(
            f"error: {args.output!r}: --components writes .csv or .parquet (no LaTeX table)",
            file=sys.stderr,
        )
        return BAD_INPUT
    if not study_analysis.is_factorial(args.study_id, path=path):
        print(variance_tables.plain(variance_tables.NOT_FACTORIAL_NOTE))
        return 0
    table = study_analysis.components_table(args.study_id, metrics=chosen, path=path)
    if table.empty:
        print(f"study {args.study_id!r} has no pair with 2 finished splits and 2 inits yet")
        return 0
    if args.output:
        write_table(
            table, Path(args.output), export_cards(str(path), [args.study_id]), force=args.force
        )
        print(f"{len(table)} rows written to {args.output}")
        return 0
    print(table[list(COMPONENT_PRINTED)].to_string(index=False, float_format=_number))
    print(f"\n{variance_tables.design_line(table)}\n")
    print(variance_tables.plain(variance_tables.INTERVALS_NOTE))
    return 0


#: What ``-o`` writes, by the output's extension.
OUTPUT_SUFFIXES: tuple[str, ...] = (".csv", ".parquet", ".tex")


def _output_refused(args: argparse.Namespace) -> str | None:
    """Why ``-o`` may not be written (a link, a folder, a file without ``--force``), or None."""
    if not args.output:
        return None
    try:
        check_output(args.output, force=args.force)
    except OutputRefused as exc:
        return str(exc)
    return None


def write_table(
    table: pd.DataFrame, output: Path, cards: tuple[dict[str, str], ...], *, force: bool = False
) -> None:
    """The paired table as CSV (under the study card's ``#`` lines), Parquet (the card in
    the file's metadata, key ``softgrade.study_cards``) or LaTeX (one booktabs table per
    metric, `pages.present.reviewer_tables.paired_latex`, under ``%`` card lines), written
    through `store.outputs.atomic_output` (never through a link; over a file only with
    ``force``)."""
    suffix = output.suffix.lower()
    if suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        arrow = pa.Table.from_pandas(table, preserve_index=False)
        meta = {**(arrow.schema.metadata or {}), b"softgrade.study_cards": json.dumps(cards)}
        with atomic_output(output, force=force) as partial:
            pq.write_table(arrow.replace_schema_metadata(meta), partial)
        return
    if suffix == ".tex":
        text = "\n".join(
            paired_latex(part, METRIC_LABELS.get(str(metric), str(metric).upper())).replace(
                "\\label{tab:paired}", f"\\label{{tab:paired-{metric}}}"
            )
            for metric, part in table.groupby("metric", sort=False)
        )
    else:
        text = escape_csv_cells(table).to_csv(index=False)
    write_text(output, headed(text, cards, output.name), force=force)


def _number(value: float) -> str:
    return f"{value:.4g}"


def _ropes(given: list[str], metric: str | None) -> dict[str, float] | str:
    """``--rope 0.02`` (every metric shown) or ``--rope qwk=0.02`` (one metric) as metric ->
    ROPE, or the message of what is wrong."""
    ropes: dict[str, float] = {}
    for item in given:
        name, _, value = item.rpartition("=")
        names = [name.lower()] if name else ([metric] if metric else list(STATS_METRICS))
        if name and name.lower() not in STATS_METRICS:
            allowed = ", ".join(m.upper() for m in STATS_METRICS)
            return f"--rope {item!r}: unknown metric {name!r}; choose one of {allowed}"
        try:
            width = float(value)
        except ValueError:
            return f"--rope {item!r}: the ROPE must be a number >= 0, e.g. 0.01 or AMAE=0.01"
        if not width >= 0:
            return f"--rope {item!r}: the ROPE must be a number >= 0, e.g. 0.01 or AMAE=0.01"
        ropes.update(dict.fromkeys(names, width))
    return ropes


_LIST_HINT = "`python -m jobs stats --list` lists the studies of the store"


def _list_studies(path: Path) -> int:
    if not path.exists():
        print(f"no store at {path} yet")
        return 0
    studies = store_runs.list_studies(include_archived=True, path=path)
    if studies.empty:
        print("no studies")
    for s in studies.itertuples():
        print(f"{s.study_id}  {s.runs_selected:>4} selected runs  {s.name}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``stats`` on the CLI's subcommands."""
    p = sub.add_parser(
        "stats", help="paired comparisons of a study's methods (corrected t, Wilcoxon, effects)"
    )
    p.add_argument("study_id", nargs="?", help="the study (--list shows them)")
    p.add_argument(
        "--metric",
        default=None,
        help="one metric, e.g. AMAE or SET_SIZE (default: the six grade metrics, and the set "
        "size where the study has validation predictions; `softgrade metrics` lists them)",
    )
    p.add_argument(
        "-o",
        "--output",
        default=None,
        help="write the table here: .csv (headed by the study card), .parquet (the card in "
        "its metadata) or .tex (one LaTeX table per metric)",
    )
    add_force_arg(p)
    p.add_argument(
        "--bootstrap",
        type=int,
        default=DEFAULT_BOOTSTRAP,
        help="hierarchical bootstrap replicates (0: leave the bootstrap interval out)",
    )
    p.add_argument(
        "--rope",
        action="append",
        metavar="[METRIC=]WIDTH",
        help="region of practical equivalence of the Bayesian test and TOST: a width for "
        f"every metric or METRIC=WIDTH for one, repeatable (default {paired.DEFAULT_ROPE:g})",
    )
    p.add_argument(
        "--components",
        action="store_true",
        help="a factorial study's variance components per pair (split, init, residual) and "
        "the intervals they support, instead of the paired table",
    )
    p.add_argument("--list", action="store_true", help="list the studies of the store")
    p.set_defaults(func=cmd_stats)
