"""`python -m jobs stats`: the paired table printed or written under the study card, and one
clear line for a study that is not there."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.analysis import paired
from engine.analysis.metrics import STATS_METRICS
from store.db import init_schema
from tests.helpers.cli import run_cli
from tests.helpers.synthetic_study import write_synthetic_study


def _home_with_study(tmp_path):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    return store, write_synthetic_study(store, n_seeds=3, n_patients=20)


def test_stats_writes_one_row_per_task_pair_metric_under_the_study_card(tmp_path):
    _, study = _home_with_study(tmp_path)
    out = tmp_path / "paired.csv"
    done = run_cli(tmp_path, "stats", study, "-o", str(out), "--bootstrap", "50")
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.startswith("# study: synthetic\n")
    assert f"# study id: {study}" in text
    table = pd.read_csv(out, comment="#")
    assert list(table.columns[: len(paired.PAIRED_COLUMNS)]) == list(paired.PAIRED_COLUMNS)
    for column in (
        "rho_assumed", "r_break_even", "p_bayes_a_better", "p_bayes_equivalent",
        "p_bayes_b_better", "verdict",
    ):  # fmt: skip
        assert column in paired.PAIRED_COLUMNS
    assert len(table) == 2 * 3 * len(STATS_METRICS)  # tasks × pairs of 3 methods × metrics
    assert {"boot_ci_low", "boot_ci_high", "family", "p_corrected_holm"} <= set(table.columns)
    assert {"p_r0", "p_r0.1", "p_r0.2", "rope", "p_tost"} <= set(table.columns)
    assert (table["rope"] == paired.DEFAULT_ROPE).all()


def test_stats_takes_a_rope_per_metric_and_refuses_a_bad_one_in_one_line(tmp_path):
    _, study = _home_with_study(tmp_path)
    out = tmp_path / "paired.csv"
    done = run_cli(
        tmp_path, "stats", study, "-o", str(out), "--bootstrap", "0", "--rope", "0.02",
        "--rope", "QWK=0.3",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(out, comment="#")
    assert set(table.loc[table["metric"] == "qwk", "rope"]) == {0.3}
    assert set(table.loc[table["metric"] == "amae", "rope"]) == {0.02}
    for bad in ("F1=0.1", "-0.1", "wide"):
        refused = run_cli(tmp_path, "stats", study, "--rope", bad)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1
        assert "--rope" in refused.stderr and "Traceback" not in refused.stderr


def test_stats_prints_one_metric_given_in_capitals(tmp_path):
    _, study = _home_with_study(tmp_path)
    done = run_cli(tmp_path, "stats", study, "--metric", "AMAE", "--bootstrap", "0")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if " amae " in line]
    assert len(lines) == 2 * 3
    assert "corrected resampled t" in done.stdout
    assert "verdict" in done.stdout and "r_break_even" in done.stdout


def test_stats_on_an_unknown_study_names_it_and_how_to_list_studies(tmp_path):
    _home_with_study(tmp_path)
    done = run_cli(tmp_path, "stats", "study-missing")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "study-missing" in done.stderr and "stats --list" in done.stderr
    assert "Traceback" not in done.stderr


def test_stats_refuses_an_unknown_metric_and_a_non_csv_output(tmp_path):
    _, study = _home_with_study(tmp_path)
    bad_metric = run_cli(tmp_path, "stats", study, "--metric", "F1")
    assert bad_metric.returncode == 2 and "AMAE" in bad_metric.stderr
    bad_out = run_cli(tmp_path, "stats", study, "-o", str(tmp_path / "x.xlsx"))
    assert bad_out.returncode == 2 and ".csv" in bad_out.stderr


def test_stats_list_shows_the_study(tmp_path):
    _, study = _home_with_study(tmp_path)
    done = run_cli(tmp_path, "stats", "--list")
    assert done.returncode == 0 and study in done.stdout


def test_stats_components_on_independent_seeds_says_why_in_one_sentence(tmp_path):
    _, study = _home_with_study(tmp_path)
    done = run_cli(tmp_path, "stats", study, "--components")
    assert done.returncode == 0, done.stderr
    assert "cannot separate the variance the data make" in done.stdout
    assert "seeds: {splits: 10, inits: 2}" in done.stdout
    refused = run_cli(tmp_path, "stats", study, "--components", "-o", "c.tex")
    assert refused.returncode == 2 and "--components writes .csv or .parquet" in refused.stderr
    plain = run_cli(tmp_path, "stats", study, "--bootstrap", "0")
    assert "factorial seeds design" not in plain.stdout  # the hint is for factorial studies


@pytest.mark.slow
def test_stats_footer_names_this_study_s_families_and_prints_the_verdict_first(tmp_path):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    study = write_synthetic_study(store, n_seeds=3, n_patients=20, methods=("beta", "binomial"))
    done = run_cli(tmp_path, "stats", study, "--metric", "AMAE", "--bootstrap", "0")
    assert done.returncode == 0, done.stderr
    assert "family of 8" not in done.stdout
    assert "no primary-endpoint comparison" in done.stdout
    assert "2 families: 2 of 1 comparisons" in done.stdout
    header = next(line for line in done.stdout.splitlines() if "verdict" in line)
    assert header.index("verdict") < header.index("p_corrected ")
    assert header.index("p_corrected_holm") < header.index("p_wilcoxon")


@pytest.mark.slow
def test_stats_gives_no_verdict_from_two_seeds_and_says_why(tmp_path):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    study = write_synthetic_study(store, n_seeds=2, n_patients=20)
    out = tmp_path / "paired.csv"
    done = run_cli(tmp_path, "stats", study, "-o", str(out), "--bootstrap", "0")
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(out, comment="#")
    assert (table["verdict"] == "not estimable: fewer than 3 seeds (2)").all()
