"""The texts and tables of issue 21's reviewer statistics (`pages.present.inference_tables`)
and the KLD parts chart, on small hand-made inputs with known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pages.present import charts
from pages.present import inference_tables as it


def parts_row(method: str, marginal: float, conditional: float) -> dict:
    kld = marginal + conditional
    return {
        "method": method,
        "n_seeds": 3,
        "kld": kld,
        "kl_marginal": marginal,
        "cppd_given_kl": conditional,
        "marginal_share": marginal / kld,
        "mi_true": 0.065,
        "mi_pred": 0.075,
        "driver": "kl_marginal" if marginal >= conditional else "cppd_given_kl",
    }


PARTS = pd.DataFrame([parts_row("nominal", 0.6, 0.4), parts_row("beta", 0.1, 0.2)])
TRUTH = np.array([[16.0, 0], [30, 4], [22, 8], [20, 0], [0, 0]])  # shares KL 0: 16 %
# Predicted: KL 0 at 5.4 %, the rest spread over KL 1-3.
PREDICTED = np.array([[5.4, 0], [40, 3], [30, 1.6], [20, 0], [0, 0]])


def test_p_and_interval_texts():
    assert it.p_text(0.0004) == "< 0.001"
    assert it.p_text(0.16234) == "0.162"
    assert it.p_text(float("nan")) == ""
    assert it.interval_text(-0.0291, 0.159, 3) == "[-0.029, 0.159]"
    assert it.interval_text(None, 1.0) == ""


def test_kld_parts_frame_and_long_form():
    frame = it.kld_parts_frame(PARTS)
    assert list(frame["Method"]) == ["Nominal", "Beta"]
    assert list(frame["KL-marginal share"]) == ["60.0 %", "33.3 %"]
    long = it.kld_parts_long(PARTS)
    assert list(long["part"]) == ["KL marginal", "CPPD given KL"] * 2
    assert long.groupby("method")["nats"].sum().to_dict() == pytest.approx(
        {"nominal": 1.0, "beta": 0.3}
    )


def test_kl_marginal_gap_names_the_grade_that_adds_most_to_the_marginal_part():
    grade, predicted, true = it.kl_marginal_gap(PREDICTED, TRUTH)
    assert grade == 0  # under-predicted KL 0 adds most to Σ p log(p/q)
    assert predicted == pytest.approx(0.054)
    assert true == pytest.approx(0.16)


def test_kld_part_reading_names_the_driving_part():
    nominal = it.kld_part_reading(PARTS.iloc[0].to_dict(), PREDICTED, TRUTH)
    assert nominal.startswith("Nominal's KLD is mostly its KL marginal (0.600 of 1.000 nats")
    assert "it predicts KL 0 for 5.4 % of films against 16.0 %" in nominal
    assert "about as strongly as the truth" in nominal  # 0.075 within 25 % of 0.065
    beta = it.kld_part_reading(PARTS.iloc[1].to_dict(), PREDICTED, TRUTH)
    assert beta.startswith("Beta's KLD is mostly the CPPD-given-KL part (0.200 of 0.300 nats)")
    assert "its KL marginal adds 0.100" in beta


def test_kld_parts_bars_stacks_the_two_parts_per_method():
    spec = charts.kld_parts_bars(it.kld_parts_long(PARTS)).to_dict()
    assert spec["mark"]["type"] == "bar"
    assert spec["encoding"]["x"]["stack"] == "zero"
    assert spec["encoding"]["color"]["field"] == "part"
    assert spec["encoding"]["y"]["sort"] == ["Nominal", "Beta"]


PAIRED = pd.DataFrame(
    [
        {
            "task": "KL", "metric": "amae", "method_a": "nominal", "method_b": "binomial",
            "n_seeds": 20, "mean_diff": 0.065, "ci_low": -0.029, "ci_high": 0.159,
            "p_corrected": 0.162, "p_wilcoxon": 0.0005, "p_wilcoxon_holm": 0.0043,
            "d_z": 1.01, "rank_biserial": 0.83, "test_train_ratio": 0.43,
            "rho_assumed": 0.3007, "r_break_even": 0.18, "p_r0": 0.0002, "p_r0.1": 0.0175,
            "p_r0.2": 0.0582, "verdict": "inconclusive", "rope": 0.01,
        },
        {
            "task": "KL", "metric": "amae", "method_a": "nominal", "method_b": "beta",
            "n_seeds": 1, "mean_diff": 0.1, "ci_low": np.nan, "ci_high": np.nan,
            "p_corrected": np.nan, "p_wilcoxon": np.nan, "p_wilcoxon_holm": np.nan,
            "d_z": np.nan, "rank_biserial": np.nan, "test_train_ratio": 0.43,
            "rho_assumed": 0.3007, "r_break_even": np.nan, "p_r0": np.nan, "p_r0.1": np.nan,
            "p_r0.2": np.nan, "verdict": "inconclusive", "rope": 0.01,
        },
    ]
)  # fmt: skip


def test_paired_frame_sets_the_corrected_test_beside_the_wilcoxon():
    frame = it.paired_frame(PAIRED)
    first = frame.iloc[0]
    assert first["Metric"] == "AMAE ↓"
    assert first["95 % CI (corrected, NB ρ = 0.30)"] == "[-0.0290, 0.1590]"
    assert (first["p (corrected, NB ρ = 0.30)"], first["p Wilcoxon (Holm)"]) == ("0.162", "0.0043")
    assert (
        first["p at ρ = 0 · 0.09 · 0.17 · assumed"] == "< 0.001 · 0.0175 · 0.0582 · 0.162 (ρ 0.30)"
    )
    assert first["Break-even ρ (p = 0.05)"] == "0.15"
    assert first["Verdict (ROPE ± 0.01)"] == "inconclusive"
    assert "on most seeds (Wilcoxon" in first["Reading"] and "ρ = 0.30" in first["Reading"]
    assert "new patients" not in frame.to_string()
    assert frame.iloc[1]["Reading"] == "Too few seeds to test."
    assert (
        frame.iloc[1]["Verdict (ROPE ± 0.01)"] == ""
        and frame.iloc[1]["Break-even ρ (p = 0.05)"] == ""
    )
    assert it.paired_frame(PAIRED, metric_label={"amae": "A"}).iloc[0]["Metric"] == "A"


UNC = pd.DataFrame(
    {
        "task": ["KL", "CPPD", "KL"],
        "method": ["beta", "nominal", "nominal"],
        "n_seeds": [20, 20, 20],
        "ece": [0.055, 0.08, 0.09],
        "ci_low": [0.047, 0.07, 0.08],
        "ci_high": [0.065, 0.09, 0.10],
        "floor": [0.049, 0.033, 0.045],
        "floor_high": [0.058, 0.040, 0.055],
        "excess": [0.006, 0.047, 0.045],
    }
)


def test_calibration_frame_is_in_the_papers_order():
    frame = it.calibration_frame(UNC)
    assert list(zip(frame["Task"], frame["Method"], strict=True)) == [
        ("CPPD", "Nominal"), ("KL", "Nominal"), ("KL", "Beta"),
    ]  # fmt: skip
    assert frame.iloc[2]["95 % CI"] == "[0.0470, 0.0650]"


def test_calibration_reading_gives_the_floor_and_who_is_within_it():
    text = it.calibration_reading(UNC)
    assert "ECE of 0.033–0.049 on these films" in text
    assert "up to 0.010 above its mean" in text
    assert text.endswith("Beta (KL: ECE 0.055, 95 % CI [0.047, 0.065]).")
    assert "no evidence of miscalibration" in text and "not evidence of calibration" in text
    assert "indistinguishable" not in text
    assert it.calibration_reading(UNC.iloc[:0]) == ""


def test_temperature_frame_averages_runs_over_seeds():
    runs = pd.DataFrame(
        {
            "run_id": ["a", "b", "c"],
            "task": ["KL", "KL", "KL"],
            "method": ["beta", "nominal", "nominal"],
            "seed": [0, 0, 1],
            "temperature": [0.8, 1.2, 1.4],
            "ece_before": [0.05, 0.1, 0.2],
            "ece_after": [0.06, 0.05, 0.07],
            "rps_before": [0.3, 0.4, 0.5],
            "rps_after": [0.3, 0.35, 0.45],
        }
    )
    frame = it.temperature_frame(runs)
    assert list(frame["Method"]) == ["Nominal", "Beta"]
    nominal = frame.iloc[0]
    assert (nominal["Seeds"], nominal["Temperature"]) == (2, 1.3)
    assert nominal["ECE before"] == pytest.approx(0.15)


TRUTH_TABLE = pd.DataFrame(
    {
        "task": ["KL", "KL", "KL"],
        "method": ["nominal", "binomial", "beta"],
        "metric": ["amae"] * 3,
        "n_seeds": [20] * 3,
        "mean_recorded": [0.73, 0.57, 0.53],
        "mean_true": [0.70, 0.53, 0.50],
        "shift": [-0.03, -0.04, -0.03],
        "better_on_truth": [True] * 3,
        "shift_vs_nominal": [np.nan, -0.010, 0.004],
        "ci_low": [np.nan, -0.015, -0.02],
        "ci_high": [np.nan, -0.005, 0.03],
        "p_corrected": [np.nan, 0.01, 0.7],
    }
)


def test_truth_frame_leaves_nominals_comparison_blank():
    frame = it.truth_frame(TRUTH_TABLE)
    assert list(frame["Method"]) == ["Nominal", "Binomial", "Beta"]
    assert frame.iloc[0]["Shift vs Nominal"] == "" and frame.iloc[0]["p (corrected)"] == ""
    assert frame.iloc[1][it.CI_HEADER] == "[-0.0150, -0.0050]"


def test_truth_readings_answer_the_question_per_soft_method():
    lines = it.truth_readings(TRUTH_TABLE)
    assert len(lines) == 2
    assert lines[0].startswith("KL: Binomial gains more than Nominal against the truth")
    assert "difference of shifts -0.010 AMAE" in lines[0]
    assert lines[1].startswith("KL: no evidence that Beta gains more or less than Nominal")
    assert "not evidence of no difference" in lines[1] and "anywhere in [-0.020, 0.030]" in lines[1]
    assert "no sign" not in lines[1]
    assert it.truth_readings(TRUTH_TABLE, "qwk") == []


def test_budget_sentences():
    sentence = it.search_budget_sentence({"exponential": 15, "nominal": 3, "beta": 6})
    assert "(Nominal 3, Beta 6, Exponential 15 configurations per task and seed)" in sentence
    assert it.search_budget_sentence({}) == ""
    why = it.budget_unavailable_sentence(1600, 1800)
    assert "holds them for 200 of its 1800 runs" in why
    assert "softgrade export STUDY_ID --all-test-predictions" in why and "import-study" in why


def test_budget_table_frame_and_draws_sentence():
    table = pd.DataFrame(
        {
            "task": ["KL", "KL"], "method": ["beta", "nominal"], "metric": ["amae"] * 2,
            "configs": [6, 3], "mean_study": [0.52, 0.73], "mean_matched": [0.55, 0.73],
            "draw_low": [0.51, 0.73], "draw_high": [0.6, 0.73],
        }
    )  # fmt: skip
    frame = it.budget_table_frame(table)
    assert list(frame["Method"]) == ["Nominal", "Beta"]
    assert frame.iloc[1]["Range over draws"] == "[0.5100, 0.6000]"
    draws = pd.DataFrame(
        {
            "draw": [0, 0, 1, 1],
            "task": ["KL"] * 4,
            "method": ["beta", "binomial"] * 2,
            "mean_diff": [-0.1, -0.05, -0.02, 0.01],
            "p_corrected": [0.01, 0.2, 0.3, 0.9],
            "p_corrected_holm": [0.02, 0.4, 0.6, 1.0],
        }
    )
    sentence = it.budget_draws_sentence(draws, 3)
    assert sentence.startswith("Over 2 draws of 3 configurations per method")
    assert "below Nominal's in 75.0 % of the comparisons" in sentence
    assert "significantly so (corrected test, Holm over the primary family) in 25.0 %." in sentence
    # The share is described, not offered as an inference (issue 29, item 6).
    assert sentence.endswith(it.DRAWS_NOT_A_TEST)
    assert "how much the verdict depends on which configurations were drawn" in sentence
    assert "it is not a test" in sentence and "not independent samples" in sentence
    assert it.budget_draws_sentence(draws.iloc[:0], 3) == ""


def test_no_splits_reason_names_the_task():
    assert it.no_splits_reason("CPPD").endswith("the store records no splits for CPPD.")


def test_table4_beside_the_paper_says_how_the_protocols_differ():
    from pages.present import tables

    assert tables.PAPER_PROTOCOL_NOTE in tables.table4_note(with_paper=True)
    assert "ImageNet" not in tables.table4_note(with_paper=False)
    assert "random weights on the phantom" in tables.PAPER_PROTOCOL_NOTE


def test_table4_latex_beside_the_paper_says_how_the_protocols_differ():
    from engine.analysis import compare
    from pages.present import tables

    published = compare.published_table()
    if published is None:
        pytest.skip("the paper's published table is not in this checkout")
    ours = published.assign(row="method", method=published["base_method"])
    summary = compare.with_published(ours, published)
    latex = tables.summary_latex(summary, pd.DataFrame(index=summary.index))
    assert "ImageNet weights" in latex.split(r"\label")[0]
    assert "ImageNet" not in tables.summary_latex(ours, pd.DataFrame(index=ours.index))


def test_truth_readings_of_many_methods_without_evidence_share_one_sentence():
    methods = ["nominal", "binomial", "beta", "triangular", "exponential", "geometric", "corn"]
    n = len(methods)
    table = pd.DataFrame(
        {
            "task": "CPPD",
            "method": methods,
            "metric": "amae",
            "shift_vs_nominal": [np.nan] + [0.004] * (n - 2) + [-0.02],
            "ci_low": [np.nan] + [-0.02] * (n - 1),
            "ci_high": [np.nan] + [0.03] * (n - 2) + [-0.01],
            "p_corrected": [np.nan] + [0.7] * (n - 2) + [0.01],
        }
    )
    lines = it.truth_readings(table)
    assert lines[0].startswith("CPPD: CORN gains more than Nominal")
    (grouped,) = lines[1:]
    assert grouped.startswith(
        "CPPD: no evidence that any of Binomial, Beta, Triangular, Exponential, Geometric "
    )
    assert "not evidence of no difference" in grouped


def test_paired_frame_opens_with_the_verdict_and_says_why_none_is_estimable():
    no_spread = PAIRED.iloc[[0]].assign(
        p_corrected=np.nan, verdict="not estimable: no spread across seeds", p_corrected_holm=np.nan
    )
    frame = it.paired_frame(pd.concat([PAIRED.iloc[[0]].assign(p_corrected_holm=0.64), no_spread]))
    columns = list(frame.columns)
    assert columns.index("Verdict (ROPE ± 0.01)") == columns.index("p corrected (Holm)") - 1
    assert columns.index("Verdict (ROPE ± 0.01)") < columns.index("p (corrected, NB ρ = 0.30)")
    second = frame.iloc[1]
    assert second["Verdict (ROPE ± 0.01)"] == "not estimable: no spread across seeds"
    assert second["Reading"].startswith("No verdict: not estimable: no spread across seeds")
