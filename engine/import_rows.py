"""The import check's row and file checks: every problem of a listing and its decoded films.

`find_problems` turns a folder's listing (`engine.import_layouts`) and what decoding found
(`engine.import_films.FilmCheck`) into one `Problem` per finding and the good films:

- each row: the listed file exists, a patient id, grades whole numbers in the task's range
  (`engine.vocab`), at least one grade, a side in `SIDE_WORDS` or empty, the row's cell
  count;
- each film: decoded, big enough, a knee found with enough confidence;
- across rows: exact duplicate rows, one film listed in several rows, the same decoded
  pixels under two names, a patient with more than two knees or two of one side, films in
  the folder that no row lists;
- the dataset: grades of a task too rare for every split to get one.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import pandas as pd

from engine.import_films import FilmCheck
from engine.import_layouts import GRADE_COLUMNS, Listing
from engine.importing import (
    GIVEN_SPLIT,
    MIN_FILM_SIDE,
    SIDES_ALLOWED,
    image_id_for,
    normalise_side,
)
from engine.vocab import TASK_INFO, TEST_FRACTION, TRAIN_FRACTION, VAL_FRACTION

#: Columns of `ImportReport.problems`.
PROBLEM_COLUMNS = ("file", "row", "severity", "kind", "problem", "action")
# Below this detector confidence no knee counts as found (the film is left out); below the
# second the crop is kept but flagged for a look.
KNEE_NOT_FOUND = 0.25
KNEE_LOW_CONFIDENCE = 0.5
# A grade needs this many films for the smallest split (validation: 30 % of the 70 %
# kept after the test holdout) to expect at least one of them.
_SMALLEST_SPLIT = min(TEST_FRACTION, TRAIN_FRACTION, (1 - TEST_FRACTION) * VAL_FRACTION)
MIN_FILMS_PER_GRADE = math.ceil(1 / _SMALLEST_SPLIT)


@dataclass(frozen=True)
class Problem:
    """One row of the report."""

    file: str
    row: int | None
    severity: str
    kind: str
    problem: str
    action: str


@dataclass(frozen=True, eq=False)  # holds frames: compare their parts
class Findings:
    """What `find_problems` found.

    Attributes:
        problems: One row per problem (`PROBLEM_COLUMNS`), sorted by row, then file.
        films: The good films, one per image, in listing order.
        left_out: Listed films that are not among the good films.
    """

    problems: pd.DataFrame
    films: pd.DataFrame
    left_out: tuple[str, ...]


def find_problems(listing: Listing, rows: pd.DataFrame, checks: dict[str, FilmCheck]) -> Findings:
    """Every problem of the rows and films of one listing, and the good films.

    Args:
        listing: The folder as read (`engine.import_layouts.read_listing`).
        rows: Its rows (for DICOM, resolved against the films' tags).
        checks: file → what decoding it found (`engine.import_films.inspect_files`).
    """
    problems: list[Problem] = []
    rows = rows.reset_index(drop=True)
    problems += _short_row_problems(listing)
    repeats = _exact_repeats(rows)
    problems += [
        Problem(
            rows.at[i, "image"],
            _row(rows.at[i, "row"]),
            "error",
            "duplicate_row",
            f"repeats row {_row(rows.at[first, 'row'])} exactly",
            f"delete row {_row(rows.at[i, 'row'])}",
        )
        for i, first in repeats.items()
    ]
    kept = rows.drop(index=list(repeats))
    parsed, row_problems, bad_rows = _parse_rows(kept, listing)
    problems += row_problems
    twice, twice_problems = _listed_twice(kept)
    problems += twice_problems
    missing, file_problems = _file_problems(kept, checks, listing)
    problems += file_problems
    bad_images = set(twice) | set(missing)
    bad_images |= {f for f, c in checks.items() if not c.ok}
    bad_images |= {f for f, c in checks.items() if c.ok and _no_knee(c)}
    first_rows = parsed[parsed["image"] != ""].drop_duplicates("image")
    pixel_out, pixel_problems = _same_pixels(first_rows, checks, bad_images)
    problems += pixel_problems
    bad_images |= pixel_out
    problems += _patient_problems(first_rows)
    good = first_rows[~first_rows["image"].isin(bad_images) & ~first_rows.index.isin(bad_rows)]
    films = _films_frame(good, checks, with_split=listing.layout_split == "test")
    problems += _rare_grade_problems(films)
    problems += _unlisted_problems(listing, kept)
    listed = list(dict.fromkeys(f for f in kept["image"] if f))
    registered = set(films["image"])
    left_out = tuple(f for f in listed if f not in registered)
    return Findings(_problem_frame(problems), films, left_out)


def _row(value: object) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def _short_row_problems(listing: Listing) -> list[Problem]:
    return [
        Problem(
            "",
            line,
            "error",
            "bad_row",
            f"row has {n} cell(s); the header has {m}",
            "fix the row's commas (quote a cell that holds a comma)",
        )
        for line, n, m in listing.short_rows
    ]


def _exact_repeats(rows: pd.DataFrame) -> dict[int, int]:
    """Index of each row that repeats an earlier row cell for cell → that earlier row."""
    cells = [c for c in rows.columns if c != "row"]
    first: dict[tuple, int] = {}
    repeats = {}
    for i, values in zip(rows.index, rows[cells].itertuples(index=False, name=None), strict=True):
        if values in first:
            repeats[i] = first[values]
        else:
            first[values] = i
    return repeats


def _parse_rows(rows: pd.DataFrame, listing: Listing) -> tuple[pd.DataFrame, list[Problem], set]:
    """Grades as integers and sides as L/R; problems for every cell that is neither."""
    problems: list[Problem] = []
    bad: set[int] = set()
    parsed = rows.copy()
    from_folder = listing.layout == "grade_folders"
    for column in GRADE_COLUMNS:
        task = next(t for t in TASK_INFO.values() if t.column == column)
        values = []
        for i, raw in zip(rows.index, rows[column], strict=True):
            grade, message = _grade(raw, task.top_grade)
            values.append(grade)
            if message:
                bad.add(i)
                where = " (its folder's name)" if from_folder else ""
                problems.append(
                    Problem(
                        rows.at[i, "image"],
                        _row(rows.at[i, "row"]),
                        "error",
                        "bad_grade",
                        f"{column}={raw}{where} is not a {task.name} grade: {message}",
                        f"use a whole number 0 to {task.top_grade}"
                        + ("" if from_folder else ", or leave it empty"),
                    )
                )
        parsed[column] = pd.array(values, dtype="Int64")
    sides = []
    records = dict(zip(rows.index, rows.to_dict("records"), strict=True))
    for i, record in records.items():
        side, problem = _side(record)
        sides.append(side or "")
        for found in (problem, _patient_conflict(record)):
            if found is not None:
                bad.add(i)
                problems.append(found)
    parsed["side"] = sides
    graded = parsed[list(GRADE_COLUMNS)].notna().any(axis=1)
    for i, record in records.items():
        image, line = record["image"], _row(record["row"])
        if not image:
            bad.add(i)
            what = "SOPInstanceUID" if listing.key == "sop_instance_uid" else "file"
            problems.append(
                Problem(
                    "",
                    line,
                    "error",
                    "no_file",
                    f"no {what} named in this row",
                    "name the film, or delete the row",
                )
            )
            continue
        if not str(record["patient_id"]).strip():
            bad.add(i)
            where = " (not in the CSV and no PatientID tag)" if listing.layout == "dicom" else ""
            problems.append(
                Problem(
                    image,
                    line,
                    "error",
                    "no_patient",
                    f"no patient id{where}",
                    "give every film its patient's id (both knees of a patient share it)",
                )
            )
        if not graded[i] and i not in bad:
            bad.add(i)
            problems.append(
                Problem(
                    image,
                    line,
                    "error",
                    "no_grade",
                    f"no grade: {' and '.join(GRADE_COLUMNS)} are all empty",
                    "give a grade, or delete the row",
                )
            )
    return parsed, problems, bad


def _grade(raw: str, top: int) -> tuple[int | None, str]:
    """(grade or None, '' or what is wrong) of a grade cell as written."""
    text = str(raw).strip()
    if not text:
        return None, ""
    try:
        value = float(text)
    except ValueError:
        return None, "not a number"
    if not value.is_integer():
        return None, "not a whole number"
    if not 0 <= value <= top:
        return None, f"outside 0 to {top}"
    return int(value), ""


def _side(row: dict) -> tuple[str | None, Problem | None]:
    image, line = row["image"], _row(row["row"])
    try:
        side = normalise_side(row["side"])
    except ValueError:
        return None, Problem(
            image,
            line,
            "error",
            "bad_side",
            f"side={row['side']} is not a side",
            f"use {SIDES_ALLOWED}",
        )
    tag, written = row.get("tag_side", ""), row.get("csv_side", "")
    if tag and written:
        try:
            written_side = normalise_side(written)
        except ValueError:
            written_side = None
        if written_side is not None and normalise_side(tag) != written_side:
            return None, Problem(
                image,
                line,
                "error",
                "side_conflict",
                f"side {written} in the CSV, but the film's laterality tag says {tag}",
                "correct the CSV's side (or the film's tag)",
            )
    return side, None


def _patient_conflict(row: dict) -> Problem | None:
    tag, written = row.get("tag_patient", ""), row.get("csv_patient", "")
    if not (tag and written) or tag == written:
        return None
    return Problem(
        row["image"],
        _row(row["row"]),
        "error",
        "patient_conflict",
        f"patient {written} in the CSV, but the film's PatientID tag says {tag}",
        "correct the CSV's patient_id (or the film's tag)",
    )


def _listed_twice(rows: pd.DataFrame) -> tuple[list[str], list[Problem]]:
    """Films listed in more than one (non-identical) row: every row is named."""
    named = rows[(rows["image"] != "") & rows["image"].duplicated(keep=False)]
    groups = named.groupby("image", sort=False).groups
    twice, problems = [], []
    for image, index in groups.items():
        if len(index) < 2:
            continue
        twice.append(image)
        lines = [_row(named.at[i, "row"]) for i in index]
        listed = ", ".join(str(n) for n in lines if n is not None)
        for i in index:
            problems.append(
                Problem(
                    image,
                    _row(named.at[i, "row"]),
                    "error",
                    "listed_twice",
                    f"listed in {len(index)} rows ({listed}) with different cells",
                    "keep the one right row for this film",
                )
            )
    return twice, problems


_FILM_ACTIONS = {
    "empty_file": "export the film again, or delete its row",
    "unreadable": "export the film again as DICOM, PNG, JPEG or TIFF, or delete its row",
    "too_small": f"give the full-size film (at least {MIN_FILM_SIDE} px a side), or delete its row",
}


def _file_problems(
    rows: pd.DataFrame, checks: dict[str, FilmCheck], listing: Listing
) -> tuple[list[str], list[Problem]]:
    """Missing, unreadable and knee-less films, once per film (on its first row)."""
    problems, missing = [], []
    for image, line in _first_lines(rows):
        check = checks.get(image)
        if check is None:
            missing.append(image)
            if listing.layout == "dicom" and listing.key == "sop_instance_uid":
                continue  # reported as the row's missing SOPInstanceUID below
            problems.append(
                Problem(
                    image,
                    line,
                    "error",
                    "missing_file",
                    "listed in the CSV but not in the folder"
                    + (" (a path must stay inside the folder)" if ".." in image.split("/") else ""),
                    "add the film to the folder, or correct or delete the row",
                )
            )
        elif not check.ok:
            problems.append(
                Problem(
                    image,
                    line,
                    "error",
                    check.error_kind,
                    check.error,
                    _FILM_ACTIONS[check.error_kind],
                )
            )
        elif check.knee_confidence is not None:
            problems += _knee_problems(check, line)
    if listing.layout == "dicom" and listing.key == "sop_instance_uid":
        for i in rows.index[(rows["image"] == "") & (rows["key"] != "")]:
            problems.append(
                Problem(
                    str(rows.at[i, "key"]),
                    _row(rows.at[i, "row"]),
                    "error",
                    "missing_file",
                    "no DICOM file in the folder has this SOPInstanceUID",
                    "add the film to the folder, or correct or delete the row",
                )
            )
    return missing, problems


def _first_lines(rows: pd.DataFrame) -> list[tuple[str, int | None]]:
    named = rows[rows["image"] != ""].drop_duplicates("image")
    return [(img, _row(line)) for img, line in zip(named["image"], named["row"], strict=True)]


def _no_knee(check: FilmCheck) -> bool:
    return check.knee_confidence is not None and (
        check.n_knees == 0 or check.knee_confidence < KNEE_NOT_FOUND
    )


def _knee_problems(check: FilmCheck, line: int | None) -> list[Problem]:
    conf = check.knee_confidence or 0.0
    if _no_knee(check):
        return [
            Problem(
                check.file,
                line,
                "error",
                "no_knee",
                f"no knee found (detector confidence {conf:.2f} < {KNEE_NOT_FOUND})",
                "check that this is a knee radiograph; leave it out, or crop it by hand",
            )
        ]
    if conf < KNEE_LOW_CONFIDENCE:
        return [
            Problem(
                check.file,
                line,
                "warning",
                "low_confidence",
                f"knee found with low confidence ({conf:.2f} < {KNEE_LOW_CONFIDENCE})",
                "look at its crop in crop review before training on it",
            )
        ]
    return []


def _same_pixels(
    first_rows: pd.DataFrame, checks: dict[str, FilmCheck], bad: set[str]
) -> tuple[set[str], list[Problem]]:
    """Listed films whose decoded pixels are identical: name both and their patients.

    Under different patients (or different grades) the copy is a leak between splits (or a
    contradiction) and every copy is left out; one patient's film listed under two names
    keeps its first name.
    """
    by_hash: dict[str, list[str]] = defaultdict(list)
    info = first_rows.set_index("image")
    for image in info.index:
        check = checks.get(image)
        if check is not None and check.pixels_hash and image not in bad:
            by_hash[check.pixels_hash].append(image)
    out: set[str] = set()
    problems = []
    for group in by_hash.values():
        if len(group) < 2:
            continue
        patients = {str(info.at[f, "patient_id"]) for f in group}
        grades = {tuple(info.loc[f, list(GRADE_COLUMNS)].astype(str)) for f in group}
        leak = len(patients) > 1
        conflict = leak or len(grades) > 1
        out |= set(group) if conflict else set(group[1:])
        for f in group:
            others = ", ".join(f"{o} (patient {info.at[o, 'patient_id']})" for o in group if o != f)
            what = (
                "one film under two patients, a leak between splits"
                if leak
                else "one film with two sets of grades"
                if conflict
                else "one film listed under two names"
            )
            problems.append(
                Problem(
                    f,
                    _row(info.at[f, "row"]),
                    "error",
                    "same_pixels",
                    f"same pixels as {others}, and this is patient {info.at[f, 'patient_id']}: "
                    f"{what}",
                    "keep one copy under its true patient and grades, delete the others",
                )
            )
    return out, problems


def _patient_problems(rows: pd.DataFrame) -> list[Problem]:
    """A patient with more than two knees, or two knees of one side (wrong ids, most likely)."""
    problems = []
    named = rows[rows["patient_id"].astype(str).str.strip() != ""]
    per_side = named[named["side"] != ""].groupby(["patient_id", "side"]).size()
    suspects = set(per_side[per_side > 1].index.get_level_values(0))
    counts = named["patient_id"].value_counts()
    suspects |= set(counts[counts > 2].index)
    named = named[named["patient_id"].isin(suspects)]  # few: the loop below stays short
    for patient, group in named.groupby("patient_id", sort=True):
        sides = [s for s in group["side"] if s]
        repeated = sorted({s for s in sides if sides.count(s) > 1})
        if len(group) <= 2 and not repeated:
            continue
        where = ", ".join(
            f"{img}" + (f" (row {_row(line)})" if _row(line) is not None else "")
            for img, line in zip(group["image"], group["row"], strict=True)
        )
        what = (
            f"patient {patient} has {len(group)} films: {where}; a patient has at most two knees"
            if len(group) > 2
            else f"patient {patient} has two {repeated[0]} knees: {where}"
        )
        for img, line in zip(group["image"], group["row"], strict=True):
            problems.append(
                Problem(
                    img,
                    _row(line),
                    "warning",
                    "too_many_knees",
                    what,
                    "check the patient ids and sides (the films stay together in one split)",
                )
            )
    return problems


def _films_frame(
    good: pd.DataFrame, checks: dict[str, FilmCheck], *, with_split: bool
) -> pd.DataFrame:
    films = pd.DataFrame(
        {
            "image": good["image"].astype(str),
            "image_id": good["image"].map(image_id_for).astype(str),
            "patient_id": good["patient_id"].astype(str),
            "side": good["side"].astype(str),
            **{c: good[c].astype("Int64") for c in GRADE_COLUMNS},
            "width_px": [checks[f].width_px for f in good["image"]],
            "height_px": [checks[f].height_px for f in good["image"]],
            "knee_confidence": [checks[f].knee_confidence for f in good["image"]],
            "pixels_hash": [checks[f].pixels_hash for f in good["image"]],
        }
    ).reset_index(drop=True)
    films["knee_confidence"] = films["knee_confidence"].astype("Float64")
    if with_split:
        films[GIVEN_SPLIT] = good[GIVEN_SPLIT].astype(str).to_numpy()
    return films


def _rare_grade_problems(films: pd.DataFrame) -> list[Problem]:
    """Grades of a task (one the dataset has) with too few films for every split to get one."""
    problems = []
    for task in TASK_INFO.values():
        grades = films[task.column].dropna()
        if grades.empty:
            continue
        counts = grades.astype(int).value_counts()
        for grade in task.grades:
            n = int(counts.get(grade, 0))
            if n >= MIN_FILMS_PER_GRADE:
                continue
            problems.append(
                Problem(
                    "",
                    None,
                    "warning",
                    "rare_grade",
                    f"{task.name} grade {grade}: {n} good film(s); every split expects one "
                    f"only from {MIN_FILMS_PER_GRADE} on (validation gets "
                    f"{(1 - TEST_FRACTION) * VAL_FRACTION:.0%} of them)",
                    "add films of this grade; otherwise some seeds train, select or test "
                    "without it (its metrics are then left out)",
                )
            )
    return problems


def _unlisted_problems(listing: Listing, rows: pd.DataFrame) -> list[Problem]:
    listed = set(rows["image"])
    if listing.layout == "csv":
        unlisted = listing.unlisted
    elif listing.layout == "dicom":
        unlisted = [f for f in listing.files if f not in listed]
    else:
        return []
    return [
        Problem(
            f,
            None,
            "warning",
            "unlisted",
            "in the folder but no row of the CSV lists it; it is not imported",
            "add a row for it if it should be imported",
        )
        for f in unlisted
    ]


def _problem_frame(problems: list[Problem]) -> pd.DataFrame:
    frame = pd.DataFrame([p.__dict__ for p in problems], columns=list(PROBLEM_COLUMNS))
    frame["row"] = frame["row"].astype("Int64")
    frame["_no_row"] = frame["row"].isna()
    frame = frame.sort_values(["_no_row", "row", "file"], kind="stable").drop(columns="_no_row")
    return frame.reset_index(drop=True)
