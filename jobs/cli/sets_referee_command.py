"""``softgrade calibrate-sets -o DIR``: the phantom as referee of the conformal grade sets.

On ``--datasets`` independent phantom datasets, each of ``--seeds`` seeds trains every
method of ``--methods`` once (its fixed configuration), calibrates every score of
`engine.analysis.conformal` on its validation films (one threshold, and per grade) and is
scored on one fresh test set from the same generator (`engine.referee.sets`). The table
says, per task, method, score and threshold kind, the mean coverage over datasets with its
Monte-Carlo interval, overall and per grade, against ``--coverage``.

Writes into ``-o DIR`` (a new or empty folder): ``sets_draws.csv`` (one row per dataset, seed,
method, score and kind; rewritten after each dataset, so an interrupted run keeps what it
finished), ``sets_summary.csv``, ``sets.md`` (the table) and ``sets.json`` (the card: sizes,
device, wall time, date, command). Defaults are tiny, for a CPU; ``python -m
jobs.cli.sets_referee_command ...`` runs it alone, without the store's duckdb.

One design can be trained in parts, by several processes or machines: ``--first-dataset A
--datasets B`` trains datasets ``A .. B-1`` only (the same data seed, so the same datasets and
the same fresh test set as one whole run), and ``--combine DIR DIR ... -o OUT`` joins the
parts' folders into one result, refusing parts of different designs or overlapping datasets.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from engine.analysis import conformal
from engine.config import SpecError
from engine.methods import paper_methods
from engine.referee.design import RefereeDesign
from engine.vocab import TASKS
from jobs.cli.arg_types import whole_from
from jobs.cli.referee_setup import add_parts_arguments, prepare_referee_run
from jobs.services.sets_referee_parts import (
    CARD_FILE,
    DRAWS_FILE,
    MARKDOWN_FILE,
    SUMMARY_FILE,
    datasets_done,
    read_sets_parts,
    write_sets_design,
)

BAD_INPUT = 2


def cmd_calibrate_sets(args: argparse.Namespace) -> int:
    """Run the sets referee for each task (or join parts) and write its tables."""
    if not args.output:
        return _bad("name the output folder: -o DIR (a new or empty folder)")
    out = Path(args.output)
    if out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir()))):
        return _bad(f"-o {out}: must be a new or empty folder, so no earlier result is lost")
    if args.combine:
        return _combine([Path(f) for f in args.combine], out)
    tasks = list(TASKS) if args.task == "both" else [args.task]
    try:
        conformal.check_coverage(args.coverage)
        designs = [_design(args, task) for task in tasks]
    except (SpecError, ValueError) as exc:
        return _bad(str(exc))
    from engine.referee.sets import run_sets_referee

    try:
        workers = prepare_referee_run(args.device, args.threads, out, args.render_workers)
    except ValueError as exc:
        return _bad(str(exc))
    write_sets_design(out, designs, args.coverage)
    started = datetime.now(UTC)
    done: list[pd.DataFrame] = []
    card: dict[str, Any] = {"created_at": started.strftime("%Y-%m-%d %H:%M UTC"), "tasks": {}}
    for design in designs:
        print(
            f"sets referee: {design.task}: datasets {design.first_dataset}-"
            f"{design.datasets - 1} x {design.seeds} seeds x {len(design.methods)} methods on "
            f"{design.device}",
            flush=True,
        )
        with tempfile.TemporaryDirectory(prefix="softgrade-sets-", dir=args.cache_dir) as work:
            result = run_sets_referee(
                design,
                Path(work),
                coverage=args.coverage,
                render_workers=workers,
                on_dataset=lambda r: _save(pd.concat([*done, r.draws]), out / DRAWS_FILE),
            )
        done.append(result.draws)
        card["tasks"][design.task] = {
            "datasets_done": result.datasets_done,
            "fresh_films": result.fresh_films,
            "device": result.device,
            "wall_s": round(result.wall_s, 1),
        }
    draws = pd.concat(done, ignore_index=True)
    _save(draws, out / DRAWS_FILE)
    return _finish(out, draws, designs, args.coverage, card)


def _combine(folders: list[Path], out: Path) -> int:
    """Join the folders of one design's parts (``--first-dataset``) into one result in ``out``."""
    try:
        parts = read_sets_parts(folders)
    except ValueError as exc:
        return _bad(str(exc))
    out.mkdir(parents=True, exist_ok=True)
    designs = list(parts.designs.values())
    write_sets_design(out, designs, parts.coverage)
    _save(parts.draws, out / DRAWS_FILE)
    card: dict[str, Any] = {
        "created_at": parts.created_at or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "tasks": {task: parts.task_card(task) for task in parts.designs},
        "parts": parts.describe(),
    }
    return _finish(out, parts.draws, designs, parts.coverage, card)


