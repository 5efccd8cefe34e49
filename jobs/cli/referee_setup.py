"""What both phantom referee commands (``calibrate-inference``, ``calibrate-sets``) do once
their design is valid and before anything trains.

Imports nothing heavy at the top (torch and the referee's modules load in the function), and
no duckdb: both commands run alone as ``python -m`` where the store's libraries are missing.
"""

from __future__ import annotations

from pathlib import Path


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
