"""The phantom referee's results on disk: written by ``calibrate-inference``, recorded under
``SOFTGRADE_HOME/referee/<UTC time>/`` and read back by the Statistics tab.

A result is five files (:data:`REFEREE_FILES`): the summary table
(`engine.analysis.referee.summary_table`), the per-run results and bootstrap intervals it came
from, its markdown and the run's card (what was drawn, where, how long). Each recording gets
a folder of its own, so nothing recorded before is lost; the page shows the newest complete
one.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from engine.analysis import referee

SUMMARY_FILE = "referee.csv"
DRAWS_FILE = "referee_draws.csv"
BOOTSTRAP_FILE = "referee_bootstrap.csv"
MARKDOWN_FILE = "referee.md"
CARD_FILE = "referee.json"
#: The design a folder was trained with, written before its training (so the parts of one
#: design can be joined: `jobs.services.referee_parts`); not part of a recorded result.
DESIGN_FILE = "referee_design.json"
#: The files of one result; the card is written last, so a folder with it is complete.
REFEREE_FILES: tuple[str, ...] = (
    SUMMARY_FILE,
    DRAWS_FILE,
    BOOTSTRAP_FILE,
    MARKDOWN_FILE,
    CARD_FILE,
)
#: Under ``SOFTGRADE_HOME``.
REFEREE_DIR = "referee"
#: The referee result measured for the release (an H200, 40 datasets; bench/RESULTS.md),
#: shipped inside the package so a fresh install shows it until a lab records its own.
SHIPPED_REFEREE = "referee"


@dataclass(frozen=True)
class RefereeRecord:
    """One referee result read back.

    Attributes:
        summary: `engine.analysis.referee.summary_table`'s rows.
        card: what was drawn and how (datasets, seeds, sizes, device, wall time, date,
            the recommended interval).
        folder: where it was read from.
    """

    summary: pd.DataFrame
    card: dict[str, Any]
    folder: Path


def referee_home(home: Path | None = None) -> Path:
    """Where referee results are recorded: ``SOFTGRADE_HOME/referee``."""
    if home is None:
        # Imported here: the store module loads duckdb, which a GPU machine running the
        # referee with ``--no-record`` need not have.
        from store.db import softgrade_home

        home = softgrade_home()
    return home / REFEREE_DIR


def read_referee(folder: Path) -> RefereeRecord:
    """Read a referee result folder.

    Raises:
        ValueError: The folder is not a complete referee result (names the missing file) or
            its files cannot be read.
    """
    folder = Path(folder)
    for name in (CARD_FILE, SUMMARY_FILE):
        if not (folder / name).is_file():
            raise ValueError(
                f"{folder} holds no referee result: {name} is missing (calibrate-inference "
                f"writes {', '.join(REFEREE_FILES)})"
            )
    try:
        card = json.loads((folder / CARD_FILE).read_text())
        summary = pd.read_csv(folder / SUMMARY_FILE)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{folder}: the referee result cannot be read ({exc})") from None
    missing = [c for c in referee.SUMMARY_COLUMNS if c not in summary]
    if not isinstance(card, dict) or missing:
        raise ValueError(f"{folder}: not a referee result (the summary lacks {missing[:1]})")
    return RefereeRecord(summary=summary, card=card, folder=folder)


def record_referee(folder: Path, home: Path | None = None) -> Path:
    """Copy a referee result (written here or on another machine) into its own folder under
    :func:`referee_home`, the card last; returns the new folder.

    Raises:
        ValueError: ``folder`` is not a complete referee result.
    """
    read_referee(folder)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = referee_home(home) / stamp
    target.mkdir(parents=True, exist_ok=False)
    for name in REFEREE_FILES:  # the card last: only then does the folder look complete
        if (Path(folder) / name).is_file():
            shutil.copyfile(Path(folder) / name, target / name)
    return target


def latest_referee(home: Path | None = None) -> RefereeRecord | None:
    """The newest complete referee result under :func:`referee_home`, else the one shipped
    with SoftGrade (its card says ``shipped``); None when neither can be read. A folder that
    cannot be read is passed over for the next newest."""
    root = referee_home(home)
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    for folder in reversed(folders):
        try:
            return read_referee(folder)
        except ValueError:
            continue
    return shipped_referee()


def shipped_referee() -> RefereeRecord | None:
    """The referee result shipped in the ``examples`` package, its card marked ``shipped``."""
    with resources.as_file(resources.files("examples").joinpath(SHIPPED_REFEREE)) as folder:
        try:
            record = read_referee(Path(folder))
        except ValueError:
            return None
    return RefereeRecord(
        summary=record.summary, card={**record.card, "shipped": True}, folder=record.folder
    )
