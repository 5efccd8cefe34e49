"""A metric added by plug-in (``SOFTGRADE_METRIC_PACKAGES``): found, refused when malformed,
and seen by `softgrade metrics`, stats, Compare and the report (docs/add-a-metric.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from engine import plugins
from engine.analysis import metrics
from engine.analysis.metric_base import Metric
from tests.helpers.metric_plugin import exact_agreement

PLUGIN = "tests.helpers.metric_plugin"
ROOT = Path(__file__).resolve().parents[2]


def test_the_variable_names_packages_comma_separated_blanks_ignored():
    environ = {metrics.PLUGIN_VARIABLE: " a.b , ,c "}
    assert plugins.plugin_package_names(metrics.PLUGIN_VARIABLE, environ) == ["a.b", "c"]
    assert plugins.plugin_package_names(metrics.PLUGIN_VARIABLE, {}) == []


def test_a_plugin_package_metric_is_found_by_its_module():
    found = plugins.discover_records([PLUGIN], "METRIC", Metric)
    assert found == [(exact_agreement.__name__, exact_agreement.METRIC)]


def test_the_registry_adds_plugin_metrics_after_the_built_in_ones(monkeypatch):
    monkeypatch.setenv(metrics.PLUGIN_VARIABLE, PLUGIN)
    registry = metrics._with_plugins(metrics._METRICS)
    assert list(registry) == [*metrics.REGISTRY, exact_agreement.NAME]


def test_a_plugin_metric_named_like_another_is_refused(monkeypatch):
    monkeypatch.setenv(metrics.PLUGIN_VARIABLE, f"{PLUGIN},{PLUGIN}")
    with pytest.raises(ValueError, match=f"'{exact_agreement.NAME}' is defined twice"):
        metrics._with_plugins(metrics._METRICS)


def test_a_plugin_whose_metric_is_not_a_record_is_refused(monkeypatch):
    module = types.ModuleType("lab_metric_typo")
    module.METRIC = {"name": "typo"}  # a dict, not a Metric
    monkeypatch.setitem(sys.modules, module.__name__, module)
    with pytest.raises(TypeError, match="lab_metric_typo.METRIC is a dict, not a Metric"):
        plugins.discover_records([module.__name__], "METRIC", Metric)


@pytest.mark.slow  # a pytest process of its own: the registry is read once per process
def test_a_plugin_metric_reaches_the_cli_stats_compare_and_report():
    env = {**os.environ, metrics.PLUGIN_VARIABLE: PLUGIN}
    checks = "tests/helpers/metric_plugin_views.py"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", checks, "-q", "-p", "no:cacheprovider", "-o", "addopts="],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "5 passed" in done.stdout
