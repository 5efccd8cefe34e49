"""Issue 21's reviewer statistics on the result pages, on a tiny synthetic study written
through the store: the KL × CPPD page's KLD decomposition and corrected KLD tests, Compare →
Probabilities' ECE floor and temperature scaling, and Compare → Robustness (truth vs
recorded, budget-matched comparison)."""

from __future__ import annotations

import pytest

from store import jobs as store_jobs
from store.db import init_schema
from tests.helpers.pages import run_page, texts
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
    paired = frame_with_column(at, "p corrected")
    assert len(paired) == 3  # three pairs of methods
    assert {"p Wilcoxon (Holm)", "95 % CI (corrected)", "d_z"} <= set(paired.columns)
