"""The parts of one ``calibrate-sets`` design, trained apart and joined: ``--first-dataset A``
in each part (several processes or machines), ``--combine`` to join them, as
``calibrate-inference`` does (`jobs.services.referee_parts`, whose design checks these reuse).

A part's folder holds its designs, one per task (:data:`DESIGN_FILE`, written before its
training, with the nominal coverage), its draws (rewritten after each dataset, so a stopped
part keeps what it finished) and, when it ended by itself, its card. Parts join only when they
are one design: every setting of every task equal but the range of datasets and the time
limit, the same coverage, and no dataset of a task trained twice.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from engine.analysis import conformal
from engine.referee.design import RefereeDesign

DRAWS_FILE = "sets_draws.csv"
SUMMARY_FILE = "sets_summary.csv"
MARKDOWN_FILE = "sets.md"
CARD_FILE = "sets.json"
DESIGN_FILE = "sets_design.json"
#: What a part's design must name for its datasets to be placed.
_RANGE = {"first_dataset", "datasets"}
#: The columns that place a draw: the parts are checked and joined on them.
DRAW_KEYS = frozenset({"task", "dataset", "seed"})


def write_sets_design(out: Path, designs: list[RefereeDesign], coverage: float) -> None:
    """The part's designs and coverage, before its training, so ``--combine`` can join it even
    when its process was stopped before its card."""
    record = {"coverage": coverage, "designs": {d.task: asdict(d) for d in designs}}
    (out / DESIGN_FILE).write_text(json.dumps(record, indent=2))


@dataclass(frozen=True)
class SetsPart:
    """One part's folder, its card (empty when its process was stopped before writing it),
    its first dataset and the datasets it finished per task."""

    folder: Path
    card: dict[str, Any]
    first_dataset: int
    done: dict[str, int]


@dataclass(frozen=True)
class SetsParts:
    """The parts joined: the coverage, each task's design spanning every part, the draws."""

    coverage: float
    designs: dict[str, RefereeDesign]
    draws: pd.DataFrame
    parts: list[SetsPart]

    def task_card(self, task: str) -> dict[str, Any]:
        """The joined card's entry for a task: datasets done over the parts, the fresh test
        set's size (the same in each), the devices, the longest part's wall time."""
        entries = [_card_entry(p.card, task) for p in self.parts]
        entries = [e for e in entries if e]
        devices = sorted({str(e["device"]) for e in entries if e.get("device")})
        return {
            "datasets_done": datasets_done(self.draws, task),
            "fresh_films": int(max((_number(e.get("fresh_films")) for e in entries), default=0)),
            "device": ", ".join(devices) or "unknown (no part finished its card)",
            "wall_s": max((_number(e.get("wall_s")) for e in entries), default=0.0),
        }

    def describe(self) -> list[dict[str, Any]]:
        """One line per part for the joined card: its folder, first dataset, datasets done."""
        return [
            {"folder": p.folder.name, "first_dataset": p.first_dataset, "datasets_done": p.done}
            for p in self.parts
        ]

    @property
    def created_at(self) -> str | None:
        """The first part's start, as its card wrote it; None when no part wrote one."""
        dates = sorted(str(p.card["created_at"]) for p in self.parts if p.card.get("created_at"))
        return dates[0] if dates else None


def _card_entry(card: dict[str, Any], task: str) -> dict[str, Any]:
    """A part card's entry for ``task``; empty when the card has none (or is not one)."""
    tasks = card.get("tasks")
    entry = tasks.get(task) if isinstance(tasks, dict) else None
    return entry if isinstance(entry, dict) else {}


def _number(value: Any) -> float:
    """A card's number, or 0 when it holds none."""
    try:
        return float(value or 0)
    except (TypeError, ValueError):
        return 0.0


def datasets_done(draws: pd.DataFrame, task: str) -> int:
    """Datasets of ``task`` with draws."""
    if draws.empty:
        return 0
    return int(draws.loc[draws["task"] == task, "dataset"].nunique())


def read_sets_parts(folders: list[Path]) -> SetsParts:
    """Read and join the parts' folders.

    Raises:
        ValueError: A folder is missing or not a part (names what is missing), two parts are
            of different designs or coverages (names the setting), or a dataset of a task was
            trained in two parts.
    """
    # Here, not at the top: `referee_parts` loads the referee's statistics, which the
    # command line's other commands should not pay for when they start.
    from jobs.services.referee_parts import join_designs, refuse_overlap

    folders = [Path(f) for f in folders]
    if len(set(map(str, folders))) != len(folders):
        raise ValueError("--combine: a folder is named twice")
    read = [(folder, *_read_part(folder)) for folder in folders]
    first_folder, first_record, _, _ = read[0]
    for folder, record, _, _ in read[1:]:
        _same_plan(first_folder, first_record, folder, record)
    designs: dict[str, RefereeDesign] = {}
    for task in first_record["designs"]:
        designs[task] = join_designs([(f, r["designs"][task]) for f, r, _, _ in read])
        refuse_overlap([(f, _of_task(d, task)) for f, _, d, _ in read])
    draws = pd.concat([d for _, _, d, _ in read], ignore_index=True)
    if len(draws):
        draws = draws.sort_values(["task", "dataset", "seed"], kind="stable", ignore_index=True)
    parts = [
        SetsPart(
            folder=f,
            card=card,
            first_dataset=min(int(d["first_dataset"]) for d in r["designs"].values()),
            done={task: datasets_done(d, task) for task in r["designs"]},
        )
        for f, r, d, card in read
    ]
    return SetsParts(float(first_record["coverage"]), designs, draws, parts)


def _of_task(draws: pd.DataFrame, task: str) -> pd.DataFrame:
    return draws[draws["task"] == task] if len(draws) else draws


def _same_plan(
    first_folder: Path, first: dict[str, Any], folder: Path, record: dict[str, Any]
) -> None:
    """Refuse parts of different coverages or tasks (their designs are compared per task)."""
    for key, shown in (("coverage", first["coverage"]), ("tasks", sorted(first["designs"]))):
        theirs = record["coverage"] if key == "coverage" else sorted(record["designs"])
        if shown != theirs:
            raise ValueError(
                f"--combine: {first_folder} and {folder} are different designs: {key} is "
                f"{shown} against {theirs}"
            )


def _read_part(folder: Path) -> tuple[dict[str, Any], pd.DataFrame, dict[str, Any]]:
    """One part's designs with its coverage, its draws and its card (empty when it has none)."""
    from jobs.services.referee_parts import read_part_folder

    record, card, (draws,) = read_part_folder(
        folder, DESIGN_FILE, CARD_FILE, (DRAWS_FILE,), "calibrate-sets"
    )
    designs = record.get("designs") if isinstance(record, dict) else None
    if (
        not isinstance(designs, dict)
        or not designs
        or "coverage" not in record
        or not all(isinstance(d, dict) and set(d) >= _RANGE for d in designs.values())
    ):
        raise ValueError(f"--combine: {folder / DESIGN_FILE} does not hold calibrate-sets' designs")
    try:
        conformal.check_coverage(float(record["coverage"]))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"--combine: {folder / DESIGN_FILE}: coverage: {exc}") from None
    if len(draws) and not set(draws.columns) >= DRAW_KEYS:
        missing = ", ".join(sorted(DRAW_KEYS - set(draws.columns)))
        raise ValueError(f"--combine: {folder / DRAWS_FILE} lacks the columns {missing}")
    return record, draws, card
