"""The import check's row and file checks: every problem of a listing and its decoded films.

`find_problems` turns a folder's listing (`engine.films.layouts`) and what decoding found
(`engine.films.inspection.FilmCheck`) into one `Problem` per finding (its kind from
`engine.films.problems.PROBLEM_KINDS`) and the good films. Cells are read by the labels
grammar (`engine.films.labels`), as `read_labels` reads them:

- each row: the listed file exists, a patient id, grades whole numbers in the task's range
  (`engine.vocab`), at least one grade, a side in `SIDE_WORDS` or empty, the row's cell
  count;
- each film: decoded, big enough, a knee found with enough confidence;
- across rows: exact duplicate rows, one film listed in several rows, the same decoded
  pixels under two names, one film that looks the same (a re-export, a rescaled copy) under
  two patients, patient ids that differ only in case, a side that contradicts the film's
  DICOM laterality tag (every layout), a patient with more than two knees or two of one
  side, films in the folder that no row lists;
- the dataset: grades of a task too rare for every split to get one.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pandas as pd

from engine.films.copies import near_duplicates, same_pixels
from engine.films.inspection import FilmCheck
from engine.films.labels import (
    GIVEN_SPLIT,
    LABEL_BOX_COLUMNS,
    SIDES_ALLOWED,
    escaped,
    hidden_characters,
    image_id_for,
    knee_image_id,
    label_box_problem,
    normalise_side,
    parse_grade,
    per_knee_films,
)
from engine.films.layouts import GRADE_COLUMNS, Listing
from engine.films.problems import (
    MIN_FILMS_PER_GRADE,
    Problem,
    problem_frame,
    row_knees,
    row_number,
)
from engine.films.progress import CHECKING_ROWS, RowsProgress, RowTicker
from engine.films.reading import film_path_refusal
from engine.vocab import TASK_INFO, TEST_FRACTION, VAL_FRACTION


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


def find_problems(
    listing: Listing,
    rows: pd.DataFrame,
    checks: dict[str, FilmCheck],
    rows_progress: RowsProgress | None = None,
) -> Findings:
    """Every problem of the rows and films of one listing, and the good films.

    Args:
        listing: The folder as read (`engine.films.layouts.read_listing`).
        rows: Its rows (for DICOM, resolved against the films' tags).
        checks: file → what decoding it found (`engine.films.inspection.inspect_files`).
        rows_progress: Told as the rows are checked (`CHECKING_ROWS`).
    """
    problems: list[Problem] = []
    rows = rows.reset_index(drop=True)
    problems += _short_row_problems(listing)
    repeats = _exact_repeats(rows)
    problems += [
        Problem.of(
            "duplicate_row",
            rows.at[i, "image"],
            row_number(rows.at[i, "row"]),
            f"repeats row {row_number(rows.at[first, 'row'])} exactly",
            f"delete row {row_number(rows.at[i, 'row'])}",
        )
        for i, first in repeats.items()
    ]
    kept = rows.drop(index=list(repeats))
    # _parse_rows loops over the rows once per grade column, then three times more.
    ticker = RowTicker(rows_progress, CHECKING_ROWS, len(kept), passes=len(GRADE_COLUMNS) + 3)
    parsed, row_problems, bad_rows = _parse_rows(kept, listing, ticker)
    problems += row_problems
    per_knee = per_knee_films(parsed)
    twice, twice_problems = _listed_twice(parsed, per_knee)
    problems += twice_problems
    missing, file_problems = _file_problems(kept, checks, listing)
    problems += file_problems
    bad_images = set(twice) | set(missing)
    bad_images |= {f for f, c in checks.items() if not c.ok}
    # One row per knee: a film listed once, or once per knee of a bilateral film.
    knee_rows = parsed[(parsed["image"] != "") & ~parsed["image"].isin(twice)]
    knees = row_knees(knee_rows, checks, bad_images, per_knee)
    problems += knees.problems
    bad_rows |= knees.bad_rows
    bad_images |= knees.bad_images
    first_rows = knee_rows.drop_duplicates("image")
    pixel_out, pixel_problems = same_pixels(first_rows, checks, bad_images)
    problems += pixel_problems
    bad_images |= pixel_out
    near_out, near_problems = near_duplicates(first_rows, checks, bad_images)
    problems += near_problems
    bad_images |= near_out
    case_rows, case_problems = _patient_case(knee_rows)
    problems += case_problems
    bad_rows |= case_rows
    side_rows, side_problems = _laterality_conflicts(knee_rows, checks, per_knee, listing)
    problems += side_problems
    bad_rows |= side_rows
    problems += _patient_problems(knee_rows)
    good = knee_rows[~knee_rows["image"].isin(bad_images) & ~knee_rows.index.isin(bad_rows)]
    films = _films_frame(
        good, checks, knees.confidence, per_knee, with_split=listing.layout_split == "test"
    )
    films, id_problems = _same_id(films, good, per_knee)
    problems += id_problems
    problems += _rare_grade_problems(films)
    problems += _unlisted_problems(listing, kept)
    listed = list(dict.fromkeys(f for f in kept["image"] if f))
    registered = set(films["image"])
    left_out = tuple(f for f in listed if f not in registered)
    ticker.done()
    return Findings(problem_frame(problems), films, left_out)


def _short_row_problems(listing: Listing) -> list[Problem]:
    return [
        Problem.of(
            "bad_row",
            "",
            line,
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


def _parse_rows(
    rows: pd.DataFrame, listing: Listing, ticker: RowTicker
) -> tuple[pd.DataFrame, list[Problem], set]:
    """Grades as integers and sides as L/R; problems for every cell that is neither."""
    problems: list[Problem] = []
    bad: set[int] = set()
    parsed = rows.copy()
    from_folder = listing.layout == "grade_folders"
    for column in GRADE_COLUMNS:
        task = next(t for t in TASK_INFO.values() if t.column == column)
        values = []
        for i, raw in zip(rows.index, rows[column], strict=True):
            ticker.tick()
            grade, message = parse_grade(raw, task.top_grade)
            values.append(grade)
            if message:
                bad.add(i)
                where = " (its folder's name)" if from_folder else ""
                problems.append(
                    Problem.of(
                        "bad_grade",
                        rows.at[i, "image"],
                        row_number(rows.at[i, "row"]),
                        f"{column}={raw}{where} is not a {task.name} grade: {message}",
                        f"use a whole number 0 to {task.top_grade}"
                        + ("" if from_folder else ", or leave it empty"),
                    )
                )
        parsed[column] = pd.array(values, dtype="Int64")
    sides = []
    records = dict(zip(rows.index, rows.to_dict("records"), strict=True))
    for i, record in records.items():
        ticker.tick()
        side, problem = _side(record)
        sides.append(side or "")
        for found in (problem, _patient_conflict(record)):
            if found is not None:
                bad.add(i)
                problems.append(found)
    parsed["side"] = pd.Series(sides, index=parsed.index, dtype=object)  # plain strings
    boxes: dict[str, list[object]] = {c: [] for c in LABEL_BOX_COLUMNS}
    for i, record in records.items():
        ticker.tick()
        cells = [record.get(c, "") for c in LABEL_BOX_COLUMNS]
        box_problem = label_box_problem(cells)
        if box_problem:
            bad.add(i)
            problems.append(
                Problem.of(
                    "bad_box",
                    record["image"],
                    row_number(record["row"]),
                    box_problem,
                    "give the knee's box as four whole film pixels x0, y0, x1, y1 "
                    "(x1 > x0, y1 > y0), or leave all four empty",
                )
            )
        fine = not box_problem and str(cells[0]).strip() not in ("", "nan", "None")
        for column, cell in zip(LABEL_BOX_COLUMNS, cells, strict=True):
            boxes[column].append(int(float(str(cell))) if fine else None)
    for column in LABEL_BOX_COLUMNS:
        parsed[column] = pd.array(boxes[column], dtype="Int64")
    graded = parsed[list(GRADE_COLUMNS)].notna().any(axis=1)
    for i, record in records.items():
        ticker.tick()
        image, line = record["image"], row_number(record["row"])
        if not image:
            bad.add(i)
            what = "SOPInstanceUID" if listing.key == "sop_instance_uid" else "file"
            problems.append(
                Problem.of(
                    "no_file",
                    "",
                    line,
                    f"no {what} named in this row",
                    "name the film, or delete the row",
                )
            )
            continue
        for found in _hidden_problems(image, str(record["patient_id"]), line):
            bad.add(i)
            problems.append(found)
        if not str(record["patient_id"]).strip():
            bad.add(i)
            where = " (not in the CSV and no PatientID tag)" if listing.layout == "dicom" else ""
            problems.append(
                Problem.of(
                    "no_patient",
                    image,
                    line,
                    f"no patient id{where}",
                    "give every film its patient's id (both knees of a patient share it)",
                )
            )
        if not graded[i] and i not in bad:
            bad.add(i)
            problems.append(
                Problem.of(
                    "no_grade",
                    image,
                    line,
                    f"no grade: {' and '.join(GRADE_COLUMNS)} are all empty",
                    "give a grade, or delete the row",
                )
            )
    return parsed, problems, bad


def _hidden_problems(image: str, patient: str, line: int | None) -> list[Problem]:
    """A row whose film path or patient id holds control or bidirectional-control
    characters: either would be stored as an id that shows other than it is."""
    problems = []
    if hidden := hidden_characters(image):
        problems.append(
            Problem.of(
                "hidden_in_name",
                image,
                line,
                f"the film's path holds {', '.join(hidden)}, shown here escaped: {escaped(image)}",
            )
        )
    if hidden := hidden_characters(patient):
        problems.append(
            Problem.of(
                "hidden_in_id",
                image,
                line,
                f"patient id {escaped(patient)} holds {', '.join(hidden)}",
            )
        )
    return problems


def _side(row: dict) -> tuple[str | None, Problem | None]:
    image, line = row["image"], row_number(row["row"])
    try:
        side = normalise_side(row["side"])
    except ValueError:
        return None, Problem.of(
            "bad_side",
            image,
            line,
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
            return None, Problem.of(
                "side_conflict",
                image,
                line,
                f"side {written} in the CSV, but the film's laterality tag says {tag}",
                "correct the CSV's side (or the film's tag)",
            )
    return side, None


def _patient_conflict(row: dict) -> Problem | None:
    tag, written = row.get("tag_patient", ""), row.get("csv_patient", "")
    if not (tag and written) or tag == written:
        return None
    return Problem.of(
        "patient_conflict",
        row["image"],
        row_number(row["row"]),
        f"patient {written} in the CSV, but the film's PatientID tag says {tag}",
        "correct the CSV's patient_id (or the film's tag)",
    )


def _listed_twice(rows: pd.DataFrame, per_knee: set[str]) -> tuple[list[str], list[Problem]]:
    """Films listed in more than one (non-identical) row, other than once per knee (sides
    R and L): every row is named."""
    named = rows[
        (rows["image"] != "") & rows["image"].duplicated(keep=False) & ~rows["image"].isin(per_knee)
    ]
    groups = named.groupby("image", sort=False).groups
    twice, problems = [], []
    for image, index in groups.items():
        if len(index) < 2:
            continue
        twice.append(image)
        lines = [row_number(named.at[i, "row"]) for i in index]
        listed = ", ".join(str(n) for n in lines if n is not None)
        for i in index:
            problems.append(
                Problem.of(
                    "listed_twice",
                    image,
                    row_number(named.at[i, "row"]),
                    f"listed in {len(index)} rows ({listed}) with different cells",
                    "keep the one right row for this film; a film showing both knees is "
                    "listed once per knee: two rows of one patient, side R and side L",
                )
            )
    return twice, problems


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
            # Names the listing found missing are not resolved again (one lstat per folder
            # on the way, per name: half the time of a CSV of many missing films).
            missing_here = image in listing.missing
            refusal = None if missing_here else film_path_refusal(listing.root, image)
            if refusal is not None and refusal.kind != "missing_file":
                problems.append(Problem.of(refusal.kind, image, line, refusal.reason))
                continue  # a path out of the folder: named as such, never opened
            problems.append(
                Problem.of(
                    "missing_file",
                    image,
                    line,
                    "listed in the CSV but not in the folder"
                    + (f"; {listing.near_names[image]}" if image in listing.near_names else ""),
                    "write the name in the CSV exactly as the file's"
                    if image in listing.near_names
                    else "add the film to the folder, or correct or delete the row",
                )
            )
        elif not check.ok:
            problems.append(Problem.of(check.error_kind, image, line, check.error))
        else:
            problems += [Problem.of(kind, image, line, text) for kind, text in check.notes]
    if listing.layout == "dicom" and listing.key == "sop_instance_uid":
        for i in rows.index[(rows["image"] == "") & (rows["key"] != "")]:
            problems.append(
                Problem.of(
                    "missing_file",
                    str(rows.at[i, "key"]),
                    row_number(rows.at[i, "row"]),
                    "no DICOM file in the folder has this SOPInstanceUID",
                    "add the film to the folder, or correct or delete the row",
                )
            )
    return missing, problems


def _first_lines(rows: pd.DataFrame) -> list[tuple[str, int | None]]:
    named = rows[rows["image"] != ""].drop_duplicates("image")
    return [(img, row_number(line)) for img, line in zip(named["image"], named["row"], strict=True)]


def _same_id(
    films: pd.DataFrame, good: pd.DataFrame, per_knee: set[str]
) -> tuple[pd.DataFrame, list[Problem]]:
    """Good films whose image id is also a knee's id ('k_R.png' and the R knee of 'k.png'
    listed per knee): every one is named and left out."""
    knee_ids = set(films.loc[films["image"].isin(per_knee), "image_id"])
    clash = (films["image_id"].duplicated(keep=False) & films["image_id"].isin(knee_ids)).to_numpy()
    if not clash.any():
        return films, []
    problems = []
    rows = good["row"].to_numpy()
    for k in range(len(films)):
        if not clash[k]:
            continue
        image_id = films["image_id"].iat[k]
        others = [f for f in films.loc[films["image_id"] == image_id, "image"] if f]
        problems.append(
            Problem.of(
                "same_id",
                films["image"].iat[k],
                row_number(rows[k]),
                f"its image id {image_id!r} is also that of {', '.join(others)}",
                "rename one of the films (ids are paths without the film extension, "
                "_R / _L added for a film listed once per knee)",
            )
        )
    return films[~clash].reset_index(drop=True), problems


def _patient_case(rows: pd.DataFrame) -> tuple[set[int], list[Problem]]:
    """Rows whose patient id differs from another row's only in case ('Pcase01' and
    'PCASE01'): one patient written two ways would be split as two."""
    ids = rows["patient_id"].astype(str).str.strip()
    spellings: dict[str, set[str]] = defaultdict(set)
    for value in ids:
        if value:
            spellings[value.casefold()].add(value)
    clashing = {k: sorted(v) for k, v in spellings.items() if len(v) > 1}
    if not clashing:
        return set(), []
    bad, problems = set(), []
    for i, value in zip(rows.index, ids, strict=True):
        written = clashing.get(value.casefold())
        if not written or not value:
            continue
        bad.add(i)
        problems.append(
            Problem.of(
                "patient_case",
                rows.at[i, "image"],
                row_number(rows.at[i, "row"]),
                f"patient {value}: the CSV also writes "
                f"{', '.join(w for w in written if w != value)}, which differs only in case",
            )
        )
    return bad, problems


def _laterality_conflicts(
    rows: pd.DataFrame, checks: dict[str, FilmCheck], per_knee: set[str], listing: Listing
) -> tuple[set[int], list[Problem]]:
    """Rows whose side contradicts their DICOM film's ImageLaterality (R or L), in every
    layout (the DICOM layout resolves tags against the CSV itself: `resolve_dicom`)."""
    if listing.layout == "dicom":
        return set(), []
    bad, problems = set(), []
    for i, image, side in zip(rows.index, rows["image"], rows["side"], strict=True):
        check = checks.get(image)
        tag = check.laterality_tag if check is not None else ""
        if tag not in ("R", "L") or not side or side == tag or image in per_knee:
            continue
        bad.add(i)
        problems.append(
            Problem.of(
                "side_conflict",
                image,
                row_number(rows.at[i, "row"]),
                f"side {side} in the CSV, but the film's laterality tag says {tag}",
                "correct the CSV's side (or the film's tag)",
            )
        )
    return bad, problems


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
            f"{img}" + (f" (row {row_number(line)})" if row_number(line) is not None else "")
            for img, line in zip(group["image"], group["row"], strict=True)
        )
        what = (
            f"patient {patient} has {len(group)} films: {where}; a patient has at most two knees"
            if len(group) > 2
            else f"patient {patient} has two {repeated[0]} knees: {where}"
        )
        for img, line in zip(group["image"], group["row"], strict=True):
            problems.append(
                Problem.of(
                    "too_many_knees",
                    img,
                    row_number(line),
                    what,
                    "check the patient ids and sides (the films stay together in one split)",
                )
            )
    return problems


def _films_frame(
    good: pd.DataFrame,
    checks: dict[str, FilmCheck],
    confidence: dict[int, float | None],
    per_knee: set[str],
    *,
    with_split: bool,
) -> pd.DataFrame:
    """The good rows, one per image (a film, or one knee of a film listed per knee); box
    columns only when some row gives a box."""
    ids = [
        knee_image_id(f, s) if f in per_knee else image_id_for(f)
        for f, s in zip(good["image"], good["side"], strict=True)
    ]
    films = pd.DataFrame(
        {
            "image": good["image"].astype(str),
            "image_id": pd.Series(ids, index=good.index, dtype=object).astype(str),
            "patient_id": good["patient_id"].astype(str),
            "side": good["side"].astype(str),
            **{c: good[c].astype("Int64") for c in GRADE_COLUMNS},
            "width_px": [checks[f].width_px for f in good["image"]],
            "height_px": [checks[f].height_px for f in good["image"]],
            "knee_confidence": [confidence.get(i) for i in good.index],
            "pixels_hash": [checks[f].pixels_hash for f in good["image"]],
        }
    ).reset_index(drop=True)
    films["knee_confidence"] = films["knee_confidence"].astype("Float64")
    if with_split:
        films[GIVEN_SPLIT] = good[GIVEN_SPLIT].astype(str).to_numpy()
    if good[LABEL_BOX_COLUMNS[0]].notna().any():
        for column in LABEL_BOX_COLUMNS:
            films[column] = good[column].astype("Int64").to_numpy()
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
                Problem.of(
                    "rare_grade",
                    "",
                    None,
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
        Problem.of(
            "unlisted",
            f,
            None,
            "in the folder but no row of the CSV lists it; it is not imported",
            "add a row for it if it should be imported",
        )
        for f in unlisted
    ]
