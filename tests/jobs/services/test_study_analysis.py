"""Each study-level assembler on a tiny synthetic study written through the store."""

from __future__ import annotations

import shutil

import pytest

from engine.analysis import paired
from jobs.services import study_analysis
from store.db import connect
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


def test_the_content_key_follows_the_study_not_the_store(study, tmp_path):
    """The same study copied into another store keys alike (its analyses can be shared);
    one changed prediction, or a study of results without predictions, does not."""
    store, study_id = study
    key = study_analysis.content_key(study_id, path=store)
    other = tmp_path / "other" / "softgrade.duckdb"
    other.parent.mkdir()
    shutil.copyfile(store, other)
    assert study_analysis.content_key(study_id, path=other) == key
    with connect(other) as con:
        film = con.execute(
            "SELECT p.run_id, p.image_id FROM predictions p JOIN runs r USING (run_id) "
            "WHERE r.study_id = ? AND r.task = 'CPPD' AND r.selected AND p.split = 'test' "
            "ORDER BY 1, 2 LIMIT 1",
            [study_id],
        ).fetchone()
        con.execute(
            "UPDATE predictions SET y_pred = (y_pred + 1) % 4 WHERE run_id = ? AND image_id = ?",
            list(film),
        )
    assert study_analysis.content_key(study_id, path=other) != key
    with connect(other) as con:  # as a study of imported per-seed results stores
        con.execute("DELETE FROM predictions")
    bare = study_analysis.content_key(study_id, path=other)
    shutil.copyfile(other, tmp_path / "third.duckdb")
    assert study_analysis.content_key(study_id, path=tmp_path / "third.duckdb") != bare
