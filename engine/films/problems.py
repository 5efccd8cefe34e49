"""The import check's problems: one table of kinds, and the problems of films and knees.

Every problem the import check reports has a kind from `PROBLEM_KINDS`, which fixes its
severity: an ``error`` keeps its film (or row) out of the dataset, a ``warning`` leaves it in
and is kept in the report. `Problem.of` makes one, with the kind's severity (and its action,
for kinds whose action never varies). The row half of the check is `engine.films.rows`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import pandas as pd

from engine.detect import LOW_CONFIDENCE as KNEE_LOW_CONFIDENCE
from engine.films.decode import MIN_FILM_SIDE
from engine.films.inspection import FilmCheck
from engine.films.labels import LABEL_BOX_COLUMNS
from engine.vocab import TEST_FRACTION, TRAIN_FRACTION, VAL_FRACTION

#: Columns of `ImportReport.problems`.
PROBLEM_COLUMNS = ("file", "row", "severity", "kind", "problem", "action")
# Below this detector confidence no knee counts as found (the film is left out); below the
# second the crop is kept but flagged for a look.
KNEE_NOT_FOUND = 0.25
# A grade needs this many films for the smallest split (validation: 30 % of the 70 %
# kept after the test holdout) to expect at least one of them.
_SMALLEST_SPLIT = min(TEST_FRACTION, TRAIN_FRACTION, (1 - TEST_FRACTION) * VAL_FRACTION)
MIN_FILMS_PER_GRADE = math.ceil(1 / _SMALLEST_SPLIT)


@dataclass(frozen=True)
class ProblemKind:
    """What a kind of problem means and how severe it is.

    Attributes:
        severity: 'error' (the film or row is left out) or 'warning' (it stays in).
        about: What the kind means, in words.
        action: What to do, for kinds whose action never varies ('' when each problem says).
    """

    severity: str
    about: str
    action: str = ""


#: Every kind of problem the import check reports, by name.
PROBLEM_KINDS: Mapping[str, ProblemKind] = MappingProxyType(
    {
        # one row
        "bad_row": ProblemKind("error", "a row's cell count differs from the header's"),
        "duplicate_row": ProblemKind("error", "a row repeats an earlier row cell for cell"),
        "bad_grade": ProblemKind("error", "a grade cell is not a grade of its task"),
        "bad_side": ProblemKind("error", "a side cell is not a side"),
        "bad_box": ProblemKind("error", "a knee box is not four whole pixels on the film"),
        "no_file": ProblemKind("error", "a row names no film"),
        "no_patient": ProblemKind("error", "a row has no patient id"),
        "no_grade": ProblemKind("error", "a row has no grade at all"),
        "side_conflict": ProblemKind("error", "the CSV's side disagrees with the film's tag"),
        "patient_conflict": ProblemKind("error", "the CSV's patient disagrees with the tag"),
        "hidden_in_id": ProblemKind(
            "error",
            "a patient id holds control characters (NUL, escape, newline ...) or "
            "bidirectional controls (U+202E ...), which show it other than it is",
            "write the id without them (as the hospital's system writes it)",
        ),
        "hidden_in_name": ProblemKind(
            "error",
            "a film's path holds control characters or bidirectional controls (U+202E shows "
            "'knee\\u202egnp.exe' as 'kneeexe.png'); its image id would hold them too",
            "rename the file without them and list it under its new name",
        ),
        # one film
        "missing_file": ProblemKind("error", "a listed film is not in the folder"),
        "outside_folder": ProblemKind(
            "error",
            "a listed path, or a link, leads outside the imported folder; it is never read",
            "copy the film into the folder (links must stay inside it), or delete its row",
        ),
        "not_a_file": ProblemKind(
            "error",
            "not a regular file (a FIFO, a device, a socket or a folder); it is never read",
            "put the film itself in the folder, or delete its row",
        ),
        "too_large": ProblemKind(
            "error",
            "the file, or the pixels its header declares, exceed the caps; it is not decoded",
            "export the film at its ordinary size (one grey film, a few thousand px a side)",
        ),
        "several_pages": ProblemKind(
            "error",
            "a multi-page TIFF or multi-frame DICOM: which page is the film is unknown",
            "save each film as its own file (one page, one frame), or delete its row",
        ),
        "colour_film": ProblemKind(
            "error",
            "a colour DICOM image (RGB secondary capture or screenshot), not a grey radiograph",
            "export the original grey radiograph, or delete its row",
        ),
        "truncated": ProblemKind(
            "error",
            "the file's pixel data is shorter than its header declares",
            "copy or export the film again (the file was cut short), or delete its row",
        ),
        "not_finite": ProblemKind(
            "error",
            "a float film with NaN or infinite pixels",
            "export the film again (as 16-bit integers), or delete its row",
        ),
        "empty_file": ProblemKind(
            "error", "the film's file is empty", "export the film again, or delete its row"
        ),
        "unreadable": ProblemKind(
            "error",
            "the file does not decode as a film",
            "export the film again as DICOM, PNG, JPEG or TIFF, or delete its row",
        ),
        "too_small": ProblemKind(
            "error",
            "the film is too small to crop a knee from",
            f"give the full-size film (at least {MIN_FILM_SIDE} px a side), or delete its row",
        ),
        "no_knee": ProblemKind("error", "no knee found on the film (or on the row's side)"),
        "two_knees": ProblemKind("error", "two knees found and the row gives no side"),
        "one_knee": ProblemKind("error", "listed once per knee, but one knee found"),
        "low_confidence": ProblemKind("warning", "the row's knee found with low confidence"),
        "exif_rotated": ProblemKind(
            "warning",
            "a JPEG or TIFF whose EXIF orientation turns it; it is used upright",
            "nothing, unless its crop in crop review looks wrong",
        ),
        "no_preamble": ProblemKind(
            "warning",
            "a DICOM file without its 128-byte preamble; it was read all the same",
            "nothing; export DICOM as Part 10 files to be safe",
        ),
        "inverted": ProblemKind(
            "warning",
            "bone dark on a bright background (inverted polarity, e.g. a MONOCHROME1 film "
            "exported as is); it is used inverted back",
            "check its crop in crop review; export it again with bone bright (the DICOM, or the "
            "PACS's export with its MONOCHROME1 display applied) to be safe",
        ),
        "polarity_tag": ProblemKind(
            "warning",
            "a DICOM film whose pixels contradict its PhotometricInterpretation (MONOCHROME1 "
            "pixels tagged MONOCHROME2, or inverted twice): bone dark; it is used inverted back",
            "check its crop in crop review; correct the file's PhotometricInterpretation "
            "(MONOCHROME1 where high values are dark) or export it again from the PACS",
        ),
        # across rows and films
        "listed_twice": ProblemKind("error", "a film listed in several different rows"),
        "same_id": ProblemKind("error", "two films with one image id"),
        "same_pixels": ProblemKind("error", "the same decoded pixels under two names"),
        "near_duplicate": ProblemKind(
            "error",
            "one film under two patients, saved differently (re-exported, rescaled)",
            "keep one copy under its true patient and grades, delete the others",
        ),
        "patient_case": ProblemKind(
            "error",
            "patient ids that differ only in case (one patient, or two?)",
            "write each patient's id one way (ids are compared as written)",
        ),
        "too_many_knees": ProblemKind("warning", "a patient with over two knees, or two of a side"),
        "unlisted": ProblemKind("warning", "a film in the folder that no row lists"),
        # the dataset
        "rare_grade": ProblemKind("warning", "a grade too rare for every split to get one"),
    }
)


@dataclass(frozen=True)
class Problem:
    """One row of the report."""

    file: str
    row: int | None
    severity: str
    kind: str
    problem: str
    action: str

    @classmethod
    def of(cls, kind: str, file: str, row: int | None, text: str, action: str = "") -> Problem:
        """A problem of ``kind``, with the kind's severity (`PROBLEM_KINDS`) and its action
        when none is given.

        Raises:
            KeyError: ``kind`` is not in `PROBLEM_KINDS`.
        """
        known = PROBLEM_KINDS[kind]
        return cls(file, row, known.severity, kind, text, action or known.action)


def row_number(value: Any) -> int | None:
    """A CSV line number as an int (None: the problem has no line)."""
    return None if value is None or pd.isna(value) else int(value)


#: What `knee_finding` says of a film's best knee.
KNEE_FINDINGS = ("none", "low", "found")


def knee_finding(confidence: float, n_knees: int = 1) -> str:
    """The one rule for whether a knee was found, shared by the import check and Grade a film.

    Args:
        confidence: The detector's confidence in the knee (0 to 1).
        n_knees: How many knees the detector returned (0: none at all).

    Returns:
        ``"none"`` (no knee: below `KNEE_NOT_FOUND`, or nothing found), ``"low"`` (a knee
        found with low confidence: below `KNEE_LOW_CONFIDENCE`) or ``"found"``.
    """
    if n_knees == 0 or confidence < KNEE_NOT_FOUND:
        return "none"
    return "low" if confidence < KNEE_LOW_CONFIDENCE else "found"


def _no_knee(check: FilmCheck) -> bool:
    return (
        check.knee_confidence is not None
        and knee_finding(check.knee_confidence, check.n_knees) == "none"
    )


@dataclass(frozen=True)
class RowKnees:
    """What `row_knees` found: each good row's knee confidence (None for a row whose box the
    labels give, or when knees were not looked for), problems, rows and films to leave out."""

    confidence: dict[int, float | None]
    problems: list[Problem]
    bad_rows: set[int]
    bad_images: set[str]


def row_knees(
    rows: pd.DataFrame, checks: dict[str, FilmCheck], bad_images: set[str], per_knee: set[str]
) -> RowKnees:
    """The knee each row (a film, or one knee of it) is cropped around, and its problems.

    A row with a box in the labels needs no detector (its box must lie on the film). Else:
    no knee found on the film is an error (once per film); two knees found and no side in
    the row is an error (which knee does it grade?); a film listed once per knee on which
    one knee is found is an error for both rows; the row's knee found with low confidence
    is an error below `KNEE_NOT_FOUND` and a warning below `KNEE_LOW_CONFIDENCE`.
    """
    found = RowKnees({}, [], set(), set())
    boxed = set(rows.loc[rows[LABEL_BOX_COLUMNS[0]].notna(), "image"])
    for i, row in zip(rows.index, rows.to_dict("records"), strict=True):
        image, line = row["image"], row_number(row["row"])
        check = checks.get(image)
        if check is None or not check.ok or image in bad_images:
            continue
        problem = None
        if not pd.isna(row[LABEL_BOX_COLUMNS[0]]):
            problem = _box_off_film(row, check, line)
            found.confidence[i] = None
        elif check.knee_confidence is None:
            found.confidence[i] = None
        elif _no_knee(check):
            if image not in boxed:
                found.bad_images.add(image)
            problem = _knee_problem(image, line, check.knee_confidence, "no knee found")
        else:
            problem, confidence = _knee_of_row(row, check, line, image in per_knee)
            found.confidence[i] = confidence
        if problem is not None:
            found.problems.append(problem)
            if problem.severity == "error":
                found.bad_rows.add(i)
    # A film without a knee is named once (on its first row), as one film.
    seen: set[tuple[str, str]] = set()
    unique = []
    for p in found.problems:
        if p.kind == "no_knee" and p.file in found.bad_images:
            if (p.file, p.kind) in seen:
                continue
            seen.add((p.file, p.kind))
        unique.append(p)
    return RowKnees(found.confidence, unique, found.bad_rows, found.bad_images)


def _knee_of_row(
    row: dict, check: FilmCheck, line: int | None, listed_per_knee: bool
) -> tuple[Problem | None, float | None]:
    """(problem or None, the row's knee confidence) for a row cropped by the detector."""
    image, side = row["image"], row["side"]
    knees = [(s, c) for s, c in check.knees] or [("", float(check.knee_confidence or 0.0))]
    if len(knees) >= 2 and not side:
        return Problem.of(
            "two_knees",
            image,
            line,
            "two knees found on this film and this row gives no side: which knee is graded?",
            "give one row per knee with its side (R and L; the patient's right knee is on the "
            "viewer's left), or give this row's side",
        ), None
    if len(knees) == 1 and listed_per_knee:
        return Problem.of(
            "one_knee",
            image,
            line,
            f"listed once per knee (sides R and L), but one knee found on the film "
            f"(confidence {knees[0][1]:.2f})",
            "give each row its knee's box (x0, y0, x1, y1), or keep one row with the side of "
            "the knee the film shows",
        ), None
    of_side = [c for s, c in knees if side and s == side]
    confidence = of_side[0] if of_side else max(c for _, c in knees)
    finding = knee_finding(confidence)
    if finding == "none":
        what = f"no {side} knee found" if of_side and len(knees) > 1 else "no knee found"
        return _knee_problem(image, line, confidence, what), confidence
    if finding == "low":
        return Problem.of(
            "low_confidence",
            image,
            line,
            f"knee found with low confidence ({confidence:.2f} < {KNEE_LOW_CONFIDENCE})",
            "look at its crop in crop review before training on it",
        ), confidence
    return None, confidence


def _knee_problem(image: str, line: int | None, confidence: float, what: str) -> Problem:
    return Problem.of(
        "no_knee",
        image,
        line,
        f"{what} (detector confidence {confidence:.2f} < {KNEE_NOT_FOUND})",
        "check that this is a knee radiograph; leave it out, give its knee box "
        "(x0, y0, x1, y1), or crop it by hand in crop review",
    )


def _box_off_film(row: dict, check: FilmCheck, line: int | None) -> Problem | None:
    x0, y0, x1, y1 = (int(row[c]) for c in LABEL_BOX_COLUMNS)
    if x1 <= check.width_px and y1 <= check.height_px:
        return None
    return Problem.of(
        "bad_box",
        row["image"],
        line,
        f"box {x0}, {y0}, {x1}, {y1} is not on the film ({check.width_px} x {check.height_px} px)",
        f"give a box inside the film: x from 0 to {check.width_px}, y from 0 to {check.height_px}",
    )


def problem_frame(problems: list[Problem]) -> pd.DataFrame:
    frame = pd.DataFrame([p.__dict__ for p in problems], columns=list(PROBLEM_COLUMNS))
    frame["row"] = frame["row"].astype("Int64")
    frame["_no_row"] = frame["row"].isna()
    frame = frame.sort_values(["_no_row", "row", "file"], kind="stable").drop(columns="_no_row")
    return frame.reset_index(drop=True)
