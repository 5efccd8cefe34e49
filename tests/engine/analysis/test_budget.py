"""Budget-matched selection from stored runs: hand checks on the selection, a synthetic study
through the store, the bundle round trip and a study that lacks the test scores."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from engine.analysis import budget, compare, paired
from store import analysis as store_analysis
from store import runs as store_runs
from store.bundle import export_study, import_study
from store.db import init_schema
from tests.helpers.synthetic_study import write_synthetic_study


def _runs() -> pd.DataFrame:
    """One KL seed: nominal 2 configurations, beta 4 (val AMAE 0.4, 0.3, 0.2, 0.1)."""
    rows = [("nominal", c, 0.5 - 0.1 * c) for c in range(2)]
    rows += [("beta", c, 0.4 - 0.1 * c) for c in range(4)]
    return pd.DataFrame(
        {"run_id": [f"{m}{c}" for m, c, _ in rows], "task": "KL", "method": [m for m, *_ in rows],
         "seed": 0, "config_index": [c for _, c, _ in rows], "val_amae": [v for *_, v in rows],
         "amae": [v for *_, v in rows]}
    )  # fmt: skip


def test_budget_is_nominal_s_configurations():
    assert budget.nominal_budget(_runs()) == 2


def test_a_budget_as_large_as_the_search_selects_what_the_study_selected():
    chosen = budget.matched_selections(_runs(), 4, n_draws=5)
    assert set(chosen.loc[chosen["method"] == "beta", "run_id"]) == {"beta3"}
    assert set(chosen.loc[chosen["method"] == "nominal", "run_id"]) == {"nominal1"}


def test_matched_selection_picks_the_best_of_a_random_subset():
    chosen = budget.matched_selections(_runs(), 2, n_draws=3000, seed=1)
    beta = chosen.loc[chosen["method"] == "beta", "config_index"]
    # Best of 2 of 4: config 3 whenever drawn (1/2), config 2 when 3 is not but 2 is (1/3
    # of 1/2 ... = 1/3), config 1 when only 0 and 1 (1/6), never config 0.
    shares = beta.value_counts(normalize=True)
    assert shares[3] == pytest.approx(1 / 2, abs=0.03)
    assert shares[2] == pytest.approx(1 / 3, abs=0.03)
    assert shares[1] == pytest.approx(1 / 6, abs=0.03)
    assert 0 not in shares.index


def _all_runs(store, study) -> pd.DataFrame:
    counts = store_analysis.all_run_test_counts(study, path=store)
    runs = store_runs.list_runs([study], path=store)[["run_id", "selected"]]
    return compare.per_run_metrics(counts).merge(runs, on="run_id")


def test_budget_matched_on_a_stored_study(store):
    study = write_synthetic_study(store, n_seeds=3, n_patients=20,
                                  configs={"nominal": 1, "binomial": 2, "beta": 3})  # fmt: skip
    per_run = _all_runs(store, study)
    ratios = paired.test_train_ratios(store_analysis.split_sizes(study, path=store))
    result = budget.budget_matched(per_run, ratios, n_draws=50)
    assert result.budget == 1
    table = result.table.set_index(["task", "method", "metric"])
    # With one configuration per selection nominal's is its study selection ...
    nominal = table.loc[("KL", "nominal", "amae")]
    assert nominal["mean_matched"] == pytest.approx(nominal["mean_study"])
    assert table.loc[("KL", "beta", "amae"), "configs"] == 3
    # ... and a method's matched mean is close to the mean of all its configurations.
    beta = per_run[(per_run.task == "KL") & (per_run.method == "beta")]
    assert table.loc[("KL", "beta", "amae"), "mean_matched"] == pytest.approx(
        beta["amae"].mean(), abs=0.03
    )
    assert set(result.paired["family"]) >= {paired.PRIMARY_FAMILY}
    assert len(result.draws) == 50 * 2 * 2  # draws × tasks × soft methods


def test_a_default_bundle_lacks_the_test_scores_and_says_so(store, tmp_path):
    study = write_synthetic_study(store, n_seeds=1, n_patients=20,
                                  configs={"nominal": 1, "binomial": 2, "beta": 3})  # fmt: skip
    sizes = {}
    for every in (False, True):
        bundle = export_study(study, tmp_path / f"b{every}.zip", all_test_predictions=every,
                              path=store)  # fmt: skip
        sizes[every] = bundle.stat().st_size
        other = tmp_path / f"s{every}.duckdb"
        init_schema(other)
        import_study(bundle, path=other)
        lacking = store_analysis.runs_lacking_test_predictions(study, path=other)
        assert lacking == (0 if every else 6)
        if not every:
            with pytest.raises(budget.BudgetUnavailable, match="6 of its 12 runs|all_test"):
                budget.check_test_scores(study, lacking, 12)
    assert sizes[True] > sizes[False]


def _grid_runs() -> pd.DataFrame:
    """One KL seed: nominal at lr 0.1, 0.01 (val 0.5, 0.45); beta with 2 configurations at
    0.1 (0.40, 0.30) and 2 at 0.01 (0.20, 0.35), and one at 0.001 outside nominal's grid
    (0.05, the best, never eligible)."""
    rows = [("nominal", 0.1, 0.5), ("nominal", 0.01, 0.45)]
    rows += [("beta", 0.1, 0.4), ("beta", 0.1, 0.3), ("beta", 0.01, 0.2), ("beta", 0.01, 0.35)]
    rows += [("beta", 0.001, 0.05)]
    index = {"nominal": 0, "beta": 0}
    out = []
    for method, lr, val in rows:
        out.append({"run_id": f"{method}{index[method]}", "task": "KL", "method": method,
                    "seed": 0, "config_index": index[method], "config": json.dumps({"lr": lr}),
                    "val_amae": val, "amae": val})  # fmt: skip
        index[method] += 1
    return pd.DataFrame(out)


def test_the_grid_is_nominal_s_learning_rates():
    assert budget.nominal_grid(_grid_runs()) == (0.01, 0.1)


def test_coverage_matching_picks_one_configuration_per_rate_of_the_grid():
    chosen = budget.coverage_selections(_grid_runs(), (0.01, 0.1), n_draws=4000, seed=2)
    beta = chosen.loc[chosen["method"] == "beta", "run_id"].value_counts(normalize=True)
    # One of {beta0, beta1} at 0.1 and one of {beta2, beta3} at 0.01, each 1/2: the best of
    # the pair is beta2 whenever it is drawn (1/2), else beta1 (0.30 < 0.35) when drawn
    # (1/4), else beta3 (1/4); beta4 (lr 0.001) is off the grid and beta0 never wins.
    assert beta["beta2"] == pytest.approx(1 / 2, abs=0.03)
    assert beta["beta1"] == pytest.approx(1 / 4, abs=0.03)
    assert beta["beta3"] == pytest.approx(1 / 4, abs=0.03)
    assert set(beta.index) == {"beta1", "beta2", "beta3"}
    assert chosen["covered"].all()
    nominal = chosen.loc[chosen["method"] == "nominal", "run_id"]
    assert set(nominal) == {"nominal1"}  # its whole grid: its own selection


def test_a_search_missing_a_rate_is_counted_as_uncovered():
    runs = _grid_runs()
    runs = runs[~((runs["method"] == "beta") & (runs["config"].str.contains("0.01")))]
    table = budget.coverage_matched_validation(runs, n_draws=50)
    beta = table.set_index("method").loc["beta"]
    assert beta["uncovered"] == 1 and beta["grid"] == 2
    assert beta["matched"] == pytest.approx((0.4 + 0.3) / 2, abs=0.03)
    assert beta["own_best"] == pytest.approx(0.05)  # its whole search, off-grid rate included


def test_coverage_matched_budget_on_a_stored_study(store):
    study = write_synthetic_study(store, n_seeds=3, n_patients=20,
                                  configs={"nominal": 1, "binomial": 2, "beta": 3})  # fmt: skip
    per_run = _all_runs(store, study).merge(
        store_runs.list_runs([study], path=store)[["run_id", "config"]], on="run_id"
    )
    ratios = paired.test_train_ratios(store_analysis.split_sizes(study, path=store))
    result = budget.budget_matched(per_run, ratios, n_draws=20, match=budget.COVERAGE)
    assert result.match == budget.COVERAGE and result.grid == (0.001,) and result.budget == 1
    # Nominal's one rate: every method is held to its configuration at that rate (c0).
    table = result.table[result.table["metric"] == "amae"].set_index(["task", "method"])
    c0 = per_run[per_run["config_index"] == 0].groupby(["task", "method"])["amae"].mean()
    for key, value in c0.items():
        assert table.loc[key, "mean_matched"] == pytest.approx(value)


def test_off_grid_methods_are_those_with_no_run_at_a_rate_of_the_grid():
    """Budget 1: CLM's seeds drew 0.007 and 0.014, none of Nominal's rates, so coverage
    matching has nothing to select for it; Beta hit one rate of two and stays."""
    runs = pd.DataFrame(
        {"method": ["nominal", "nominal", "beta", "beta", "clm", "clm"],
         "config": ['{"lr": 0.001}', '{"lr": 0.002}', '{"lr": 0.002}', '{"lr": 0.05}',
                    '{"lr": 0.007}', '{"lr": 0.014}']}
    )  # fmt: skip
    grid = budget.nominal_grid(runs)
    assert grid == (0.001, 0.002)
    assert budget.off_grid_methods(runs, grid) == ["clm"]
    assert budget.off_grid_methods(runs[runs["method"] != "clm"], grid) == []
