"""The Compare page's Statistics tab, careful reviewer's view by default (issue 21): on the
shipped reference study and on tiny synthetic studies."""

from __future__ import annotations

import io
import shutil

import pandas as pd
import pytest

from jobs.services import study_analysis
from pages.widgets import reviewer_stats
from store import runs as store_runs
from store.bundle import REFERENCE_STUDY, import_study
from store.db import connect, init_schema
from tests.helpers.pages import download_reader, finished_synthetic_store, run_page, texts


@pytest.fixture(scope="module")
def reference_home(tmp_path_factory):
    """A store holding only the shipped 20-seed reference study."""
    home = tmp_path_factory.mktemp("reference")
    store = home / "softgrade.duckdb"
    init_schema(store)
    import_study(REFERENCE_STUDY, path=store)
    return home


def _stats_csv(at, read) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(read(at)["compare_download_stats_csv"][1]), comment="#")


def _row(frame: pd.DataFrame, task: str, pair: str) -> pd.Series:
    rows = frame[(frame["Task"] == task) & (frame["A − B"] == pair)]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def test_reference_statistics_show_the_corrected_p_beside_the_wilcoxon(reference_home, monkeypatch):
    at = run_page(reference_home, monkeypatch, tab="Statistics")
    assert "The careful reviewer's analysis" in texts(at, "subheader")
    markdown = texts(at, "markdown")
    assert "**Primary endpoint**" in markdown
    shown = [d.value for d in at.dataframe]
    corrected = "p (corrected, NB ρ = 0.30)"
    # The verdict first: a compact table, every other column in the table under it.
    compact = next(f for f in shown if "Endpoint" in f.columns and "A − B" in f.columns)
    assert list(compact.columns[:6]) == [
        "Task",
        "A − B",
        "Seeds",
        "Mean A − B [95 % CI, corrected, NB ρ = 0.30]",
        "Verdict (ROPE ± 0.01)",
        "p corrected (Holm)",
    ]
    assert _row(compact, "KL", "Binomial − Nominal")["Endpoint"] == "primary"
    assert "Result on AMAE:" in texts(at, "markdown")
    assert "Result: none of the 8 primary comparisons is significant" in texts(at, "markdown")
    paired = next(f for f in shown if corrected in f.columns and "A − B" in f.columns)
    kl = _row(paired, "KL", "Binomial − Nominal")
    assert float(kl[corrected]) == pytest.approx(0.16, abs=0.01)
    # The strip, on one scale: p at ρ = 0, 0.09, 0.17 and the assumed 0.30;
    # break-even ρ = 0.15 (r = 0.18, in the tooltip and the CSV).
    assert kl["p at ρ = 0 · 0.09 · 0.17 · assumed"] == "< 0.001 · 0.0175 · 0.0582 · 0.162 (ρ 0.30)"
    assert kl["Break-even ρ (p = 0.05)"] == "0.15"
    assert kl["p Wilcoxon (exact)"] in {"< 0.001"}  # 0.0005 on 20 seeds
    cell = _row(compact, "KL", "Binomial − Nominal")["Mean A − B [95 % CI, corrected, NB ρ = 0.30]"]
    low, high = (float(v) for v in cell.split(" ", 1)[1].strip("[]").split(","))
    assert low < 0 < high  # the corrected interval includes 0
    assert "Bootstrap CI" not in paired.columns  # the bootstrap left the paired table
    assert _row(compact, "KL", "Binomial − Nominal")["Verdict (ROPE ± 0.01)"] == "inconclusive"
    assert float(kl["Effect size dz"]) < 0 and float(kl["Rank-biserial r"]) < 0
    # Human headers only: the shared mapping, no column names of the stats table.
    assert not any("_" in c for c in paired.columns) and "d_z" not in paired.columns
    assert "on most seeds (Wilcoxon" in kl["Reading"] and "ρ = 0.30" in kl["Reading"]
    assert "new patients" not in paired.to_string()
    # Every other metric's rows are exploratory; the paper's analysis is one click away.
    assert (compact[compact["Task"] == "KL"]["Endpoint"] != "").all()
    expanders = [e.label for e in at.get("expander")]
    assert any("as in the paper" in label for label in expanders)
    assert any(label.startswith("Film-sampling bootstrap") for label in expanders)
    boot = next(f for f in shown if "Film-sampling bootstrap 95 % interval" in f.columns)
    assert boot["Film-sampling bootstrap 95 % interval"].str.startswith("[").all()
    assert "Two-way ANOVA, method × task (Table 5)" in markdown
    assert "Seed-blocked ANOVA per task" in markdown
    assert "Friedman" in markdown
    friedman = next(f for f in shown if "Kendall's W" in f.columns)
    assert set(friedman["Task"]) == {"KL", "CPPD"}
    blocked = next(f for f in shown if "Greenhouse–Geisser ε" in f.columns)
    assert set(blocked["Task"]) == {"KL", "CPPD"}
    captions = texts(at, "caption")
    assert "Treats the seeds as independent blocks" in captions  # Friedman, ANOVA, CD hedged
    assert "rank alike" not in captions + markdown
    info = texts(at, "info")
    assert "hypothesis tests: only the 8 of the primary endpoint" in info
    power = next(f for f in shown if "sd (80 % upper bound)" in f.columns)
    assert "Power now" not in power.columns
    assert len(power) == len(paired)
    assert "Seeds at ρ = 0.3 (≈ the corrected test's)" in power.columns
    assert "ceiling" in captions and "assumed ρ" in captions
    assert "None" not in paired.to_string() and "± –" not in paired.to_string()


