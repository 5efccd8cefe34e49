"""Progress while a labels CSV's rows are read and checked: a large CSV takes seconds before
and after its films are decoded, and the CLI's line and the page's bar show it move."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.films import CHECKING_ROWS, READING_ROWS, check_import
from jobs.cli.main import main
from pages.present.import_view import ProgressThrottle
from tests.helpers.films import phantom_film, png_bytes

N_ROWS = 3000
N_FILMS = 3


@pytest.fixture(scope="module")
def big_csv_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of a few films and a labels CSV of 3000 rows (the rest name no file)."""
    folder = tmp_path_factory.mktemp("big-csv")
    for i in range(N_FILMS):
        (folder / f"film{i:05d}.png").write_bytes(png_bytes(phantom_film(index=i)))
    lines = ["image,patient_id,side,kl,cppd"]
    lines += [f"film{i:05d}.png,P{i // 2:05d},{'RL'[i % 2]},{i % 5},{i % 4}" for i in range(N_ROWS)]
    (folder / "labels.csv").write_text("\n".join(lines) + "\n")
    return folder


def test_the_rows_phases_report_progress_before_and_after_the_films(big_csv_folder):
    calls: list[tuple] = []
    report = check_import(
        big_csv_folder,
        detect=False,
        workers=1,
        progress=lambda done, total, rate: calls.append(("films", done, total)),
        rows_progress=lambda phase, done, total: calls.append((phase, done, total)),
    )
    assert report.n_rows == N_ROWS
    phases = [c[0] for c in calls]
    reading = [c for c in calls if c[0] == READING_ROWS]
    checking = [c for c in calls if c[0] == CHECKING_ROWS]
    # Several steps in each rows phase, rising to every row; never past it.
    for steps in (reading, checking):
        done = [c[1] for c in steps]
        assert len(steps) >= 3 and done == sorted(done) and done[-1] == N_ROWS
        assert done.count(N_ROWS) == 1  # every row said once, at the end
        assert all(c[2] == N_ROWS for c in steps) and 0 < done[0] < N_ROWS
    # Reading the labels comes before the films are decoded, checking the rows after.
    last_reading = max(i for i, p in enumerate(phases) if p == READING_ROWS)
    first_film = phases.index("films")
    first_checking = phases.index(CHECKING_ROWS)
    assert last_reading < first_film < first_checking


def test_import_check_prints_each_rows_phase(big_csv_folder, home, capsys):
    assert main(["import", str(big_csv_folder), "--check", "--workers", "1"]) == 1
    err = capsys.readouterr().err
    assert f"reading the labels: {N_ROWS}/{N_ROWS} rows" in err
    assert f"checking the rows: {N_ROWS}/{N_ROWS} rows" in err


def test_the_page_bar_words_the_rows_phase_and_shares_the_films_throttle():
    shown: list[tuple[float, str]] = []
    throttle = ProgressThrottle(lambda f, text: shown.append((f, text)), every_s=60)
    for done in (1000, 2000, 3000):
        throttle.rows(READING_ROWS, done, 3000)
    throttle(1, 2, 4.0)  # a film right after: within the interval, not shown
    assert shown == [
        (1000 / 3000, "Reading the labels: 1,000 of 3,000 rows"),
        (1.0, "Reading the labels: 3,000 of 3,000 rows"),
    ]
