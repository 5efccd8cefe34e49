"""`softgrade report --pdf` on the bundled reference study: the printed tables keep their
verdict columns (a 20-column table used to run past the page edge, cut with no sign)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from engine.analysis.table_columns import ENDPOINT, PAIRED
from jobs.cli.report_command import find_chromium
from store.bundle import REFERENCE_STUDY, import_study
from store.db import init_schema
from tests.helpers.studies import run_jobs_cli

pytestmark = [
    pytest.mark.slow,  # starts `python -m jobs` and headless Chromium
    pytest.mark.skipif(
        find_chromium() is None or shutil.which("pdftotext") is None,
        reason="needs Chromium and pdftotext (poppler-utils)",
    ),
]


@pytest.fixture(scope="module")
def pdf_text(tmp_path_factory) -> str:
    home = tmp_path_factory.mktemp("pdf")
    store = home / "softgrade.duckdb"
    init_schema(store)
    study = import_study(REFERENCE_STUDY, path=store).study_id
    done = run_jobs_cli(home, "report", study, "-o", str(home / "r.html"), "--pdf")
    assert done.returncode == 0, done.stderr
    text = subprocess.run(
        ["pdftotext", "-layout", str(home / "r.pdf"), "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return text


def test_the_reference_pdf_prints_inconclusive_in_a_table_row(pdf_text):
    # A primary-endpoint row: task, method, seeds, mean, interval, then the verdict.
    row = re.compile(r"^\s*(KL|CPPD)\s+Binomial\s+20\s+-?\d\.\d+\s+\[.*\]\s+inconclusive\b", re.M)
    assert row.search(pdf_text), pdf_text[:3000]


def test_the_reference_pdf_keeps_every_tables_last_columns(pdf_text):
    # The last columns of the endpoint's two tables and of the KLD pairs print: nothing cut.
    # A long header wraps in print ("Significant after" over "Holm"), so its first words are
    # looked for, and every endpoint row must end in that column's yes or no.
    significant = ENDPOINT.column("significant").header
    for header in (
        " ".join(significant.split()[:2]),
        PAIRED.column("p_tost").header,
        PAIRED.column("p_corrected_holm").header,
    ):
        assert header in pdf_text, header
    row = re.compile(r"^\s*(KL|CPPD)\s+\w+\s+20\s+\S+\s+\[.*\]\s+\w+\s+\S+\s+(yes|no)\s*$", re.M)
    assert len(row.findall(pdf_text)) == 8, pdf_text[:3000]  # 4 methods x 2 tasks
    assert "Appendix: every other pair of methods" in pdf_text