def test_the_pairs_table_reads_with_the_primary_endpoints_sign(reference_home, monkeypatch):
    """Issue 39: the primary endpoint read "Binomial − Nominal" and the pairs table under it
    "Nominal − Binomial", the opposite sign. Every pair now subtracts the method listed
    first, so each primary row's difference is its pairs row's, and the heading says so."""
    at = run_page(reference_home, monkeypatch, tab="Statistics")
    shown = [d.value for d in at.dataframe]
    primary = next(f for f in shown if "Method − Nominal" in f.columns)
    compact = next(f for f in shown if "Endpoint" in f.columns and "A − B" in f.columns)
    mean_ci = next(c for c in compact.columns if c.startswith("Mean A − B"))
    assert len(primary) == 8
    for row in primary.to_dict("records"):
        pair = _row(compact, row["Task"], f"{row['Method − Nominal']} − Nominal")
        assert pair[mean_ci].split(" ", 1)[0] == row["AMAE difference"]
    assert not compact["A − B"].str.startswith("Nominal − ").any()
    assert "as the primary endpoint reads method − Nominal" in texts(at, "markdown")


def test_the_rope_on_the_page_moves_the_verdicts(reference_home, monkeypatch):
    at = run_page(reference_home, monkeypatch, tab="Statistics")
    at.selectbox(key="compare_stats_metric").set_value("qwk").run()
    at.number_input(key="compare_rope_qwk").set_value(0.2).run()
    assert not at.exception
    paired = next(d.value for d in at.dataframe if "Verdict (ROPE ± 0.2)" in d.value.columns)
    # QWK is exploratory: its verdicts say so in the column.
    assert (paired["Verdict (ROPE ± 0.2)"] == "equivalent (exploratory)").any()


def test_reference_statistics_csv_carries_the_paired_columns(reference_home, monkeypatch):
    read = download_reader(monkeypatch)
    at = run_page(reference_home, monkeypatch, tab="Statistics")
    csv = _stats_csv(at, read)
    paired = csv[csv["table"] == "paired"]
    for column in (
        "task", "metric", "method_a", "method_b", "n_seeds", "mean_diff", "ci_low",
        "ci_high", "p_corrected", "p_wilcoxon", "p_wilcoxon_holm", "d_z", "rank_biserial",
        "rho_assumed", "r_break_even", "p_bayes_a_better", "p_bayes_equivalent",
        "p_bayes_b_better", "verdict",
    ):  # fmt: skip
        assert column in paired.columns
    row = paired[
        (paired["task"] == "KL") & (paired["method_a"] == "binomial")
        & (paired["method_b"] == "nominal")
    ].iloc[0]  # fmt: skip
    assert row["p_corrected"] == pytest.approx(0.16, abs=0.01)
    assert row["p_wilcoxon"] == pytest.approx(0.0005, abs=0.0003)
    study_id = store_runs.list_studies(path=reference_home / "softgrade.duckdb")["study_id"][0]
    expected = study_analysis.paired_table(
        study_id, metrics=("amae",), n_boot=0, path=reference_home / "softgrade.duckdb"
    )
    expected = expected[(expected["task"] == "KL") & (expected["method_a"] == "binomial")]
    assert row["mean_diff"] == pytest.approx(float(expected["mean_diff"].iloc[0]))
    assert {"wilcoxon", "anova"} <= set(csv["table"])  # the paper's tables follow


def test_table4_offers_the_mean_with_its_interval(reference_home, monkeypatch):
    read = download_reader(monkeypatch)
    at = run_page(reference_home, monkeypatch)
    at.radio(key="compare_mean_view").set_value("ci").run()
    assert not at.exception
    table = at.dataframe[0].value
    cell = table[(table["Task"] == "KL") & (table["Method"] == "Nominal")]["AMAE ↓"].iloc[0]
    assert "[" in cell and "]" in cell
    assert "corrected resampled t interval" in texts(at, "caption")
    csv = pd.read_csv(io.StringIO(read(at)["compare_ci_csv"][1]), comment="#")
    assert {"mean", "ci_low", "ci_high", "naive_ci_low", "ci_kind"} <= set(csv.columns)


def test_one_seed_study_says_what_cannot_be_computed(tmp_path, monkeypatch):
    finished_synthetic_store(tmp_path, 1, n_patients=20)
    at = run_page(tmp_path, monkeypatch, tab="Statistics")
    info = texts(at, "info")
    assert "One seed: no paired difference has a spread" in info
    assert "Tukey's HSD follows the two-way ANOVA" in info  # no Tukey verdict without it
    assert not any("Kendall's W" in d.value.columns for d in at.dataframe)
    for frame in (d.value for d in at.dataframe):
        assert "None" not in frame.to_string()
    at.radio(key="compare_mean_view").set_value("ci").run()
    assert not at.exception
    table = at.dataframe[0].value
    assert table["AMAE ↓"].str.endswith("needs 2 seeds").all()
    assert "± –" not in table.to_string() and "None" not in table.to_string()


