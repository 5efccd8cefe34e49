"""Arguments the commands share: whole-number types (argparse turns their errors into one
line) and the executor options of ``run``, ``worker`` and ``up``."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TypedDict

from jobs.worker.settings import DEFAULT_MAX_RETRIES, DEFAULT_THREADS_PER_SLOT
from store.outputs import FORCE_HELP

# The most of each slot setting a command takes (not `jobs.worker.factory`'s automatic
# choice, which stops at 4 lanes): beyond these a machine only thrashes (a GPU
# gains nothing past 2-4 lanes, `jobs.worker.factory`), and a typo such as 99999 would start
# that many threads or processes before anything trained.
FLAG_MAX_SLOTS_PER_GPU = 32
FLAG_MAX_PROCESSES_PER_GPU = 32
FLAG_MAX_CPU_SLOTS = 256
FLAG_MAX_THREADS_PER_SLOT = 512
# A run whose Ray actor died is retried at most this often: each retry re-trains the run from
# its start on a fresh actor, so more only repeats a failure (a run that kills its actor every
# time, e.g. out of memory) for hours before the job fails.
FLAG_MAX_RETRIES = 10


def whole_number(text: str, least: int, most: int | None = None) -> int:
    """``text`` as a whole number >= ``least`` (and <= ``most`` where given)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < least or (most is not None and value > most):
        allowed = f">= {least}" if most is None else f"from {least} to {most}"
        raise argparse.ArgumentTypeError(f"{value} must be {allowed}")
    return value


def whole_from(least: int, most: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: a whole number >= ``least`` (and <= ``most`` where given)."""

    def parse(text: str) -> int:
        return whole_number(text, least, most)

    return parse


def add_whole_arg(
    p: argparse.ArgumentParser, flag: str, bounds: tuple[int, int], default: int, help: str
) -> None:
    """An option taking a whole number within ``bounds`` (both included): a value outside
    them is refused by argparse with one line naming the allowed range."""
    p.add_argument(flag, type=whole_from(*bounds), default=default, help=help)


def seconds_between(least: float, most: float) -> Callable[[str], float]:
    """An argparse ``type``: a number of seconds from ``least`` to ``most``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        if not math.isfinite(value) or not least <= value <= most:
            raise argparse.ArgumentTypeError(f"{text} must be from {least:g} to {most:g} s")
        return value

    return parse


def add_force_arg(p: argparse.ArgumentParser) -> None:
    """``--force``: the output file ``-o`` names may replace an existing file (never a link or
    a folder; `store.outputs.atomic_output`)."""
    p.add_argument(
        "--force",
        action="store_true",
        help=FORCE_HELP,
    )


class SlotSettings(TypedDict):
    """`jobs.worker.factory.make_worker`'s slot keywords."""

    slots_per_gpu: int
    processes_per_gpu: int
    cpu_slots: int
    threads_per_slot: int


def slot_settings(args: argparse.Namespace) -> SlotSettings:
    """The slot options `add_executor_args` added, as `jobs.worker.factory.make_worker`'s
    keywords."""
    return SlotSettings(
        slots_per_gpu=args.slots_per_gpu,
        processes_per_gpu=args.processes_per_gpu,
        cpu_slots=args.cpu_slots,
        threads_per_slot=args.threads_per_slot,
    )


def add_executor_args(p: argparse.ArgumentParser, *, with_device: bool) -> None:
    """The executor and slot options (``--device``, ``--address``, ``--max-retries`` too
    when ``with_device``)."""
    p.add_argument("--executor", choices=("local", "inline", "ray"), default="local")
    add_whole_arg(
        p,
        "--slots-per-gpu",
        (0, FLAG_MAX_SLOTS_PER_GPU),
        0,
        "runs trained at once on each GPU (0: chosen from free GPU memory)",
    )
    add_whole_arg(
        p,
        "--processes-per-gpu",
        (1, FLAG_MAX_PROCESSES_PER_GPU),
        1,
        "slot processes per GPU; its slots are CUDA streams of these processes",
    )
    add_whole_arg(p, "--cpu-slots", (1, FLAG_MAX_CPU_SLOTS), 1, "slot processes when no GPU")
    add_whole_arg(
        p,
        "--threads-per-slot",
        (1, FLAG_MAX_THREADS_PER_SLOT),
        DEFAULT_THREADS_PER_SLOT,
        "torch CPU threads of each CPU slot, on every executor (CPU results depend on it; "
        "the study card records it)",
    )
    if with_device:
        p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
        p.add_argument("--address", default=None, help="Ray cluster address (--executor ray)")
        add_whole_arg(
            p,
            "--max-retries",
            (0, FLAG_MAX_RETRIES),
            DEFAULT_MAX_RETRIES,
            "--executor ray: how often a run whose actor died (lost node, out of memory) is "
            "retried on a fresh actor before the job fails",
        )
