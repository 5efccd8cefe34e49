"""Issue 21's reviewer statistics on the result pages, on a tiny synthetic study written
through the store: the KL × CPPD page's KLD decomposition and corrected KLD tests, Compare →
Probabilities' ECE floor and temperature scaling, and Compare → Robustness (truth vs
recorded, budget-matched comparison)."""

from __future__ import annotations

import pytest

from pages.present import inference_tables
from store import jobs as store_jobs
from store.db import init_schema
from tests.helpers.pages import make_store, run_page, texts
from tests.helpers.synthetic_study import write_synthetic_study

RELATIONSHIP_PAGE = "../../pages/relationship.py"
CONFIGS = {"nominal": 1, "binomial": 2, "beta": 3}


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A home whose store holds one synthetic study with every run's test predictions."""
    home = tmp_path_factory.mktemp("reviewer")
    store = home / "softgrade.duckdb"
    init_schema(store)
    write_synthetic_study(store, n_seeds=4, n_patients=30, configs=CONFIGS)
    finish_the_job(store)
    return home


def finish_the_job(store) -> None:
    """Mark the synthetic study's job succeeded, as a worker does after its last seed (the
    result pages show finished seeds only)."""
    job = store_jobs.claim_next_job("test-worker", path=store)
    store_jobs.finish_job(job.job_id, store_jobs.JobStatus.SUCCEEDED, path=store)


def frame_with_column(at, column: str):
    """The first dataframe on the page that has ``column``."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_relationship_page_decomposes_the_kld_and_tests_it_corrected(home, monkeypatch):
    at = run_page(home, monkeypatch, RELATIONSHIP_PAGE)
    parts = frame_with_column(at, "KL-marginal share")
    assert list(parts["Method"]) == ["Nominal", "Binomial", "Beta"]
    total = parts["KL marginal"] + parts["CPPD given KL"]
    assert (abs(total - parts["KLD"]) < 1e-3).all()
    markdown = texts(at, "markdown")
    assert "Nominal's KLD is mostly" in markdown
    assert "of films against" in markdown
    paired = frame_with_column(at, "p Wilcoxon (exact)")
    assert len(paired) == 3  # three pairs of methods
    assert {"p Wilcoxon (Holm)", "Effect size dz", "Break-even ρ (p = 0.05)"} <= set(paired.columns)
    # The corrected test is named for the correlation it assumes.
    assert any(c.startswith("95 % CI (corrected, NB ρ = ") for c in paired.columns)
    assert any(c.startswith("Verdict (ROPE ± ") for c in paired.columns)


def test_probabilities_tab_shows_the_ece_floor_and_temperature_scaling(home, monkeypatch):
    at = run_page(home, monkeypatch, tab="Probabilities")
    ece = frame_with_column(at, "Floor (calibrated)")
    assert len(ece) == 2 * 3  # tasks × methods
    assert (ece["Floor (calibrated)"] > 0).all()
    assert list(ece["Task"].unique()) == ["CPPD", "KL"]  # the paper's order
    assert "A perfectly calibrated model would still score" in texts(at, "markdown")
    temperature = frame_with_column(at, "Temperature")
    assert {"ECE before", "ECE after", "RPS before", "RPS after"} <= set(temperature.columns)
    assert (temperature["Temperature"] > 0).all()
    assert "pools the test films of every seed" in texts(at, "caption")
    # The probability metrics' pairs (the Statistics tab's views share their headers).
    paired = next(d.value for d in at.dataframe if {"Metric", "p Wilcoxon (exact)"} <= set(d.value))
    assert "p Wilcoxon (Holm)" in paired.columns
    buttons = {b.proto.id.split("-")[-1] for b in at.get("download_button")}
    assert "prob_download_calibration" in buttons


def test_robustness_tab_scores_against_the_truth_and_at_matched_budget(home, monkeypatch):
    at = run_page(home, monkeypatch, tab="Robustness")
    assert at.selectbox(key="robust_metric").value == "amae"
    truth = frame_with_column(at, "Shift vs Nominal")
    assert list(truth["Method"][truth["Task"] == "KL"]) == ["Nominal", "Binomial", "Beta"]
    markdown = texts(at, "markdown")
    assert "gain more against the truth than against the noisy labels" in markdown
    assert "Nominal 1, Binomial 2, Beta 3 configurations" in markdown
    matched = frame_with_column(at, "At matched budget")
    nominal = matched[matched["Method"] == "Nominal"]
    # Nominal has one configuration: matching the budget cannot change its selection.
    assert (nominal["As selected"] == nominal["At matched budget"]).all()
    # Matched by coverage of Nominal's learning-rate grid (its one rate here).
    assert "Over 200 draws of one configuration per learning rate of Nominal's grid" in markdown
    assert "(1 per method)" in markdown
    assert "robust_download_csv" in {b.proto.id.split("-")[-1] for b in at.get("download_button")}


def test_robustness_says_why_without_unselected_test_predictions(tmp_path, monkeypatch):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    write_synthetic_study(
        store, n_seeds=3, n_patients=20, configs=CONFIGS, keep_unselected_test=False
    )
    finish_the_job(store)
    at = run_page(tmp_path, monkeypatch, tab="Robustness")
    info = texts(at, "info")
    assert "Budget matching needs the test predictions of every run" in info
    assert "for 18 of its 36 runs" in info  # 2 tasks × 3 seeds × (1 + 2 + 3) configurations
    assert not any("At matched budget" in d.value.columns for d in at.dataframe)


def test_robustness_names_a_method_off_nominals_grid_and_why(tmp_path, monkeypatch):
    """Issue 39: at budget 1, a method whose seeds drew no rate of Nominal's grid (CLM) was
    dropped from the matched tables without a word; now one line names it and says why."""
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    write_synthetic_study(
        store,
        n_seeds=3,
        n_patients=20,
        methods=("nominal", "beta", "clm"),
        lr_scale={"clm": 7.0},
    )
    finish_the_job(store)
    at = run_page(tmp_path, monkeypatch, tab="Robustness")
    matched = frame_with_column(at, "At matched budget")
    assert "CLM" not in set(matched["Method"])  # nothing at Nominal's rate to select among
    said = [line for line in texts(at, "info").split("\n") if "Left out here: CLM." in line]
    assert said, texts(at, "info")
    assert "learning rate of Nominal's grid (0.001)" in said[0]
    assert "Beta" not in said[0]


def test_robustness_on_films_without_true_grades_or_splits_says_why(tmp_path, monkeypatch):
    """A store of bare runs (no dataset: no true grade, no splits) gets one line for each
    section, no traceback."""
    make_store(tmp_path)
    at = run_page(tmp_path, monkeypatch, tab="Robustness")
    assert inference_tables.NO_TRUTH_REASON in texts(at, "caption")
    assert "the store records no splits for CPPD, KL" in texts(at, "info")
    assert not texts(at, "error")
