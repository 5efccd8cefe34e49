"""The parts of one referee design, trained apart and joined (``calibrate-inference
--first-dataset A`` in each part, ``--combine`` to join).

Each part's folder holds the design it trained (:data:`DESIGN_FILE`, written at its start),
its per-run draws and bootstrap intervals (rewritten after each dataset) and, when it ended by
itself, its card. Parts join only when they are one design: every setting equal but the range
of datasets and the time limit, and no dataset trained twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from engine.referee.design import RefereeDesign
from jobs.services.referee import BOOTSTRAP_FILE, CARD_FILE, DESIGN_FILE, DRAWS_FILE

#: Settings that may differ between the parts of one design.
PART_SETTINGS: frozenset[str] = frozenset({"first_dataset", "datasets", "max_minutes"})


@dataclass(frozen=True)
class Part:
    """One part's folder, its card (empty when its process was stopped before writing it)
    and the datasets it finished."""

    folder: Path
    card: dict[str, Any]
    done: int


@dataclass
class RefereeParts:
    """The parts joined: their design, draws and bootstrap intervals, and each part."""

    design: RefereeDesign
    draws: pd.DataFrame
    boot: pd.DataFrame
    parts: list[Part] = field(default_factory=list)

    @property
    def cards(self) -> list[dict[str, Any]]:
        """The cards the parts wrote."""
        return [p.card for p in self.parts if p.card]

    @property
    def datasets_done(self) -> int:
        """Datasets finished over every part."""
        return _datasets_in(self.draws)

    @property
    def device(self) -> str:
        """The devices the parts trained on, in words."""
        names = sorted({str(c.get("device")) for c in self.cards if c.get("device")})
        return ", ".join(names) or "unknown (no part finished its card)"

    @property
    def wall_s(self) -> float:
        """The longest part's wall time (parts run side by side)."""
        return max((float(c.get("wall_s") or 0.0) for c in self.cards), default=0.0)

    @property
    def render_wait_s(self) -> float:
        """Seconds the parts' training waited for rendering, summed."""
        return sum(float(c.get("render_wait_s") or 0.0) for c in self.cards)

    @property
    def fresh_films(self) -> int:
        """Films of the fresh test set (the same set in every part)."""
        return int(self.draws["n_fresh"].max()) if "n_fresh" in self.draws else 0

    @property
    def started(self) -> datetime:
        """When the first part started (its card's date), else now."""
        dates = [
            datetime.strptime(str(c["created_at"]), "%Y-%m-%d %H:%M UTC").replace(tzinfo=UTC)
            for c in self.cards
            if c.get("created_at")
        ]
        return min(dates, default=datetime.now(UTC))

    def describe(self) -> list[dict[str, Any]]:
        """One line per part for the joined card: its folder, range, datasets done, wall."""
        return [
            {
                "folder": p.folder.name,
                "first_dataset": p.card.get("design", {}).get("first_dataset"),
                "datasets_done": p.done,
                "wall_s": p.card.get("wall_s"),
                "device": p.card.get("device"),
            }
            for p in self.parts
        ]


def read_parts(folders: list[Path]) -> RefereeParts:
    """Read and join the parts' folders.

    Raises:
        ValueError: A folder is missing or not a part (names what is missing), two parts are
            of different designs (names the setting), or a dataset was trained in two parts.
    """
    folders = [Path(f) for f in folders]
    if len(set(map(str, folders))) != len(folders):
        raise ValueError("--combine: a folder is named twice")
    designs: list[tuple[Path, dict[str, Any]]] = []
    draws: list[tuple[Path, pd.DataFrame]] = []
    boots: list[pd.DataFrame] = []
    parts: list[Part] = []
    for folder in folders:
        settings, part_draws, part_boot, card = _read_part(folder)
        designs.append((folder, settings))
        draws.append((folder, part_draws))
        boots.append(part_boot)
        parts.append(Part(folder, card, _datasets_in(part_draws)))
    design = join_designs(designs)
    refuse_overlap(draws)
    joined = pd.concat([d for _, d in draws], ignore_index=True)
    if len(joined):
        joined = joined.sort_values(["dataset", "seed"], kind="stable", ignore_index=True)
    return RefereeParts(
        design=design, draws=joined, boot=pd.concat(boots, ignore_index=True), parts=parts
    )


def _datasets_in(draws: pd.DataFrame) -> int:
    return int(draws["dataset"].nunique()) if len(draws) else 0


def _read_part(
    folder: Path,
) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """One part's design, draws, bootstrap intervals and card (empty when it has none)."""
    design, card, (draws, boot) = read_part_folder(
        folder, DESIGN_FILE, CARD_FILE, (DRAWS_FILE, BOOTSTRAP_FILE), "calibrate-inference"
    )
    if not isinstance(design, dict):
        raise ValueError(f"--combine: {folder / DESIGN_FILE} does not hold a design")
    return design, draws, boot, card


def read_part_folder(
    folder: Path, design_file: str, card_file: str, tables: tuple[str, ...], command: str
) -> tuple[Any, dict[str, Any], list[pd.DataFrame]]:
    """A part's design record (as its JSON holds it), its card (empty when it has none) and
    its tables (each empty when absent), for either referee command's ``--combine``.

    Raises:
        ValueError: The folder is missing, has no design file, or cannot be read.
    """
    if not folder.is_dir():
        raise ValueError(f"--combine: {folder} is not a folder")
    if not (folder / design_file).is_file():
        raise ValueError(
            f"--combine: {folder} has no {design_file}; only folders written by "
            f"{command} (this version) can be joined"
        )
    try:
        design = json.loads((folder / design_file).read_text())
        card = (
            json.loads((folder / card_file).read_text()) if (folder / card_file).is_file() else {}
        )
        frames = [read_part_table(folder / name) for name in tables]
    except (OSError, ValueError) as exc:
        raise ValueError(f"--combine: {folder} cannot be read: {str(exc)[:200]}") from None
    return design, card if isinstance(card, dict) else {}, frames


def read_part_table(path: Path) -> pd.DataFrame:
    """A part's CSV, empty when the part finished no dataset (or wrote an empty table)."""
    if not path.is_file() or path.stat().st_size == 0:
        return pd.DataFrame()
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def join_designs(designs: list[tuple[Path, dict[str, Any]]]) -> RefereeDesign:
    """The design the parts share, spanning every part's datasets."""
    first_folder, first = designs[0]
    for folder, design in designs[1:]:
        for key in sorted((set(first) | set(design)) - PART_SETTINGS):
            if first.get(key) != design.get(key):
                raise ValueError(
                    f"--combine: {first_folder} and {folder} are different designs: {key} is "
                    f"{str(first.get(key))[:80]} against {str(design.get(key))[:80]}"
                )
    settings: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in first.items()}
    settings |= {
        "first_dataset": min(int(d["first_dataset"]) for _, d in designs),
        "datasets": max(int(d["datasets"]) for _, d in designs),
        "max_minutes": None,
    }
    try:
        return RefereeDesign(**settings)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"--combine: the parts' design is not valid here: {exc}") from None


def refuse_overlap(draws: list[tuple[Path, pd.DataFrame]]) -> None:
    """Refuse a dataset trained in two parts (it would count twice)."""
    seen: dict[int, Path] = {}
    for folder, part in draws:
        for k in sorted(set(part["dataset"])) if len(part) else []:
            if int(k) in seen:
                raise ValueError(
                    f"--combine: dataset {int(k)} was trained in both {seen[int(k)]} and "
                    f"{folder}; give each part its own --first-dataset range"
                )
            seen[int(k)] = folder
