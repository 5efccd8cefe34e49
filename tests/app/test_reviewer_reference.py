"""Issue 21's reviewer statistics on the shipped reference bundle (20 seeds, imported): the
numbers the issue quotes appear on the KL × CPPD page and on Compare's Probabilities and
Robustness tabs, and budget matching says in one sentence why the bundle cannot have it."""

from __future__ import annotations

import pytest

from store.bundle import REFERENCE_STUDY, import_study
from store.db import init_schema
from tests.helpers.pages import run_page, texts


@pytest.fixture(scope="module")
def reference_home(tmp_path_factory):
    """A home whose store holds only the imported reference study."""
    home = tmp_path_factory.mktemp("reference")
    store = home / "softgrade.duckdb"
    init_schema(store)
    import_study(REFERENCE_STUDY, path=store)
    return home


def frame_with_column(at, column: str):
    """The first dataframe on the page that has ``column``."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_kl_cppd_page_shows_nominal_kld_is_mostly_its_kl_marginal(reference_home, monkeypatch):
    at = run_page(reference_home, monkeypatch, "../../pages/relationship.py")
    parts = frame_with_column(at, "KL-marginal share").set_index("Method")
    assert parts.loc["Nominal", "KLD"] == pytest.approx(1.018, abs=0.001)
    assert parts.loc["Nominal", "KL marginal"] == pytest.approx(0.604, abs=0.001)
    assert parts.loc["Nominal", "KL-marginal share"] == "59.4 %"
    assert (
        parts.drop(index="Nominal")["KL marginal"] < parts.drop(index="Nominal")["CPPD given KL"]
    ).all()
    markdown = texts(at, "markdown")
    assert "Nominal's KLD is mostly its KL marginal" in markdown
    assert "it predicts KL 0 for 5.4 % of films against 16.1 %" in markdown
    paired = frame_with_column(at, "p (corrected, NB ρ = 0.30)")
    row = paired[(paired["A"] == "Nominal") & (paired["B"] == "Binomial")].iloc[0]
    assert row["p Wilcoxon (Holm)"] == "< 0.001"
    # Consistent over seeds, not significant at the assumed ρ; significant below r ≈ 0.1.
    assert float(row["p (corrected, NB ρ = 0.30)"]) > 0.05
    assert row["Break-even r (p = 0.05)"].startswith("0.")


def test_probabilities_show_the_ece_floor_and_temperatures(reference_home, monkeypatch):
    at = run_page(reference_home, monkeypatch, tab="Probabilities")
    ece = frame_with_column(at, "Floor (calibrated)")
    assert len(ece) == 2 * 5
    assert ece["Floor (calibrated)"].between(0.025, 0.06).all()
    temperature = frame_with_column(at, "Temperature")
    assert len(temperature) == 2 * 5 and set(temperature["Seeds"]) == {20}


def test_robustness_scores_the_phantom_truth_and_explains_the_budget(reference_home, monkeypatch):
    at = run_page(reference_home, monkeypatch, tab="Robustness")
    truth = frame_with_column(at, "Shift vs Nominal")
    assert (truth["Shift"] < 0).all()  # every method's AMAE is lower against the truth
    markdown = texts(at, "markdown")
    # The study card says what was run: every run from random weights.
    assert (
        "**weights init**: random (trained from scratch, no pretrained weights) on all 1800 runs"
        in markdown
    )
    assert "Nominal 3, Binomial 6, Beta 6, Triangular 15, Exponential 15 configurations" in markdown
    info = texts(at, "info")
    assert "holds them for 200 of its 1800 runs" in info
    assert "Traceback" not in info and not texts(at, "error")