def _finish(
    out: Path,
    draws: pd.DataFrame,
    designs: list[RefereeDesign],
    coverage: float,
    card: dict[str, Any],
) -> int:
    """Write the card, and the summary and table once every task has 2 or more datasets."""
    design = designs[0]
    card |= {
        "coverage": coverage,
        "seeds": design.seeds,
        "methods": design.methods,
        "n_images": design.n_images,
        "fresh_test": design.fresh_test,
        "epochs": design.epochs,
        "image_size": design.image_size,
        "command": " ".join(sys.argv),
    }
    (out / CARD_FILE).write_text(json.dumps(card, indent=2, default=str))
    short = {d.task: datasets_done(draws, d.task) for d in designs}
    short = {task: n for task, n in short.items() if n < 2}
    if short:
        counts = ", ".join(f"{task} {n}" for task, n in short.items())
        return _bad(
            f"datasets finished: {counts}; the referee needs 2 or more per task: raise "
            f"--max-minutes, or train more parts and join them with --combine (the draws so "
            f"far are kept in {out})"
        )
    summary = conformal.referee_summary(draws)
    _save(summary, out / SUMMARY_FILE)
    text = sets_markdown(summary, card)
    (out / MARKDOWN_FILE).write_text(text)
    print(text)
    print(f"written to {out}")
    return 0


def _tasks(card: dict[str, object]) -> dict[str, dict[str, object]]:
    """The card's per-task entries (what `cmd` put under ``tasks``)."""
    tasks = card.get("tasks")
    return tasks if isinstance(tasks, dict) else {}


def sets_markdown(summary: pd.DataFrame, card: dict[str, object]) -> str:
    """The referee's table as markdown, under one line saying what was run."""
    from engine.analysis.referee_columns import SETS_REFEREE
    from pages.present.referee_tables import markdown_table

    table = summary[list(SETS_REFEREE.view("printed"))].round(3)
    table["per_grade"] = table["per_grade"].map({True: "per grade", False: "one"})
    head = (
        f"Grade sets refereed on fresh phantom films ({card['created_at']}): target "
        f"{card['coverage']}, {card['seeds']} seeds per dataset, datasets per task "
        + ", ".join(f"{t} {v['datasets_done']}" for t, v in _tasks(card).items())
        + ". coverage: mean over datasets of the share of fresh films whose recorded grade is "
        "in its set; mc_low/mc_high: 95 % Monte-Carlo interval over datasets.\n\n"
    )
    return head + markdown_table(table) + "\n"


def _save(table: pd.DataFrame, path: Path) -> None:
    """Write a table whole: a partial file renamed over the old one."""
    partial = path.with_name(path.name + ".partial")
    table.to_csv(partial, index=False)
    partial.replace(path)


def _design(args: argparse.Namespace, task: str) -> RefereeDesign:
    methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    return RefereeDesign(
        methods=methods,
        null_method=methods[0] if methods else "",
        task=task,
        datasets=args.datasets,
        first_dataset=args.first_dataset,
        seeds=args.seeds,
        n_images=args.n_images,
        fresh_test=args.fresh_test,
        epochs=args.epochs,
        image_size=args.image_size,
        batch_size=args.batch_size,
        device=args.device,
        data_seed=args.data_seed,
        bootstrap=0,
        max_minutes=args.max_minutes,
    )


def _bad(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return BAD_INPUT


def coverage_arg(text: str) -> float:
    """An argparse type: ``--coverage`` as a number (its range is checked with the rest)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; e.g. 0.9") from None


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``calibrate-sets`` on the CLI's subcommands."""
    p = sub.add_parser(
        "calibrate-sets",
        help="the phantom as referee of the grade sets: each score's coverage on fresh films",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-o", "--output", default=None, help="a new or empty folder for the tables")
    p.add_argument("--datasets", type=whole_from(2), default=3, help="K phantom datasets (>= 2)")
    add_parts_arguments(p)
    p.add_argument("--seeds", type=whole_from(2), default=2, help="seeds per dataset (>= 2)")
    p.add_argument(
        "--methods",
        default=",".join(paper_methods()[:2]),
        help="methods, comma-separated (`softgrade methods` lists them)",
    )
    p.add_argument("--task", default="both", choices=[*TASKS, "both"], help="task(s) trained")
    p.add_argument(
        "--coverage", type=coverage_arg, default=conformal.DEFAULT_COVERAGE, help="nominal coverage"
    )
    p.add_argument("--n-images", type=whole_from(1), default=80, help="films per dataset")
    p.add_argument("--fresh-test", type=whole_from(1), default=120, help="fresh test films")
    p.add_argument("--epochs", type=whole_from(1), default=2, help="most epochs per run")
    p.add_argument("--image-size", type=whole_from(1), default=32, help="knee crop side (px)")
    p.add_argument("--batch-size", type=whole_from(2), default=32, help="training batch")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--data-seed", type=whole_from(0), default=1000, help="data seed of dataset 0")
    p.add_argument(
        "--max-minutes",
        type=float,
        default=None,
        help="per task: start no dataset that would end past this many minutes",
    )
    p.add_argument(
        "--render-workers",
        type=whole_from(1),
        default=None,
        help="processes rendering datasets ahead of training (default: all cores but two)",
    )
    p.add_argument("--threads", type=whole_from(1), default=1, help="torch CPU threads (cpu)")
    p.add_argument("--cache-dir", default=None, help="where the phantom caches are rendered")
    p.set_defaults(func=cmd_calibrate_sets)


def main(argv: list[str] | None = None) -> int:
    """``python -m jobs.cli.sets_referee_command``: the command alone, without the CLI's
    other commands, whose imports (the store's duckdb) a GPU machine may lack."""
    parser = argparse.ArgumentParser(prog="python -m jobs.cli.sets_referee_command")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["calibrate-sets", *(sys.argv[1:] if argv is None else argv)])
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
