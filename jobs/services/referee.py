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
from engine.vocab import TASKS

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
#: The referee results measured for the release (H200s, 40 datasets a task; bench/RESULTS.md),
#: one folder per task, shipped inside the package so a fresh install shows them until a lab
#: records its own.
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


def recorded_referees(home: Path | None = None) -> list[RefereeRecord]:
    """Every complete referee result recorded under :func:`referee_home`, newest first; a
    folder that cannot be read is passed over."""
    root = referee_home(home)
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    records = []
    for folder in reversed(folders):
        try:
            records.append(read_referee(folder))
        except ValueError:
            continue
    return records


def latest_referees(home: Path | None = None) -> list[RefereeRecord]:
    """Per task, the newest recorded result, else the one shipped with SoftGrade for that
    task (its card says ``shipped``); tasks in `engine.vocab.TASKS` order, then any other."""
    newest: dict[str, RefereeRecord] = {}
    for record in [*recorded_referees(home), *shipped_referees()]:
        newest.setdefault(str(record.card.get("task", "")), record)
    order = {task: i for i, task in enumerate(TASKS)}
    return sorted(newest.values(), key=lambda r: order.get(str(r.card.get("task")), len(order)))


def shipped_referees() -> list[RefereeRecord]:
    """The referee results shipped in the ``store.examples`` package (a folder per task),
    each card marked ``shipped``; tasks in `engine.vocab.TASKS` order."""
    records = []
    with resources.as_file(resources.files("store.examples").joinpath(SHIPPED_REFEREE)) as root:
        for task in TASKS:
            try:
                record = read_referee(Path(root) / task)
            except ValueError:
                continue
            card = {**record.card, "shipped": True}
            records.append(RefereeRecord(summary=record.summary, card=card, folder=record.folder))
    return records
