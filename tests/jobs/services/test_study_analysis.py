"""Each study-level assembler on a tiny synthetic study written through the store."""

from __future__ import annotations

import pytest

from engine.analysis import paired
from jobs.services import study_analysis
from tests.helpers.synthetic_study import write_synthetic_study


@pytest.fixture
def study(store):
    configs = {"nominal": 1, "binomial": 2, "beta": 2}
    return store, write_synthetic_study(store, n_seeds=3, n_patients=20, configs=configs)


def test_paired_table_with_bootstrap_and_mean_intervals(study):
    store, study_id = study
    table = study_analysis.paired_table(study_id, metrics=("amae",), n_boot=50, path=store)
    assert len(table) == 2 * 3
    assert table[["boot_ci_low", "boot_ci_high", "within_seed_sd"]].notna().all().all()
    means = study_analysis.mean_intervals(study_id, path=store)
    assert (means["ci_low"] <= means["naive_ci_low"]).all()
    assert (means["ci_kind"] == paired.MEAN_CI_KIND).all()


def test_designs_truth_calibration_power_and_budget(study):
    store, study_id = study
    anova = study_analysis.blocked_anova(study_id, path=store)
    blocked = anova["blocked"].table
    assert list(blocked["task"]) == ["CPPD", "KL"] and set(blocked["factor"]) == {"Method"}
    assert blocked["p_gg"].notna().all()
    assert "partial_eta2" in anova["ols"].table
    assert len(study_analysis.kld_decomposition(study_id, path=store)) == 3
    assert len(study_analysis.against_truth(study_id, path=store)) == 2 * 3 * 6
    ece = study_analysis.calibration_uncertainty(study_id, path=store)
    assert (ece["floor"] > 0).all()
    assert len(study_analysis.temperature_scaled(study_id, path=store)) == 2 * 3 * 3
    plan = study_analysis.seeds_needed(study_id, effect=0.1, design_rho=0.2, path=store)
    assert len(plan) == 2 * 3 * 4  # tasks × pairs × (ρ = 0, 0.1, 0.3 and the design's)
    matched = study_analysis.budget_matched(study_id, n_draws=20, path=store)
    assert matched.budget == 1 and not matched.table.empty


def test_probability_and_kld_pairs(study):
    store, study_id = study
    probs = study_analysis.probability_paired_table(study_id, path=store)
    assert set(probs["metric"]) == {"rps", "ece", "ece_cum", "unimodal", "within1"}
    assert len(probs) == 2 * 5 * 3
    assert (probs["family"].str.startswith("exploratory")).all()
    kld = study_analysis.kld_paired_table(study_id, path=store)
    assert list(kld["task"].unique()) == [study_analysis.JOINT_TASK]
    assert len(kld) == 3 and kld["p_corrected"].notna().all()
