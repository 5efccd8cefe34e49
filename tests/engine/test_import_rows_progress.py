"""Progress while a labels CSV's rows are read and checked: a large CSV takes seconds before
and after its films are decoded, and the CLI's line and the page's bar show it move."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from engine.films import CHECKING_ROWS, PARSING_CSV, READING_ROWS, check_import
from engine.films.progress import PARSE_PROGRESS_FROM
from jobs.cli.import_command import ProgressLine
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


# -- issue 31: the parse of a large labels CSV says itself from its first byte -----------------

N_LARGE = 12_000


@pytest.fixture(scope="module")
def large_csv_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A labels CSV over `PARSE_PROGRESS_FROM` bytes (long nested names; no films behind)."""
    folder = tmp_path_factory.mktemp("large-csv")
    deep = "site-north/scanner-b/2024-acquisition-batch/knee-radiographs-bilateral-standing"
    lines = ["image,patient_id,side,kl,cppd"]
    lines += [f"{deep}/film{i:06d}.png,P{i:06d},R,{i % 5},{i % 4}" for i in range(N_LARGE)]
    (folder / "labels.csv").write_text("\n".join(lines) + "\n")
    assert (folder / "labels.csv").stat().st_size >= PARSE_PROGRESS_FROM
    return folder


def test_a_large_csv_says_its_parse_from_the_start_in_bytes(large_csv_folder):
    size = (large_csv_folder / "labels.csv").stat().st_size
    calls: list[tuple] = []
    check_import(
        large_csv_folder,
        detect=False,
        workers=1,
        rows_progress=lambda phase, done, total: calls.append((phase, done, total)),
    )
    # The first word comes before any row is parsed: nothing of the file read yet.
    assert calls[0] == (PARSING_CSV, 0, size)
    parsing = [c for c in calls if c[0] == PARSING_CSV]
    done = [c[1] for c in parsing]
    # Steps while the parse is under way (bytes short of the file), then the whole file once.
    midway = [d for d in done if 0 < d < size]
    assert len(midway) >= 3 and done == sorted(done) and done.count(size) == 1
    assert all(c[2] == size for c in parsing)
    # The parse ends before the rows are read, which count rows again.
    phases = [c[0] for c in calls]
    last_parsing = max(i for i, p in enumerate(phases) if p == PARSING_CSV)
    assert last_parsing < phases.index(READING_ROWS)
    assert [c for c in calls if c[0] == READING_ROWS][-1] == (READING_ROWS, N_LARGE, N_LARGE)


def test_a_small_csv_parses_without_a_line_of_its_own(big_csv_folder):
    calls: list[str] = []
    check_import(
        big_csv_folder, detect=False, workers=1, rows_progress=lambda *c: calls.append(c[0])
    )
    assert calls and PARSING_CSV not in calls


def test_import_check_prints_the_parse_in_megabytes_first(large_csv_folder, home, capsys):
    mb = (large_csv_folder / "labels.csv").stat().st_size / 1e6
    assert main(["import", str(large_csv_folder), "--check", "--workers", "1"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"parsing the labels CSV: 0.0/{mb:.1f} MB"
    assert err.index(f"parsing the labels CSV: {mb:.1f}/{mb:.1f} MB") < err.index(
        f"reading the labels: {N_LARGE}/{N_LARGE} rows"
    )


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_an_open_terminal_line_is_ended_before_an_error_is_printed():
    terminal = _Terminal()
    line = ProgressLine(terminal)
    line.rows(PARSING_CSV, 0, 3_700_000)
    assert terminal.getvalue() == "\rparsing the labels CSV: 0.0/3.7 MB"
    line.end()  # the CSV was over the row cap: the error goes on the next line
    line.end()  # only once
    assert terminal.getvalue() == "\rparsing the labels CSV: 0.0/3.7 MB\n"


def test_the_page_bar_words_the_parse_in_megabytes():
    shown: list[tuple[float, str]] = []
    throttle = ProgressThrottle(lambda f, text: shown.append((f, text)), every_s=60)
    throttle.rows(PARSING_CSV, 0, 3_700_000)
    throttle.rows(PARSING_CSV, 3_700_000, 3_700_000)
    assert shown == [
        (0.0, "Parsing the labels CSV: 0.0 of 3.7 MB"),
        (1.0, "Parsing the labels CSV: 3.7 of 3.7 MB"),
    ]
