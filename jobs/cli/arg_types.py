"""Argument types the commands share: argparse turns their errors into one line."""

from __future__ import annotations

import argparse
from collections.abc import Callable


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
