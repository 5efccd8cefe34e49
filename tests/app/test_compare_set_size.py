"""Compare and the report offer the conformal set size among the metrics they compare,
computed from each run's validation and test films, and say so in one line where a study has
no validation films."""

from __future__ import annotations

import pytest

from engine.analysis.metrics import SET_SIZE, get_metric
from jobs.services.report_inputs import gather_report_inputs
from pages.present import tables
from pages.present.report import intervals
from store.db import connect
from tests.helpers.pages import make_store, run_page, texts
from tests.helpers.synthetic_study import write_synthetic_study


# Each renders the whole Compare page twice or more: over the fast tier's ~2 s of CPU.
@pytest.mark.slow
def test_the_statistics_tab_compares_methods_on_set_size(home, monkeypatch):
    make_store(home)
    at = run_page(home, monkeypatch)
    picker = at.selectbox(key="compare_stats_metric")
    label = get_metric(SET_SIZE).label
    assert f"{label} (lower is better)" in picker.options
    picker.set_value(SET_SIZE).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "90 % coverage" in texts(at, "caption")  # its coverage stated beside it
    assert f"{label} over CPPD and KL" in texts(at, "subheader")
    # The violins offer it too, drawn from the same per-run values.
    at.selectbox(key="compare_metric").set_value(SET_SIZE).run()
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.slow
def test_set_size_without_validation_films_is_said_not_available(home, monkeypatch):
    make_store(home)
    with connect(home / "softgrade.duckdb") as con:
        con.execute("DELETE FROM predictions WHERE split = 'val'")
    at = run_page(home, monkeypatch)
    at.selectbox(key="compare_stats_metric").set_value(SET_SIZE).run()
    assert not at.exception, [e.value for e in at.exception]
    said = [i for i in texts(at, "info").split("\n") if "not available" in i]
    assert said and "validation predictions" in said[0]


@pytest.mark.slow  # builds the report's Table 4 (its charting imports): over ~2 s of CPU
def test_the_reports_table_4_gives_set_size_a_column_and_says_its_coverage(store):
    study = write_synthetic_study(store, n_seeds=3, n_patients=60)
    html = "".join(intervals.table4_section(gather_report_inputs([study], path=store, n_boot=0)))
    assert f"<th>{tables.metric_header(SET_SIZE)}</th>" in html
    assert "90 % coverage" in html
    with connect(store) as con:
        con.execute("DELETE FROM predictions WHERE split = 'val'")
    without = "".join(intervals.table4_section(gather_report_inputs([study], path=store, n_boot=0)))
    assert tables.metric_header(SET_SIZE) not in without  # no column of blanks
