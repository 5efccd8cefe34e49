"""``softgrade calibrate-inference -o DIR``: the phantom as referee of the statistics.

Draws ``--datasets`` independent phantom datasets (new patients each), trains the same design
on each (``--seeds`` seeds, ``--methods``, and the first method a second time under another
name with other random streams: the null pair), scores every selected model on one large
fresh test set from the same generator, and reports how often each interval covers the true
expected difference, each test's type-I error and power, and the between-seed correlation
the datasets realise beside the one the corrected test assumes (`engine.referee`,
`engine.analysis.referee`).

``--seeds 6`` trains 6 independent seeds per dataset, each drawing its split and its
training streams. ``--seeds 3x2`` is a factorial design: 3 split seeds, each trained from
the same 2 init seeds (6 runs per method and dataset), as a study's ``seeds: {splits: 3,
inits: 2}``; only then are the factorial design's intervals and tests (from the split, init
and residual variance components) scored; on independent seeds their rows read "not run".

Writes into ``-o DIR`` (a new or empty folder): ``referee.csv`` (every number, long form),
``referee_draws.csv`` (one row per dataset, seed and method) and ``referee_bootstrap.csv``
(each dataset's bootstrap interval per pair), both rewritten after each dataset so an
interrupted run keeps what it finished, ``referee.md`` (the tables) and
``referee.json`` (the card: sizes, device, wall time, date, the recommended interval); then
records a copy under ``SOFTGRADE_HOME/referee/`` for the Statistics tab (not with
``--no-record``). ``--record DIR`` records a result made elsewhere (a GPU machine's) without
training.

One design can be trained in parts, by several processes or machines: ``--first-dataset A
--datasets B`` trains datasets ``A .. B-1`` only (the same data seed, so the same datasets and
the same fresh test set as one whole run), and ``--combine DIR DIR ... -o OUT`` joins the
parts' folders into one result, refusing parts of different designs or overlapping datasets.

``python -m jobs.cli.referee_command ...`` runs the command alone, without the store's
duckdb, for a GPU machine that lacks it. Defaults are tiny, for
a CPU; bench/calibrate_inference.sh has the GPU run.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from engine.analysis.metrics import METRIC_LABELS, METRICS, PRIMARY_METRIC
from engine.config import SpecError
from engine.methods import paper_methods
from engine.referee.design import FIXED, INIT_DRAWS, RefereeDesign
from engine.seeds import SeedDesignError, seeds_from_text
from engine.vocab import TASKS
from jobs.cli.arg_types import whole_from
from jobs.cli.referee_setup import add_parts_arguments, prepare_referee_run

# The referee's statistics (`engine.analysis.referee`: scipy, statsmodels, baycomp; ~1 s) are
# imported in the functions that use them: every command line, `up` and `worker` (and each
# of its slot processes) included, builds this command's parser.

BAD_INPUT = 2
#: The default pair: the paper's baseline and its first soft method.
DEFAULT_METHODS: tuple[str, ...] = paper_methods()[:2]


def cmd_calibrate_inference(args: argparse.Namespace) -> int:
    """Run the referee (or record a result made elsewhere) and write its tables."""
    if args.record:
        return _record(Path(args.record))
    if not args.output:
        return _bad("name the output folder: -o DIR (a new or empty folder)")
    out = Path(args.output)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        return _bad(f"-o {out}: must be a new or empty folder, so no earlier result is lost")
    if args.combine:
        return _combine([Path(f) for f in args.combine], out, no_record=args.no_record)
    try:
        design = _design(args)
    except (SpecError, ValueError) as exc:
        return _bad(str(exc))
    from engine.referee.runs import run_referee

    try:
        workers = prepare_referee_run(design.device, args.threads, out, args.render_workers)
    except ValueError as exc:
        return _bad(str(exc))
    _write_design(design, out)
    print(_plan(design, workers), flush=True)
    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="softgrade-referee-", dir=args.cache_dir) as work:
        result = run_referee(
            design,
            Path(work),
            render_workers=workers,
            on_dataset=lambda r: _save_draws(r.draws, r.boot, out),
        )
    if result.datasets_done < 2:
        return _bad(
            f"only {result.datasets_done} dataset finished within --max-minutes; the referee "
            "needs 2 or more (raise --max-minutes or shrink the design)"
        )
    _save_draws(result.draws, result.boot, out)
    summary, card = summarise(design, result, started, argv=sys.argv)
    write_result(out, summary, card)
    return _announce(out, summary, card, no_record=args.no_record)


def _announce(out: Path, summary: pd.DataFrame, card: dict[str, Any], *, no_record: bool) -> int:
    """Print the tables, then record the folder for the Statistics tab (unless told not to)."""
    from jobs.services import referee as referee_files
    from pages.present.referee_tables import referee_markdown

    print(referee_markdown(summary, card))
    if no_record:
        print(f"written to {out}; record it for the Statistics tab with --record {out}")
        return 0
    recorded = referee_files.record_referee(out)
    print(f"written to {out}; recorded for the Statistics tab in {recorded}")
    return 0


def _write_design(design: RefereeDesign, out: Path) -> None:
    """The design, written before the training, so ``--combine`` can join the part even when
    its process was stopped before its card."""
    from jobs.services.referee import DESIGN_FILE

    (out / DESIGN_FILE).write_text(json.dumps(asdict(design), indent=2))


def _combine(folders: list[Path], out: Path, *, no_record: bool) -> int:
    """Join the folders of one design's parts (``--first-dataset``) into one result in ``out``."""
    from engine.referee.runs import RefereeResult
    from jobs.services.referee_parts import RefereeParts, read_parts

    try:
        parts: RefereeParts = read_parts(folders)
    except ValueError as exc:
        return _bad(str(exc))
    if parts.datasets_done < 2:
        return _bad(
            f"the parts hold {parts.datasets_done} finished dataset(s); the referee needs 2 or more"
        )
    out.mkdir(parents=True, exist_ok=True)
    design = parts.design
    result = RefereeResult(
        draws=parts.draws,
        boot=parts.boot,
        datasets_done=parts.datasets_done,
        stopped_early=parts.datasets_done < design.datasets,
        device=parts.device,
        wall_s=parts.wall_s,
        render_wait_s=parts.render_wait_s,
        fresh_films=parts.fresh_films,
    )
    _write_design(design, out)
    _save_draws(result.draws, result.boot, out)
    summary, card = summarise(design, result, parts.started, argv=sys.argv)
    card["parts"] = parts.describe()
    write_result(out, summary, card)
    return _announce(out, summary, card, no_record=no_record)