def test_two_seed_study_says_its_rows_are_a_sketch(tmp_path, monkeypatch):
    finished_synthetic_store(tmp_path, 2, n_patients=20)
    at = run_page(tmp_path, monkeypatch, tab="Statistics")
    assert "Two seeds: the corrected test has 1 degree of freedom" in texts(at, "info")
    paired = next(d.value for d in at.dataframe if "Reading" in d.value.columns)
    assert paired["Reading"].str.startswith("No verdict: not estimable: fewer than 3").all()
    compact = next(d.value for d in at.dataframe if "Endpoint" in d.value.columns)
    assert (compact["Seeds"] == "2").all()
    assert compact["Verdict (ROPE ± 0.01)"].str.startswith("not estimable").all()
    assert "None" not in paired.to_string() and "± –" not in paired.to_string()


def test_synthetic_study_shows_primary_paired_designs_and_the_papers_view(tmp_path, monkeypatch):
    finished_synthetic_store(tmp_path, 4, n_patients=20)
    at = run_page(tmp_path, monkeypatch, tab="Statistics")
    shown = [d.value for d in at.dataframe]
    primary = next(f for f in shown if "Method − Nominal" in f.columns)
    assert len(primary) == 4  # binomial and beta vs nominal, on both tasks
    paired = next(f for f in shown if "Endpoint" in f.columns and "A − B" in f.columns)
    assert list(paired["Endpoint"][:4]) == ["primary"] * 4
    assert set(paired["Endpoint"][4:]) == {"exploratory"}
    assert "Seed-blocked ANOVA" in texts(at, "markdown")
    assert "Shapiro–Wilk" in texts(at, "markdown")  # the paper's tests are still there
    at.selectbox(key="compare_stats_metric").set_value("qwk").run()
    assert not at.exception
    paired = next(d.value for d in at.dataframe if "Endpoint" in d.value.columns)
    assert set(paired["Endpoint"]) == {"exploratory"}  # QWK is not the primary endpoint
    at.number_input(key="compare_power_effect").set_value(0.5).run()
    assert not at.exception
    charts = len(at.get("vega_lite_chart"))
    at.toggle(key="compare_cd_every_metric").set_value(True).run()
    assert not at.exception
    assert len(at.get("vega_lite_chart")) == charts + 5 * 2  # five more metrics, two tasks
    assert "Critical-difference diagram: MMAE" in texts(at, "markdown")


def test_reference_statistics_say_its_seeds_cannot_separate_the_variance(
    reference_home, monkeypatch
):
    from pages.present import variance_tables

    at = run_page(reference_home, monkeypatch, tab="Statistics")
    assert f"**{variance_tables.SECTION_TITLE}**" in texts(at, "markdown")
    captions = texts(at, "caption")
    assert "cannot separate the variance the data make" in captions
    assert "seeds: {splits: 10, inits: 2}" in captions and "Seeds: splits × inits" in captions


@pytest.mark.slow  # three Compare runs of a study with a bootstrap: ~4 s of CPU
def test_a_finished_study_in_a_second_store_reuses_its_statistics_until_it_changes(
    tmp_path, monkeypatch
):
    """The reviewer's tables are cached on the study's content: the same study in another
    store (the reference loaded again, a bundle imported) is not bootstrapped again, and a
    study whose predictions differ is."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    study_id = finished_synthetic_store(first, n_seeds=3, n_patients=20)
    shutil.copyfile(first / "softgrade.duckdb", second / "softgrade.duckdb")
    computed: list[str] = []
    real = study_analysis.paired_table

    def counted(*args: object, **kwargs: object) -> pd.DataFrame:
        computed.append(str(kwargs["path"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(study_analysis, "paired_table", counted)
    shown = [d.value for d in run_page(first, monkeypatch, tab="Statistics").dataframe]
    assert computed and set(computed) == {str(first / "softgrade.duckdb")}
    computed.clear()
    again = [d.value for d in run_page(second, monkeypatch, tab="Statistics").dataframe]
    assert computed == []  # the same study: its tables come from the cache
    assert len(again) == len(shown) and all(a.equals(b) for a, b in zip(again, shown, strict=True))
    with connect(second / "softgrade.duckdb") as con:
        con.execute(
            "UPDATE predictions SET y_pred = (y_pred + 1) % 4 WHERE run_id IN "
            "(SELECT run_id FROM runs WHERE study_id = ? AND selected AND task = 'CPPD')",
            [study_id],
        )
    reviewer_stats.cached_content_key.clear()  # as its few seconds' TTL runs out
    run_page(second, monkeypatch, tab="Statistics")
    assert set(computed) == {str(second / "softgrade.duckdb")}  # changed: computed afresh
