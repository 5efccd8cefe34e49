"""`python -m jobs report`: the report written by a child process, and one clear line (exit 2,
no traceback) for bad input."""

from __future__ import annotations

import pytest

from store.db import init_schema
from tests.helpers.studies import run_jobs_cli
from tests.helpers.synthetic_study import write_synthetic_study

pytestmark = pytest.mark.slow  # each test starts `python -m jobs` (the fast tier's bad input
# is tests/app/test_report.py's, in-process)


@pytest.fixture
def home_with_study(tmp_path):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    return tmp_path, write_synthetic_study(store, n_seeds=3, n_patients=20)


def _refused(done, *words: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in done.stderr


def test_report_refuses_an_unknown_study_naming_it(home_with_study):
    home, study = home_with_study
    _refused(
        run_jobs_cli(home, "report", study, "study-nope", "-o", str(home / "r.html")),
        "study-nope",
        "stats --list",
    )
    assert not (home / "r.html").exists()


def test_report_refuses_no_study(home_with_study):
    home, _ = home_with_study
    _refused(run_jobs_cli(home, "report", "-o", str(home / "r.html")), "at least one study")


def test_report_refuses_an_output_it_cannot_write(home_with_study):
    home, study = home_with_study
    _refused(run_jobs_cli(home, "report", study, "-o", str(home / "none" / "r.html")), "no folder")
    _refused(run_jobs_cli(home, "report", study, "-o", str(home / "r.pdf")), ".html")
    (home / "taken.html").mkdir()  # a folder where the file should go
    _refused(run_jobs_cli(home, "report", study, "-o", str(home / "taken.html")), "is a folder")


def test_report_on_a_damaged_store_says_so_in_one_line(tmp_path):
    (tmp_path / "softgrade.duckdb").write_bytes(b"not a DuckDB file, " * 1000)
    _refused(
        run_jobs_cli(tmp_path, "report", "study-any", "-o", str(tmp_path / "r.html")),
        "cannot be opened",
        "Restore a backup",
    )
    assert not (tmp_path / "r.html").exists()


def test_report_writes_one_html_file_from_any_folder(home_with_study, tmp_path_factory):
    home, study = home_with_study
    out = tmp_path_factory.mktemp("elsewhere") / "report.html"
    done = run_jobs_cli(home, "report", study, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert f"report written to {out}" in done.stdout
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>") and study in text
