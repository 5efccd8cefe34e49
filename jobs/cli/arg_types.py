"""Arguments the commands share: whole-number types (argparse turns their errors into one
line) and the executor options of ``run``, ``worker`` and ``up``."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from jobs.worker.settings import DEFAULT_MAX_RETRIES, DEFAULT_THREADS_PER_SLOT


def whole_number(text: str, least: int) -> int:
    """``text`` as a whole number >= ``least``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{value} must be >= {least}")
    return value


def whole_from(least: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number >= ``least``."""

    def parse(text: str) -> int:
        return whole_number(text, least)

    return parse


def add_executor_args(p: argparse.ArgumentParser, *, with_device: bool) -> None:
    """The executor and slot options (``--device``, ``--address``, ``--max-retries`` too
    when ``with_device``)."""
    p.add_argument("--executor", choices=("local", "inline", "ray"), default="local")
    p.add_argument(
        "--slots-per-gpu",
        type=int,
        default=0,
        help="runs trained at once on each GPU (0: chosen from free GPU memory)",
    )
    p.add_argument(
        "--processes-per-gpu",
        type=int,
        default=1,
        help="slot processes per GPU; its slots are CUDA streams of these processes",
    )
    p.add_argument("--cpu-slots", type=int, default=1, help="slot processes when no GPU")
    p.add_argument(
        "--threads-per-slot",
        type=whole_from(1),
        default=DEFAULT_THREADS_PER_SLOT,
        help="torch CPU threads of each CPU slot, on every executor (CPU results depend on it; "
        "the study card records it)",
    )
    if with_device:
        p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
        p.add_argument("--address", default=None, help="Ray cluster address (--executor ray)")
        p.add_argument(
            "--max-retries",
            type=whole_from(0),
            default=DEFAULT_MAX_RETRIES,
            help="--executor ray: how often a run whose actor died (lost node, out of memory) "
            "is retried on a fresh actor before the job fails",
        )
