"""The report of the bundled 20-seed reference study reads as a PI needs it (issue 31): the
films said to be synthetic, the endpoint's result in words, no raw identifiers in any table
(the imported card's included), intervals within their metric's range, pooled seeds said."""

from __future__ import annotations

import re
from html import unescape

import pytest

from jobs.services.report_inputs import gather_report_inputs
from pages.present import report
from store.bundle import REFERENCE_STUDY, import_study
from store.db import init_schema
from tests.helpers.reports import SNAKE_CASE, table_cells


@pytest.fixture(scope="module")
def reference_html(tmp_path_factory):
    store = tmp_path_factory.mktemp("ref_report") / "ref.duckdb"
    init_schema(store)
    study = import_study(REFERENCE_STUDY, path=store).study_id
    inputs = gather_report_inputs([study], path=store, n_boot=50)  # its size is not under test
    return unescape(report.build_report(inputs))


def test_no_table_of_the_reference_report_shows_a_raw_identifier(reference_html):
    cells = table_cells(reference_html)
    assert [c for c in cells if SNAKE_CASE.search(c)] == []
    assert "False" not in cells and "True" not in cells


def test_the_reference_report_says_its_films_are_synthetic(reference_html):
    caveats = reference_html[reference_html.index('id="caveats"') :]
    assert "all 2,170 films are synthetic" in caveats
    assert "Nominal 3, Binomial 6, Beta 6, Triangular 15, Exponential 15" in caveats
    assert "in none of the 8 comparisons" in caveats  # scored against the true grade
    assert "2,170 synthetic knee films" in reference_html[reference_html.index('id="methods"') :]


def test_the_reference_endpoint_reads_none_of_eight_in_words(reference_html):
    assert "Result: none of the 8 primary comparisons is significant after Holm" in reference_html


def test_the_reference_table4_keeps_minimum_sensitivity_at_or_above_zero(reference_html):
    table4 = reference_html[
        reference_html.index('id="table4"') : reference_html.index('id="paired"')
    ]
    assert "0.069 [0.000, 0.217]" in table4
    assert not re.search(r"\[-\d", table4)
    assert "KL Nominal MS: [−0.079, 0.217]" in table4  # the interval as computed, said


def test_the_reference_card_explains_its_import_and_its_parts(reference_html):
    studies = reference_html[: reference_html.index('id="caveats"')]
    assert "imported from a bundle: 1800 runs of 20 seeds stored" in studies
    assert "succeeded, 1800/1800" not in studies
    assert "seeds 0-12: its job ended cancelled after storing 1238 runs" in studies
    assert "the bundle keeps the 1170 runs of seeds 0-12 (the other 68" in studies


def test_the_reference_reliability_diagram_says_it_pools_twenty_seeds(reference_html):
    section = reference_html[reference_html.index('id="reliability"') :]
    assert "Films, 20 seeds pooled" in section
    assert "CPPD: 13,012 predictions per method, 20 seeds" in section
