"""The import's page-side view: typed paths, the one problems table, blockers, progress."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest

from engine.films import PROBLEM_COLUMNS, ImportReport
from pages.present.import_view import (
    ImportRequest,
    ProgressThrottle,
    detector_text,
    import_blocker,
    left_out_films,
    left_out_text,
    problems_csv,
    problems_cut_text,
    problems_shown,
    problems_table,
    resolve_import_path,
)

PROBLEMS = pd.DataFrame(
    [
        ("empty.png", 3, "error", "empty_file", "empty file (0 bytes)", "export it again"),
        ("odd.png", 5, "warning", "low_confidence", "knee found with low confidence", "look"),
        ("", None, "warning", "rare_grade", "KL grade 4: 2 good films", "add films"),
    ],
    columns=list(PROBLEM_COLUMNS),
)
REQUEST = ImportRequest("/data/knees", "", "auto", "ignore")


def _report(problems: pd.DataFrame = PROBLEMS, n_good: int = 10) -> ImportReport:
    films = pd.DataFrame({"image": [f"{i}.png" for i in range(n_good)]})
    return ImportReport(Path("/data/knees"), "csv", None, None, problems, films, 12, 12)


def test_a_typed_path_is_trimmed_and_expanded_and_an_empty_one_refused():
    assert resolve_import_path("  ~/knees ") == Path.home() / "knees"
    with pytest.raises(ValueError, match="give a path"):
        resolve_import_path("   ")


@pytest.mark.parametrize("row_column", ["row", "csv_row"])
def test_the_problems_table_reads_a_report_or_the_store(row_column):
    table = problems_table(PROBLEMS.rename(columns={"row": row_column}))
    assert list(table.columns) == ["file", "row", "severity", "problem", "what to do"]
    assert table["file"].iloc[2] == "(the whole dataset)"
    assert table["row"].tolist() == ["3", "5", ""]


def test_names_and_cells_with_control_characters_are_shown_escaped():
    hostile = pd.DataFrame(
        [("knee\u202egnp.png", 2, "error", "hidden_in_id", "patient id p\x1b[2J", "write \x00")],
        columns=list(PROBLEM_COLUMNS),
    )
    table = problems_table(hostile)
    assert table.iloc[0].tolist()[0] == "knee\\u202egnp.png"
    assert table["problem"].iloc[0] == "patient id p\\x1b[2J"
    assert table["what to do"].iloc[0] == "write \\x00"
    assert "\\u202e" in left_out_text(["knee\u202egnp.png"]) and "\u202e" not in left_out_text(
        ["knee\u202egnp.png"]
    )


def test_a_long_report_shows_its_errors_first_up_to_the_limit_and_says_where_the_rest_are():
    warnings = [(f"w{i}.png", i, "warning", "low_confidence", "low", "look") for i in range(8)]
    errors = [(f"e{i}.png", 100 + i, "error", "empty_file", "empty", "export") for i in range(3)]
    problems = pd.DataFrame(warnings + errors, columns=list(PROBLEM_COLUMNS))

    shown = problems_shown(problems, limit=5)

    assert shown["file"].tolist() == ["e0.png", "e1.png", "e2.png", "w0.png", "w1.png"]
    assert problems_cut_text(len(problems), limit=5).startswith("The table shows the first 5 of 11")
    assert problems_cut_text(5, limit=5) is None
    csv = pd.read_csv(io.StringIO(problems_csv(problems)))
    assert len(csv) == 11  # the CSV holds every problem


def test_the_report_csv_cannot_smuggle_a_formula_into_a_spreadsheet():
    hostile = pd.DataFrame(
        [("=cmd()|x.png", 2, "error", "empty_file", "+SUM(A1)", "@run")],
        columns=list(PROBLEM_COLUMNS),
    )
    row = pd.read_csv(io.StringIO(problems_csv(hostile))).iloc[0]
    assert not any(str(cell).startswith(("=", "+", "@")) for cell in row)


def test_films_left_out_are_those_with_an_error():
    assert left_out_films(PROBLEMS) == ["empty.png"]


def test_the_detector_is_named_with_its_held_out_scores():
    assert detector_text("classical").startswith("the classical detector")
    assert detector_text("abc123", 0.912, 0.85) == (
        "the trained YOLOv8n detector abc123 (held-out mean IoU 0.912, mAP50 0.850)"
    )
    assert "not recorded" in detector_text(None)


@pytest.mark.parametrize(
    ("state", "request_", "expected"),
    [
        (None, ImportRequest("", "", "auto", "ignore"), "give the folder"),
        (None, REQUEST, "check the folder first"),
        ({"request": ImportRequest("/x", "", "auto", "ignore")}, REQUEST, "changed since"),
        ({"request": REQUEST, "report": None, "error": "no"}, REQUEST, "could not be read"),
        ({"request": REQUEST, "report": _report()}, REQUEST, "1 error(s) left"),
        ({"request": REQUEST, "report": _report(PROBLEMS.iloc[1:])}, REQUEST, "register the 10"),
        ({"request": REQUEST, "report": _report(n_good=0)}, REQUEST, "no film of this folder"),
        ({"request": REQUEST, "report": _report(), "registered": {"d": 1}}, REQUEST, None),
    ],
)
def test_what_blocks_queueing_until_the_films_are_registered(state, request_, expected):
    blocker = import_blocker(state, request_)
    assert blocker is None if expected is None else expected in blocker


def test_progress_is_shown_at_most_every_interval_and_always_at_the_end():
    shown = []
    throttle = ProgressThrottle(lambda f, text: shown.append((f, text)), every_s=60)
    for done in range(1, 11):
        throttle(done, 10, 5.0)
    assert shown == [
        (0.1, "Checked 1 of 10 films (5 films/s)"),
        (1.0, "Checked 10 of 10 films (5 films/s)"),
    ]


def test_films_left_out_are_named_up_to_a_limit():
    assert left_out_text(["a.png", "b.png"]) == "Left out: `a.png`, `b.png`."
    assert left_out_text([f"{i}.png" for i in range(5)], shown=2).endswith("and 3 more.")


def test_a_typed_path_outside_the_data_roots_is_refused_naming_them(tmp_path, monkeypatch):
    root = tmp_path / "films"
    (root / "knees").mkdir(parents=True)
    monkeypatch.setenv("SOFTGRADE_DATA_ROOTS", str(root))
    assert resolve_import_path(f"{root}/knees") == (root / "knees").resolve()
    with pytest.raises(ValueError, match="outside the folders films may be imported from"):
        resolve_import_path(f"{root}/../elsewhere")
