"""``softgrade export-demo STUDY -o demo.zip``: a study's models and example films as a demo
bundle for a laptop (`jobs.services.demo_bundle` writes it; ``up --demo`` opens it)."""

from __future__ import annotations

from typing import Any

from jobs.services.demo_bundle import N_FILMS, DemoBundleError, export_demo
from store.outputs import FORCE_HELP


def add_commands(sub: Any) -> None:
    """Register ``export-demo`` on the CLI's subcommands."""
    p = sub.add_parser(
        "export-demo", help="write a study's models and example films as a demo bundle"
    )
    p.add_argument("study_id")
    p.add_argument("-o", "--output", required=True, help="the zip to write, e.g. demo.zip")
    p.add_argument("--method", default=None, help="default: the best on validation")
    seeds = p.add_mutually_exclusive_group()
    seeds.add_argument("--seed", type=int, default=None, help="default: the best on validation")
    seeds.add_argument(
        "--seeds",
        choices=("all",),
        default=None,
        help="'all': every seed with saved weights, so the demo shows how much they agree",
    )
    p.add_argument("--films", type=int, default=N_FILMS, help="example test films to include")
    p.add_argument(
        "--force",
        action="store_true",
        help=FORCE_HELP,
    )
    p.set_defaults(func=cmd_export_demo)


def cmd_export_demo(args: Any) -> int:
    """Write the demo bundle and say what is in it."""
    from store.db import default_store_path, init_schema

    path = default_store_path()
    init_schema(path)
    if args.films < 1:
        raise DemoBundleError(f"--films {args.films}: give at least 1")
    done = export_demo(
        args.study_id,
        args.output,
        method=args.method,
        seed=args.seed,
        all_seeds=args.seeds == "all",
        n_films=args.films,
        force=args.force,
        path=path,
    )
    seeds = ", ".join(map(str, done.seeds))
    print(
        f"wrote {done.path} ({done.size_bytes / 2**20:.1f} MiB): {done.method}, "
        f"seed{'s' * (len(done.seeds) != 1)} {seeds}, {done.n_films} test films. "
        f"Open it with `python -m jobs up --demo {done.path}`"
    )
    return 0
