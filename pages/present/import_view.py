"""What the Launch and Data pages show of an import: the typed path made a Path, the one
problems table, counts in words, the films left out, the detector, and what still blocks
queueing. No streamlit, so it is unit-tested.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from engine.films import KNEE_LOW_CONFIDENCE, ImportReport, amount_done, escaped
from jobs.services.access import confine_import_path, data_roots
from jobs.services.card_lines import card_comments
from jobs.services.csv_safe import escape_csv_cells
from pages.present.user_text import code, plain

#: Layout choices of the import form (``auto`` first), in words.
LAYOUT_LABELS = {
    "auto": "Find out from the folder",
    "csv": "Films + labels CSV",
    "grade_folders": "Grade folders (0–4, optionally under train/val/test)",
    "dicom": "DICOM files + grades CSV",
}
#: What a grade-folder import does with the layout's own train/val/test split, in words.
SPLIT_LABELS = {
    "ignore": "Ignore it (every seed draws its own split)",
    "test": "Use its test folder as the test set of every seed",
}
#: The one problems table's columns, as shown.
SHOWN_COLUMNS = ("file", "row", "severity", "problem", "what to do")


def resolve_import_path(text: str) -> Path:
    """The one place a path a user typed for an import becomes a path to read.

    Every import path (film folder, labels CSV) typed on a page goes through here, and only
    here: it is confined to the data roots (`jobs.services.access.data_roots`: anywhere on a
    single-user loopback server, else ``SOFTGRADE_DATA_ROOTS`` or ``SOFTGRADE_HOME``), with
    links and ``..`` resolved first, so no page may build an import path any other way.

    Raises:
        ValueError: The text is empty, or `jobs.services.access.PathRefused` (a ValueError) naming
        the
            roots when the path leads outside them.
    """
    cleaned = text.strip()
    if not cleaned:
        raise ValueError("give a path on the machine SoftGrade runs on")
    return confine_import_path(cleaned, data_roots())


def problems_table(problems: pd.DataFrame) -> pd.DataFrame:
    """An import's problems as one table: file, row (CSV line as text, '' without one),
    severity, problem, what to do.

    Args:
        problems: A report's problems (``row``) or the store's (``csv_row``).
    """
    frame = problems.rename(columns={"csv_row": "row", "action": "what to do"})
    # Escaped: a name or cell may hold control characters or a U+202E that reorders it.
    frame = frame.assign(
        file=frame["file"].map(escaped).replace("", "(the whole dataset)"),
        problem=frame["problem"].map(escaped),
        **{"what to do": frame["what to do"].map(escaped)},
    )
    # As text, so a problem without a row shows an empty cell rather than "None".
    frame["row"] = [("" if pd.isna(r) else str(int(r))) for r in frame["row"]]
    return frame[list(SHOWN_COLUMNS)].reset_index(drop=True)


def counts_text(report: ImportReport) -> str:
    """The report's counts in one sentence (markdown)."""
    split = {"test": ", its test folder kept as the test set", "ignored": ", its split ignored"}
    return (
        f"**{report.n_errors} error(s)** (films or rows left out) and "
        f"**{report.n_warnings} warning(s)** (films kept) · **{len(report.films)} good "
        f"film(s)**, {len(report.left_out)} left out · {report.n_rows} listed row(s), "
        f"{report.n_files} file(s) decoded in {report.checked_s:.1f} s · "
        f"{report.layout} layout{split.get(report.layout_split or '', '')}"
    )


def import_card(summary: Any) -> dict[str, str]:
    """What a stored import (``store.imports.ImportSummary``) was, as the card that heads its
    report's CSV: where the films came from, when, how it was checked and what it found."""
    counts = ", ".join(f"{n} {label}" for label, n in summary_counts(summary))
    card = {
        "import": str(summary.name),
        "dataset id": str(summary.dataset_id),
        "import id": str(summary.import_id),
        "folder": str(summary.source),
        "labels csv": str(summary.labels_csv or "none (the layout gives the grades)"),
        "layout": str(summary.layout)
        + (f", its split: {summary.layout_split}" if summary.layout_split else ""),
        "bad films": "skipped" if summary.skip_bad else "none skipped",
        "knees located by": detector_text(
            summary.detector, summary.detector_iou, summary.detector_map
        ),
        "imported at": f"{summary.created_at:%Y-%m-%d %H:%M}",
        "counts": counts,
    }
    return card


def report_csv(problems: pd.DataFrame, summary: Any) -> str:
    """A stored import's problems as the CSV the Data page offers (the store's columns:
    file, csv_row, severity, kind, problem, action), headed by the import's card as ``#``
    comment lines (read it back with ``pandas.read_csv(..., comment="#")``)."""
    return card_comments(import_card(summary)) + escape_csv_cells(problems).to_csv(index=False)


def left_out_text(left_out: tuple[str, ...] | list[str], shown: int = 20) -> str:
    """The films an import leaves out, by name (the first ``shown``), as markdown."""
    names = ", ".join(code(escaped(f)) for f in left_out[:shown])
    more = f" and {len(left_out) - shown} more" if len(left_out) > shown else ""
    return f"Left out: {names}{more}."


#: The most problems the page's table draws: a static table is one HTML row per problem, and
#: a folder of thousands of bad files would make a page of megabytes. The rest are in the
#: report's CSV.
PROBLEMS_TABLE_MAX = 300


def problems_shown(problems: pd.DataFrame, limit: int = PROBLEMS_TABLE_MAX) -> pd.DataFrame:
    """`problems_table` as the page shows it: a static table whose cells wrap, so every
    problem and what to do about it is read in full without widening a column; errors (films
    or rows left out) first, then warnings, each in report order, at most ``limit`` rows.

    Every cell is escaped by `plain`: a static table renders its cells as markdown, and a
    file name or CSV cell is the folder's text, never markup.
    """
    table = problems_table(problems)
    errors_first = table.sort_values("severity", key=lambda s: s != "error", kind="stable")
    return errors_first.head(limit).map(plain).reset_index(drop=True)


