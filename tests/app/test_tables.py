"""pages.present.tables: how the comparison pages write numbers (Table 4 text, LaTeX, CSV, p-values,
progress sentences, exports)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from engine.analysis import compare, stats
from engine.analysis.compare import StudyProgress
from engine.analysis.metrics import METRICS
from engine.analysis.relationship import SeedRelationship
from engine.methods import get_method, paper_methods
from pages.present import exports, stat_tables, tables
from tests.helpers.predictions import confusion_counts_of, synthetic_predictions

METHODS = paper_methods()


@pytest.fixture(scope="module")
def per_run() -> pd.DataFrame:
    return compare.per_run_metrics(confusion_counts_of(synthetic_predictions()))


def test_method_title_is_the_registry_label_and_keeps_the_study_of_a_label():
    assert tables.method_title("beta · first") == "Beta · first"
    assert tables.method_title("cdw_ce") == get_method("cdw_ce").label
    assert tables.method_title("binomial_layer · b") == get_method("binomial_layer").label + " · b"


def test_method_title_reads_an_unknown_name_as_given():
    assert tables.method_title("my_imported_loss") == "my_imported_loss"
    assert tables.method_title("my_imported_loss · other") == "my_imported_loss · other"


def test_metric_name_says_which_way_is_better():
    assert tables.metric_name("amae") == "AMAE (lower is better)"
    assert tables.metric_name("qwk") == "QWK (higher is better)"


def test_study_label_names_status_seeds_and_date():
    row = {
        "name": "pilot",
        "status": "running",
        "spec": '{"seeds": [0, 1]}',
        "created_at": pd.Timestamp("2025-03-04 05:06:07"),
    }
    assert tables.study_label(row) == "pilot · running · 2 seeds · 2025-03-04 05:06"
    assert tables.study_label({**row, "spec": {"seeds": [3]}}).endswith(
        "· 1 seed · 2025-03-04 05:06"
    )


def test_progress_message_says_how_far_a_partial_study_is():
    live = StudyProgress("s", "live", "running", (0, 1, 2), (0,))
    done = StudyProgress("t", "done", "succeeded", (0, 1, 2), (0, 1, 2))
    assert "still running" in tables.progress_message(live)
    assert "1 of 3 seeds" in tables.progress_message(live)
    assert "partial" in tables.progress_message(live)
    assert tables.progress_message(done) is None
    cancelled = StudyProgress("c", "x", "cancelled", (0, 1), (0,))
    assert "cancelled before the end" in tables.progress_message(cancelled)
    waiting = StudyProgress("q", "y", "running", (0, 1), ())
    assert "no seed has finished yet" in tables.progress_message(waiting)


def test_format_summary_text_and_missing_std():
    summary = pd.DataFrame(
        {
            "task": ["KL"],
            "method": ["beta"],
            "base_method": ["beta"],
            "row": ["method"],
            "n_seeds": [1],
            **{f"{m}_mean": [0.5714] for m in METRICS},
            **{f"{m}_std": [np.nan] for m in METRICS},
        }
    )
    summary.loc[0, "qwk_std"] = 0.1774
    shown = tables.format_summary(summary)
    assert shown.loc[0, "QWK ↑"] == "0.571 ± 0.177"
    assert shown.loc[0, "AMAE ↓"] == "0.571"  # one seed: the value alone
    assert shown.loc[0, "Method"] == "Beta"
    assert list(shown.columns[3:]) == ["QWK ↑", "MAE ↓", "MS ↑", "BA ↑", "AMAE ↓", "MMAE ↓"]


def test_summary_latex_marks_best_bold_and_second_italic(per_run):
    summary = compare.summary_table(per_run)
    marks = compare.rank_marks(summary)
    latex = tables.summary_latex(summary, marks)
    # Best in \mathbf, as the paper typesets it: \textbf would not embolden math digits.
    kl = summary[(summary["task"] == "KL") & (summary["row"] == "method")]
    best = kl.loc[kl["amae_mean"].idxmin()]
    cell = rf"$\mathbf{{{best['amae_mean']:.3f}_{{{best['amae_std']:.3f}}}}}$"
    assert cell in latex
    assert r"\mathit{" in latex
    assert latex.count(r"\\") == 1 + len(summary)  # header + one line per row
    assert r"\toprule\toprule" in latex and r"\end{table*}" in latex
    assert "KL & Average &" in latex


def test_summary_csv_round_trips_numbers(per_run):
    summary = compare.summary_table(per_run)
    back = pd.read_csv(io.StringIO(tables.summary_csv(summary)))
    assert len(back) == len(summary)
    np.testing.assert_allclose(back["amae_mean"], summary["amae_mean"])
    assert set(back["row"]) == {"method", "average"}


def test_titled_orders_methods_as_the_paper_and_capitalises():
    scores = pd.DataFrame({"method": ["triangular", "nominal", "beta"], "seed": 0, "value": 1.0})
    assert list(tables.titled(scores)["method"]) == ["Nominal", "Beta", "Triangular"]
    assert list(METHODS[:1]) == ["nominal"]


def test_relationship_exports_and_table7_frame():
    table = np.zeros((5, 4), dtype=int)
    table[0, 0], table[4, 3] = 7, 3
    results = [
        SeedRelationship(0, "beta", table, 0.12, 1.5, table, 10),
        SeedRelationship(1, "beta", table, 0.20, 2.5, table, 10),
        SeedRelationship(2, "beta", table, 0.10, 0.5, table, 10),
        SeedRelationship(0, "nominal", table, 0.30, 3.0, table, 10),
        SeedRelationship(1, "nominal", table, 0.40, 4.0, table, 10),
        SeedRelationship(2, "nominal", table, 0.35, 3.5, table, 10),
    ]
    seeds = stat_tables.relationship_seed_frame(results)
    assert seeds.loc[0, "pred_kl0_cppd0"] == 7 and seeds.loc[0, "pred_kl4_cppd3"] == 3
    assert list(seeds["kld"]) == [0.12, 0.20, 0.10, 0.30, 0.40, 0.35]
    scores = pd.DataFrame({"method": seeds["method"], "seed": seeds["seed"], "value": seeds["kld"]})
    table7 = stat_tables.kld_tests_frame(
        stats.shapiro_by_method(scores),
        stats.kruskal_across_methods(scores),
        stats.wilcoxon_pairwise(scores, correction="none"),
    )
    assert list(table7["test"]) == [
        "Normality (Shapiro–Wilk)",
        "Normality (Shapiro–Wilk)",
        "Global (Kruskal–Wallis)",
        "Pairwise (Wilcoxon, unadjusted)",
    ]
    assert table7["models"].iloc[-1] == "Nominal vs. Beta"  # later − earlier of the given order
    latex = stat_tables.frame_latex(table7, caption="KLD tests", label="tab:kld")
    assert r"\label{tab:kld}" in latex and "Shapiro--Wilk" in latex
    assert latex.count(r"\\") == 1 + len(table7)


def test_frame_latex_formats_p_values_and_escapes_text():
    frame = pd.DataFrame(
        {"factor": ["Method × Task", "a_b"], "DF": [4, 190], "F": [1.289, np.nan], "p": [1e-5, 0.2]}
    )
    latex = stat_tables.frame_latex(frame, caption="ANOVA", label="tab:anova")
    assert r"Method $\times$ Task & 4 & $1.289$ & $<0.001$ \\" in latex
    assert r"a\_b & 190 & -- & $0.2$ \\" in latex


def test_format_test_table_reads_like_a_paper_table():
    table = pd.DataFrame(
        {
            "method_a": ["beta"],
            "n_seeds": [20],
            "median_diff": [0.012345],
            "p": [1.9e-6],
            "p_adj": [0.1540],
            "significant": [False],
            "S1": [np.nan],
        }
    )
    out = stat_tables.format_test_table(table)
    assert list(out.columns) == [
        "Method A",
        "Paired seeds",
        "Median A − B",
        "p",
        "Adjusted p",
        "Differ (α = 0.05)",
        "S1",
    ]
    assert list(out.iloc[0]) == ["beta", "20", "0.01235", "< 0.001", "0.154", "no", ""]


def test_tables_csv_names_each_table():
    text = stat_tables.tables_csv(
        {"a": pd.DataFrame({"x": [1]}), "b": pd.DataFrame({"y": [2]}), "c": pd.DataFrame()}
    )
    back = pd.read_csv(io.StringIO(text))
    assert list(back["table"]) == ["a", "b"]


@pytest.mark.parametrize(("n_seeds", "blocked"), [(2, True), (5, True), (6, False), (20, False)])
def test_wilcoxon_seed_shortfall_matches_the_smallest_exact_p(n_seeds, blocked):
    rng = np.random.default_rng(n_seeds)
    scores = pd.DataFrame(
        {
            "method": ["a"] * n_seeds + ["b"] * n_seeds,
            "seed": list(range(n_seeds)) * 2,
            "value": np.concatenate([rng.random(n_seeds), rng.random(n_seeds) + 2]),
        }
    )
    result = stats.wilcoxon_pairwise(scores, correction="none")
    message = stat_tables.wilcoxon_seed_shortfall(result.table)
    # b is above a on every seed: the p-value is the smallest the exact test can give.
    assert result.table["p"].iloc[0] == pytest.approx(2 / 2**n_seeds)
    assert (message is not None) == blocked
    if blocked:
        assert "at least 6 seeds" in message
    assert stat_tables.wilcoxon_seed_shortfall(result.table.iloc[0:0]) is None


def test_seed_range_is_one_number_or_a_range():
    assert tables.seed_range(pd.Series([3, 3])) == "3"
    assert tables.seed_range(pd.Series([2, 3, 3])) == "2–3"


def test_table4_note_mentions_the_papers_rows_only_when_shown():
    assert "**bold** is the best" in tables.table4_note(with_paper=False)
    assert "Grey rows" not in tables.table4_note(with_paper=False)
    assert "Grey rows are the paper's" in tables.table4_note(with_paper=True)


def test_missing_tasks_note_names_the_tasks_without_predictions():
    assert tables.missing_tasks_note({"KL", "CPPD"}, ["KL"]) == (
        "No CPPD predictions in these studies yet; showing KL only."
    )
    assert tables.missing_tasks_note({"KL"}, ["CPPD", "KL"]) is None


def test_no_joint_reason_says_which_task_is_missing_or_that_seeds_are_running():
    assert "KL predictions only" in stat_tables.no_joint_reason({"KL"}, partial=False)
    assert "run a study with CPPD too" in stat_tables.no_joint_reason({"KL"}, partial=False)
    assert "has finished yet" in stat_tables.no_joint_reason({"KL", "CPPD"}, partial=True)
    assert "No test image was graded" in stat_tables.no_joint_reason({"KL", "CPPD"}, partial=False)


def _method_results(n_seeds: int = 6) -> tuple:
    rng = np.random.default_rng(0)
    scores = pd.DataFrame(
        {
            "method": ["Beta"] * n_seeds + ["Nominal"] * n_seeds,
            "seed": list(range(n_seeds)) * 2,
            "value": rng.random(2 * n_seeds),
        }
    )
    return (
        stats.shapiro_by_method(scores),
        stats.kruskal_across_methods(scores),
        stats.wilcoxon_pairwise(scores, correction="none"),
    )


def test_method_test_tables_and_stats_latex_name_every_table(per_run):
    scores = compare.score_frame(per_run, "amae")
    anova, tukey = stats.two_way_anova(scores), stats.tukey_hsd(scores, descending=True)
    found = stat_tables.method_test_tables(*_method_results(), anova, tukey)
    assert list(found) == [
        "shapiro",
        "kruskal",
        "wilcoxon",
        "anova",
        "tukey_pairs",
        "tukey_subsets",
    ]
    assert found["tukey_subsets"] is tukey.subsets
    latex = stat_tables.stats_latex(found, "AMAE")
    assert r"\caption{anova (AMAE)}" in latex and r"\label{tab:tukey_pairs}" in latex
    assert stat_tables.stats_latex({"anova": pd.DataFrame()}, "AMAE") == "% no test could be run\n"


def test_relationship_latex_holds_the_summary_and_table7():
    table = np.ones((5, 4), dtype=int)
    summary = pd.DataFrame(
        [
            {
                "method": "beta",
                "n_seeds": 3,
                "kld_mean": 0.1,
                "kld_std": 0.1,
                "mae_mean": 1.0,
                "mae_std": 0.0,
                "mean_table": table,
            }
        ]
    )
    table7 = stat_tables.kld_tests_frame(*_method_results())
    latex = stat_tables.relationship_latex(summary, table7, 1e-6)
    assert r"\label{tab:kld_summary}" in latex and r"\label{tab:kld_stats}" in latex
    assert r"$\varepsilon = 1e-06$" in latex and "Beta &" in latex


def test_correction_choices_open_on_holm_with_the_papers_unadjusted_second():
    from engine.analysis.stats import CORRECTIONS

    assert stat_tables.CORRECTION_ORDER[:2] == ("holm", "none")
    assert sorted(stat_tables.CORRECTION_ORDER) == sorted(CORRECTIONS)
    assert stat_tables.correction_label("holm") == "Holm (SoftGrade's default)"
    assert stat_tables.correction_label("none") == "none — as in the paper (unadjusted p-values)"
    assert stat_tables.correction_label("bonferroni") == "Bonferroni"


def _probability_summary() -> pd.DataFrame:
    from engine.analysis.probability_metrics import PROBABILITY_METRICS

    rows = []
    for task, methods in (("CPPD", ("nominal", "beta")), ("KL", ("nominal", "beta"))):
        for i, method in enumerate(methods):
            row = {"task": task, "method": method, "n_seeds": 3}
            for j, metric in enumerate(PROBABILITY_METRICS):
                row[f"{metric}_mean"] = 0.1 * (j + 1) + 0.01 * i
                row[f"{metric}_std"] = 0.001 * (j + 1) if task == "KL" else float("nan")
            rows.append(row)
    return pd.DataFrame(rows)


def test_probability_summary_frame_shows_mean_and_std_per_metric():
    shown = stat_tables.probability_summary_frame(_probability_summary())
    assert list(shown.columns[:3]) == ["Task", "Method", "Seeds"]
    assert list(shown["Method"]) == ["Nominal", "Beta", "Nominal", "Beta"]
    kl_beta = shown[(shown["Task"] == "KL") & (shown["Method"] == "Beta")].iloc[0]
    assert kl_beta["RPS"] == "0.110 ± 0.001"
    assert shown.iloc[0]["RPS"] == "0.100"  # no std: one seed, the value alone


def test_probability_csv_under_the_card_round_trips_numbers():
    summary = _probability_summary()
    card = ({"study": "knees", "code": "1.2"},)
    csv = exports.headed(stat_tables.probability_csv(summary), card, "probabilities.csv")
    assert csv.startswith("# study: knees\n# code: 1.2\ntask,method,n_seeds,rps_mean,rps_std,")
    back = pd.read_csv(io.StringIO(csv), comment="#")
    assert back["rps_mean"].tolist() == pytest.approx(summary["rps_mean"].tolist())
    assert back["ece_cum_std"].isna().sum() == 2  # CPPD's missing std stays missing


def test_probability_latex_is_a_table4_style_table_under_the_card():
    card = ({"study": "knees"},)
    latex = exports.headed(stat_tables.probability_latex(_probability_summary()), card, "p.tex")
    lines = latex.splitlines()
    assert lines[0] == "% study: knees" and lines[1] == r"\begin{table*}[!htbp]"
    header = "Dataset & Soft-labelling & Seeds & RPS & ECE (top label) & ECE (P(grade $>$ k))"
    assert header in latex
    assert r"KL & Beta & 3 & $0.110_{0.001}$" in latex
    assert r"CPPD & Nominal & 3 & $0.100$" in latex  # no std, no subscript
    assert latex.count(r"\midrule") == 2  # under the header, and between the tasks
