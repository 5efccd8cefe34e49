"""How workers are described to people, by the CLI (``python -m jobs status``) and the pages.

Kept apart from the worker modules so that reading it imports no torch.
"""

from __future__ import annotations

from collections import Counter


def format_devices(devices: list[str]) -> str:
    """A worker's slot devices, counted: ``"cuda:0 ×4"``, ``"cuda:0 ×2, cuda:1 ×2"``, ``"cpu"``."""
    counts = Counter(devices)
    return ", ".join(f"{d} ×{n}" if n > 1 else d for d, n in counts.items())
