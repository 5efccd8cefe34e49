"""Copies among a listing's films: the same decoded pixels under two names, and films that
look alike (a re-export, a rescaled copy) under two patients, each a leak between splits or
a contradiction. Part of the import check (`engine.films.rows.find_problems`)."""

from __future__ import annotations

from collections import defaultdict

import pandas as pd

from engine.films.inspection import FilmCheck
from engine.films.layouts import GRADE_COLUMNS
from engine.films.looks import HASH_BITS, near_pairs
from engine.films.problems import Problem, row_number


def same_pixels(
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
                Problem.of(
                    "same_pixels",
                    f,
                    row_number(info.at[f, "row"]),
                    f"same pixels as {others}, and this is patient {info.at[f, 'patient_id']}: "
                    f"{what}",
                    "keep one copy under its true patient and grades, delete the others",
                )
            )
    return out, problems


def near_duplicates(
    first_rows: pd.DataFrame, checks: dict[str, FilmCheck], bad: set[str]
) -> tuple[set[str], list[Problem]]:
    """Listed films that look alike (`engine.films.looks`: a JPEG re-export, a rescaled copy)
    under different patients: a leak between splits the exact-pixel hash misses. Both are
    named and left out (whose film it is is unknown). Pairs of identical pixels are
    `same_pixels`' to name; one patient's look-alikes stay (its films share a split)."""
    info = first_rows.set_index("image")
    hashes = {
        image: checks[image].look_hash
        for image in info.index
        if image in checks and checks[image].look_hash and image not in bad
    }
    out: set[str] = set()
    problems = []
    for a, b, bits in near_pairs(hashes):
        pa, pb = str(info.at[a, "patient_id"]), str(info.at[b, "patient_id"])
        if pa == pb or checks[a].pixels_hash == checks[b].pixels_hash:
            continue
        out |= {a, b}
        for f, o, po, pf in ((a, b, pb, pa), (b, a, pa, pb)):
            problems.append(
                Problem.of(
                    "near_duplicate",
                    f,
                    row_number(info.at[f, "row"]),
                    f"looks like {o} (patient {po}; {bits} of {HASH_BITS} hash bits differ: "
                    f"the same film re-exported or rescaled), and this is patient {pf}: a "
                    "leak between splits",
                )
            )
    return out, problems