def summarise(
    design: RefereeDesign, result: Any, started: datetime, *, argv: list[str]
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The summary table and the card of a finished referee run."""
    from engine.analysis import referee

    samples = referee.pair_samples(
        result.draws, design.comparisons, design.metric, boot=result.boot
    )
    summary = referee.summary_table(samples)
    recommended = referee.recommend(summary)
    labels = {rule.key: rule.label for rule in referee.INTERVALS}
    draws = result.draws
    sizes = {
        name: round(float(draws[name].mean()), 1)
        for name in ("n_train", "n_val", "n_test", "n_fit")
        if name in draws
    }
    card = {
        "created_at": started.strftime("%Y-%m-%d %H:%M UTC"),
        "device": result.device,
        "wall_s": round(result.wall_s, 1),
        "render_wait_s": round(result.render_wait_s, 1),
        "datasets_asked": len(design.dataset_range),
        "datasets_done": result.datasets_done,
        "stopped_early": result.stopped_early,
        "seeds": design.seeds,
        "inits": design.inits,
        "methods": list(design.methods),
        "null_method": design.null_method,
        "task": design.task,
        "metric": design.metric,
        "n_images": design.n_images,
        "fresh_films": result.fresh_films,
        "split_sizes": sizes,
        "epochs": design.epochs,
        "image_size": design.image_size,
        "batch_size": design.batch_size,
        "budget": design.budget,
        "selection": design.selection(),
        "init_draws": INIT_DRAWS,
        "bootstrap": design.bootstrap,
        "data_seed": design.data_seed,
        "level": referee.LEVEL,
        "alpha": referee.ALPHA,
        "baycomp": referee.has_baycomp(),
        "recommended": recommended,
        "recommended_label": labels.get(recommended or ""),
        "design": asdict(design),
        "command": " ".join(argv),
    }
    return summary, card


def write_result(out: Path, summary: pd.DataFrame, card: dict[str, Any]) -> None:
    """The summary CSV, the markdown, then the card (last: it marks the result complete)."""
    from jobs.services import referee as referee_files
    from pages.present.referee_tables import referee_markdown

    summary.to_csv(out / referee_files.SUMMARY_FILE, index=False)
    (out / referee_files.MARKDOWN_FILE).write_text(referee_markdown(summary, card))
    partial = out / (referee_files.CARD_FILE + ".partial")
    partial.write_text(json.dumps(card, indent=2, default=str))
    partial.replace(out / referee_files.CARD_FILE)


def _save_draws(draws: pd.DataFrame, boot: pd.DataFrame, out: Path) -> None:
    """The per-run results and each dataset's bootstrap intervals so far (rewritten after each
    dataset, each file replaced whole)."""
    from jobs.services import referee as referee_files

    for table, name in ((draws, referee_files.DRAWS_FILE), (boot, referee_files.BOOTSTRAP_FILE)):
        partial = out / (name + ".partial")
        table.to_csv(partial, index=False)
        partial.replace(out / name)


def _record(folder: Path) -> int:
    from jobs.services import referee as referee_files

    try:
        recorded = referee_files.record_referee(folder)
    except ValueError as exc:
        return _bad(str(exc))
    print(f"recorded {folder} for the Statistics tab in {recorded}")
    return 0


def _design(args: argparse.Namespace) -> RefereeDesign:
    methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    metric = args.metric.lower()
    if metric not in METRICS:
        names = ", ".join(METRIC_LABELS[m] for m in METRICS)
        raise ValueError(f"--metric: unknown metric {args.metric!r}; choose one of {names}")
    if args.task not in TASKS:
        raise ValueError(f"--task: unknown task {args.task!r}; choose one of {', '.join(TASKS)}")
    return RefereeDesign(
        methods=methods,
        null_method=args.null_method or (methods[0] if methods else ""),
        task=args.task,
        datasets=args.datasets,
        first_dataset=args.first_dataset,
        seeds=args.seeds[0],
        inits=args.seeds[1],
        n_images=args.n_images,
        fresh_test=args.fresh_test,
        epochs=args.epochs,
        image_size=args.image_size,
        batch_size=args.batch_size,
        budget=args.budget,
        device=args.device,
        data_seed=args.data_seed,
        bootstrap=args.bootstrap,
        metric=metric,
        max_minutes=args.max_minutes,
    )


def _plan(design: RefereeDesign, workers: int) -> str:
    return (
        f"referee: {design.datasets} phantom datasets x {design.describe_seeds()} x "
        f"{len(design.trained)} trained ({', '.join(design.trained)}) = {design.runs()} runs; "
        f"{design.n_images} films each, fresh test {design.fresh_test}; {design.epochs} epochs "
        f"at {design.image_size} px on {design.device}; {workers} rendering process(es)"
        + (
            f"; stops starting datasets after {design.max_minutes:g} min"
            if design.max_minutes
            else ""
        )
    )


def _bad(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return BAD_INPUT


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{value:g} must be > 0")
    return value


#: What ``--seeds`` accepts, for the message that refuses a value.
REFEREE_SEEDS_ALLOWED = (
    "a count of independent seeds (--seeds 6) or splits x inits, a factorial design "
    "(--seeds 3x2, each at least 2)"
)


def referee_seeds(text: str) -> tuple[int, int]:
    """``--seeds``: ``6`` (6 independent seeds) or ``3x2`` (3 splits × 2 inits), read as
    `engine.seeds.seeds_from_text` reads a study's, as ``(seeds or splits, inits)``; inits
    is 1 for independent seeds. A list of seeds is refused: the referee draws its own."""
    try:
        value = seeds_from_text(text)
    except SeedDesignError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; give {REFEREE_SEEDS_ALLOWED}"
        ) from None
    if isinstance(value, dict):
        return int(value["splits"]), int(value["inits"])
    if isinstance(value, list) or value < 2:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; give {REFEREE_SEEDS_ALLOWED}")
    return value, 1


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``calibrate-inference`` on the CLI's subcommands."""
    p = sub.add_parser(
        "calibrate-inference",
        help="the phantom as referee: each interval's coverage and each test's type-I error",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-o", "--output", default=None, help="a new or empty folder for the tables")
    p.add_argument("--datasets", type=whole_from(2), default=3, help="K phantom datasets (>= 2)")
    add_parts_arguments(p)
    p.add_argument(
        "--seeds",
        type=referee_seeds,
        default=(3, 1),
        metavar="S|SxI",
        help="seeds per dataset: S independent seeds (>= 2), or SxI, a factorial design of S "
        "splits each trained from the same I inits (e.g. 3x2; each >= 2), which adds the "
        "factorial design's intervals and tests",
    )
    p.add_argument(
        "--methods",
        default=",".join(DEFAULT_METHODS),
        help="methods compared, comma-separated (`softgrade methods` lists them)",
    )
    p.add_argument(
        "--null-method",
        default=None,
        help="the method trained twice for the null pair (default: the first of --methods)",
    )
    p.add_argument("--task", default=TASKS[0], help=f"one of {', '.join(TASKS)}")
    p.add_argument(
        "--metric",
        default=METRIC_LABELS[PRIMARY_METRIC],
        help="the metric compared (default the primary)",
    )
    p.add_argument(
        "--n-images", type=whole_from(1), default=80, help="films per dataset with the task's grade"
    )
    p.add_argument(
        "--fresh-test", type=whole_from(1), default=120, help="films of the fresh test set"
    )
    p.add_argument("--epochs", type=whole_from(1), default=2, help="most epochs per run")
    p.add_argument("--image-size", type=whole_from(1), default=32, help="knee crop side (px)")
    p.add_argument("--batch-size", type=whole_from(2), default=32, help="training batch")
    p.add_argument(
        "--budget",
        type=whole_from(FIXED),
        default=FIXED,
        help="configurations searched per method and seed, the best on validation selected "
        "(the study's rule); 0: one fixed configuration per method (each hyper-parameter "
        "mid-grid), the affordable default",
    )
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument(
        "--bootstrap", type=whole_from(0), default=200, help="bootstrap replicates (0: none)"
    )
    p.add_argument("--data-seed", type=whole_from(0), default=1000, help="data seed of dataset 0")
    p.add_argument(
        "--max-minutes",
        type=_positive,
        default=None,
        help="start no dataset that would end past this many minutes (the table says how "
        "many were done)",
    )
    p.add_argument(
        "--render-workers",
        type=whole_from(1),
        default=None,
        help="processes rendering datasets ahead of training (default: all cores but two)",
    )
    p.add_argument(
        "--threads", type=whole_from(1), default=1, help="torch CPU threads (--device cpu)"
    )
    p.add_argument(
        "--cache-dir", default=None, help="where the phantom caches are rendered (removed after)"
    )
    p.add_argument(
        "--record",
        default=None,
        metavar="DIR",
        help="only record a result folder made elsewhere (a GPU machine's -o) for the "
        "Statistics tab",
    )
    p.add_argument(
        "--no-record",
        action="store_true",
        help="write -o only, not SOFTGRADE_HOME (a GPU machine without the store's duckdb)",
    )
    p.set_defaults(func=cmd_calibrate_inference)


def main(argv: list[str] | None = None) -> int:
    """``python -m jobs.cli.referee_command``: the command alone, without the CLI's other
    commands, whose imports (the store's duckdb) a GPU machine may lack."""
    parser = argparse.ArgumentParser(prog="python -m jobs.cli.referee_command")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["calibrate-inference", *(sys.argv[1:] if argv is None else argv)])
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
