"""The Compare page on results imported from another tool (`softgrade import-results`):
Table 4 and the Statistics tab work as on a trained study, methods outside the registry
shown by name, and a file without split sizes says which intervals it cannot give."""

from __future__ import annotations

from tests.helpers.pages import run_page, texts
from tests.jobs.services.test_results_io import imported_study, per_seed_rows


def test_compare_page_shows_imported_per_seed_metrics_with_their_methods(
    home, tmp_path, capsys, monkeypatch
):
    csv = tmp_path / "other_tool.csv"
    per_seed_rows().to_csv(csv, index=False)
    imported_study(capsys, str(csv))
    at = run_page(home, monkeypatch)
    table = at.table[0].value
    kl = table[table["Task"] == "KL"]
    assert {"Nominal", "CORN", "ours"} <= set(kl["Method"])  # registry labels; unknown as given
    assert set(kl.loc[kl["Method"] != "Average", "Seeds"]) == {"5"}
    stats = run_page(home, monkeypatch, tab="Statistics")
    paired = [f.value for f in stats.dataframe if "A − B" in getattr(f.value, "columns", [])]
    assert paired, "the paired table is shown"
    pairs = set(paired[0]["A − B"])
    assert {"ours − CORN", "ours − Nominal"} <= pairs, pairs


def test_statistics_tab_names_the_intervals_a_file_without_sizes_cannot_give(
    home, tmp_path, capsys, monkeypatch
):
    csv = tmp_path / "no_sizes.csv"
    per_seed_rows(sizes=False).to_csv(csv, index=False)
    imported_study(capsys, str(csv))
    at = run_page(home, monkeypatch, tab="Statistics")
    assert "No split sizes for CPPD, KL" in texts(at, "info")
    assert "n_train and n_test" in texts(at, "info")


def test_robustness_says_what_it_cannot_show_without_the_runs_validation_scores(
    home, tmp_path, capsys, monkeypatch
):
    csv = tmp_path / "other_tool.csv"
    per_seed_rows().to_csv(csv, index=False)
    imported_study(capsys, str(csv))
    at = run_page(home, monkeypatch, tab="Robustness")
    info = texts(at, "info")
    assert "needs every run's validation AMAE, and this study holds it for 0 of its 30 runs" in info
    assert "cannot show how the search budget shaped each method's selection" in info
    assert not any("configurations tried" in str(c.proto.spec) for c in at.get("vega_lite_chart"))
