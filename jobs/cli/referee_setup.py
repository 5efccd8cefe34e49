"""What both phantom referee commands (``calibrate-inference``, ``calibrate-sets``) do once
their design is valid and before anything trains.

Imports nothing heavy at the top (torch and the referee's modules load in the function), and
no duckdb: both commands run alone as ``python -m`` where the store's libraries are missing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jobs.cli.arg_types import whole_from


def prepare_referee_run(device: str, threads: int, out: Path, render_workers: int | None) -> int:
    """Check that ``device`` is usable here, give a CPU run ``threads`` torch threads and
    create the output folder ``out``; the film-rendering workers to use (``render_workers``,
    or the machine's default where not given).

    Raises:
        ValueError: ``device`` is not one this machine has (the message says which are).
    """
    import torch  # here, not at the top: the CLI's other commands should not pay for it

    from engine.grade_model import resolve_device
    from engine.referee.runs import default_render_workers

    resolve_device(device)
    if device == "cpu":
        torch.set_num_threads(threads)
    out.mkdir(parents=True, exist_ok=True)
    return render_workers or default_render_workers()


def add_parts_arguments(parser: argparse.ArgumentParser) -> None:
    """``--first-dataset`` and ``--combine``: one design trained in parts and joined."""
    parser.add_argument(
        "--first-dataset",
        type=whole_from(0),
        default=0,
        metavar="A",
        help="train datasets A .. K-1 only: one part of the design, for several processes or "
        "machines (join the parts with --combine)",
    )
    parser.add_argument(
        "--combine",
        nargs="+",
        default=None,
        metavar="DIR",
        help="only join the folders of one design's parts (made with --first-dataset) into "
        "-o, without training",
    )
