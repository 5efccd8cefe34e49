"""The study report's inputs (`jobs.services.report_inputs`): one frozen record per report,
gathered from a real store once, each study in the order named; the budget-matched check
gathered only where the report's caveat asks for it; bad studies refused in one line."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from engine.analysis import budget, paired
from engine.analysis.metrics import METRICS, STATS_METRICS
from jobs.services.report_inputs import gather_report_inputs
from jobs.services.report_record import ReportInputError
from store.db import init_schema
from tests.helpers.synthetic_study import write_synthetic_study


@pytest.fixture(scope="module")
def two_studies(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    store = tmp_path_factory.mktemp("report_inputs") / "softgrade.duckdb"
    init_schema(store)
    first = write_synthetic_study(store, n_seeds=2, n_patients=20, seed=0)
    second = write_synthetic_study(store, n_seeds=2, n_patients=20, seed=1)
    return store, first, second


# Gathering a study's report inputs runs every statistic the report shows (~1.5 s of CPU for
# a tiny study): over the fast tier's ~2 s per test.
@pytest.mark.slow
def test_the_inputs_hold_each_study_in_the_order_named(two_studies):
    store, first, second = two_studies
    inputs = gather_report_inputs([second, first], path=store, n_boot=0)
    assert inputs.study_ids == (second, first)
    assert inputs.store_name == store.name and inputs.python
    assert [p for p, _ in inputs.analysis_software][:2] == ["numpy", "scipy"]
    for study in inputs.studies:
        assert study.card["study id"] == study.study_id  # its export card
        assert study.imported_results is None and study.unsized_tasks == ()
        assert set(study.intervals["metric"]) <= set(STATS_METRICS)
        assert set(study.latex_intervals["metric"]) == set(METRICS)
        # The primary metric's pairs, without the bootstrap's columns when none was asked.
        assert set(study.paired["metric"]) == {paired.PRIMARY_METRIC}
        assert "boot_ci_low" not in study.paired
        assert study.per_run["seed"].nunique() == 2 and not study.split_sizes.empty
        assert not study.factorial and study.components.empty


@pytest.mark.slow
def test_the_inputs_are_a_frozen_record(two_studies):
    store, first, _ = two_studies
    inputs = gather_report_inputs([first], path=store, n_boot=0)
    with pytest.raises(FrozenInstanceError):
        inputs.studies = ()  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        inputs.studies[0].name = "renamed"  # type: ignore[misc]


@pytest.mark.slow
def test_the_budget_matched_check_is_gathered_only_where_the_budgets_differ(store):
    equal = write_synthetic_study(
        store, n_seeds=2, n_patients=20, configs={"nominal": 2, "binomial": 2, "beta": 2}
    )
    unequal = write_synthetic_study(
        store, n_seeds=2, n_patients=20, configs={"nominal": 2, "binomial": 1, "beta": 1}, seed=1
    )
    inputs = gather_report_inputs([equal, unequal], path=store, n_boot=0, n_draws=3)
    said_equal, said_unequal = (s.budget_matched for s in inputs.studies)
    assert said_equal is None  # the caveat says they are equal: nothing to check
    assert isinstance(said_unequal, budget.BudgetMatched | str)
    if isinstance(said_unequal, budget.BudgetMatched):
        assert said_unequal.n_draws == 3


def test_no_study_an_unknown_study_or_no_store_is_refused_in_one_line(store, tmp_path):
    with pytest.raises(ReportInputError, match="at least one study"):
        gather_report_inputs([], path=store)
    with pytest.raises(ReportInputError, match="no study 'study-nope'"):
        gather_report_inputs(["study-nope"], path=store)
    with pytest.raises(ReportInputError, match="no store at"):
        gather_report_inputs(["study-nope"], path=tmp_path / "none.duckdb")
