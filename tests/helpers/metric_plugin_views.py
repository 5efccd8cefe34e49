"""What a plug-in metric reaches, checked in a process started with the plug-in named.

Not collected by default (no ``test_`` prefix): tests/engine/test_metric_plugins.py runs it
with ``SOFTGRADE_METRIC_PACKAGES=tests.helpers.metric_plugin`` in a pytest process of its own,
because the registry is read once per process, when engine.analysis.metrics is imported.
"""

from __future__ import annotations

import json

import pytest

from engine.analysis import metrics
from tests.helpers.cli import run_cli
from tests.helpers.metric_plugin.exact_agreement import METRIC
from tests.helpers.pages import make_store, run_page


@pytest.fixture
def study(home) -> str:
    """A synthetic study with per-film predictions (no training)."""
    return make_store(home)


def test_the_plugin_metric_is_registered_after_the_built_in_ones():
    assert metrics.get_metric(METRIC.name) is METRIC
    assert list(metrics.REGISTRY)[-1] == METRIC.name
    assert METRIC.name in metrics.METRICS


def test_softgrade_metrics_lists_the_plugin_metric(home):
    listed = run_cli(home, "metrics", "--json")
    assert listed.returncode == 0, listed.stderr
    records = {record["name"]: record for record in json.loads(listed.stdout)}
    assert records[METRIC.name]["label"] == METRIC.label
    assert METRIC.meaning in run_cli(home, "metrics").stdout


def test_stats_compares_methods_on_the_plugin_metric(home, study):
    stats = run_cli(home, "stats", study, "--metric", METRIC.name, "--bootstrap", "0")
    assert stats.returncode == 0, stats.stderr
    table = stats.stdout.split("\n\n", 1)[0].splitlines()
    assert table[0].split()[:4] == ["task", "metric", "method_a", "method_b"]
    assert {row.split()[1] for row in table[1:]} == {METRIC.name}  # a row per task


def test_compare_offers_the_plugin_metric_and_draws_it(home, study, monkeypatch):
    # Table 4 keeps the paper's six columns; the metric picker offers every registered one.
    at = run_page(home, monkeypatch)
    picker = at.selectbox(key="compare_metric")
    assert f"{METRIC.label} (higher is better)" in picker.options
    picker.set_value(METRIC.name).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.get("vega_lite_chart")


def test_the_report_tables_the_plugin_metric(home, study, tmp_path):
    report = tmp_path / "report.html"
    made = run_cli(home, "report", study, "-o", str(report))
    assert made.returncode == 0, made.stderr
    assert f"<th>{METRIC.label} ↑</th>" in report.read_text()  # a column of its own