def problems_cut_text(total: int, limit: int = PROBLEMS_TABLE_MAX) -> str | None:
    """What the table leaves out when a report has more than ``limit`` problems, else None."""
    if total <= limit:
        return None
    return (
        f"The table shows the first {limit:,} of {total:,} problems, errors first; the "
        "report's CSV below holds every one."
    )


def problems_csv(problems: pd.DataFrame) -> str:
    """Every problem of a check as CSV (the table's columns), cells made safe for a
    spreadsheet (`escape_csv_cells`)."""
    return escape_csv_cells(problems_table(problems)).to_csv(index=False)


def left_out_films(problems: pd.DataFrame) -> list[str]:
    """The files an import left out: those with an error, in report order."""
    errors = problems[(problems["severity"] == "error") & (problems["file"] != "")]
    return list(dict.fromkeys(errors["file"]))


def summary_counts(summary: Any) -> list[tuple[str, int]]:
    """A stored import's counts (``store.imports.ImportSummary``) as (label, number)."""
    return [
        ("files decoded", summary.n_files),
        ("listed rows", summary.n_rows),
        ("films registered", summary.n_good),
        ("left out", summary.n_left_out),
        ("errors", summary.n_errors),
        ("warnings", summary.n_warnings),
    ]


def detector_text(name: str | None, iou: float | None = None, map_: float | None = None) -> str:
    """Which detector located (and scored) an import's knees, in words."""
    if name is None:
        return "not recorded (imported before SoftGrade recorded its detector)"
    if name == "classical":
        return (
            "the classical detector (calibrated on the phantom's boxes; no held-out score on "
            f"your films). Crops below {KNEE_LOW_CONFIDENCE} confidence are worth a look on "
            "the Review crops page"
        )
    scores = [f"held-out mean IoU {iou:.3f}" if iou is not None else ""]
    scores.append(f"mAP50 {map_:.3f}" if map_ is not None else "")
    shown = ", ".join(s for s in scores if s)
    return f"the trained YOLOv8n detector {name}" + (f" ({shown})" if shown else "")


def planned_detector_text(detector: Any) -> str:
    """Which detector an import will use (`engine.films.DetectorInfo`), in words."""
    if not detector.trained:
        return (
            "Knees will be located by the classical detector: no YOLO knee detector is "
            "trained yet in this SoftGrade home's detectors folder."
        )
    what = detector_text(detector.key, detector.held_out_iou, detector.held_out_map)
    return f"Knees will be located by {what}, the newest trained, on {detector.trained_on}."


@dataclass(frozen=True)
class ImportRequest:
    """What the import form asks to check: folder, labels CSV (may be empty), layout, split."""

    folder: str
    labels_csv: str
    layout: str
    layout_split: str


def import_blocker(state: dict[str, Any] | None, request: ImportRequest) -> str | None:
    """Why a study cannot be queued on the folder yet (None once its films are registered).

    Args:
        state: The form's import state: ``request`` (the `ImportRequest` checked),
            ``report`` (its `ImportReport`, or None when the folder could not be read),
            ``error`` (that message) and ``registered`` (set once registered).
        request: What the form asks for now.
    """
    if not request.folder.strip():
        return "give the folder of films to import, then check it."
    if state is None:
        return "check the folder first: nothing is queued before its films are checked."
    if state["request"] != request:
        return "the folder or its settings changed since the check: check it again."
    if state.get("registered"):
        return None
    report = state.get("report")
    if report is None:
        return "the folder could not be read (see above): fix it and check again."
    if report.films.empty:
        return "no film of this folder is good: fix them and check again."
    if report.n_errors:
        return (
            f"{report.n_errors} error(s) left {len(report.left_out)} film(s) or row(s) out: fix "
            "them and check again, or skip the bad films and register the good ones."
        )
    return f"register the {len(report.films)} film(s) above first."


class ProgressThrottle:
    """Passes (fraction, text) of a long loop over films to ``show`` at most every
    ``every_s`` (and always the last), so a page is not sent an update per film."""

    def __init__(
        self, show: Callable[[float, str], object], every_s: float = 0.25, verb: str = "Checked"
    ) -> None:
        self.show = show
        self.every_s = every_s
        self.verb = verb
        self.last = float("-inf")

    def __call__(self, done: int, total: int, rate: float | None = None) -> None:
        """Called with (films done, films in all[, films per second])."""
        now = time.monotonic()
        if done < total and now - self.last < self.every_s:
            return
        self.last = now
        speed = f" ({rate:.0f} films/s)" if rate is not None else ""
        self.show(done / max(total, 1), f"{self.verb} {done} of {total} films{speed}")

    def rows(self, phase: str, done: int, total: int) -> None:
        """Called as a labels CSV is parsed, read and checked (`engine.films.RowsProgress`):
        the same bar, worded for its unit, e.g. "Parsing the labels CSV: 1.2 of 3.7 MB",
        "Reading the labels: 40,000 of 100,000 rows"."""
        now = time.monotonic()
        if done < total and now - self.last < self.every_s:
            return
        self.last = now
        amount = amount_done(phase, done, total, of=" of ", grouped=True)
        self.show(done / max(total, 1), f"{phase[:1].upper()}{phase[1:]}: {amount}")


def graded_counts(films: pd.DataFrame) -> dict[str, int]:
    """Good films per task (for the rough time)."""
    return {"KL": int(films["kl"].notna().sum()), "CPPD": int(films["cppd"].notna().sum())}
