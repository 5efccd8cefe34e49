"""How the Statistics tab writes the careful reviewer's analysis (pages.present.reviewer_tables)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from engine.analysis import paired, power
from pages.present import reviewer_tables as rt


def _per_run(n_seeds: int) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = []
    for task in ("KL", "CPPD"):
        for shift, method in enumerate(("nominal", "binomial", "beta")):
            for seed in range(n_seeds):
                value = 0.5 - 0.05 * shift + rng.normal(0, 0.02)
                rows.append(
                    {"study_id": "s", "task": task, "method": method, "seed": seed}
                    | {m: value for m in ("qwk", "mae", "ms", "ba", "amae", "mmae")}
                )
    return pd.DataFrame(rows)


RATIOS = {"KL": 0.3, "CPPD": 0.3}


@pytest.fixture
def table() -> pd.DataFrame:
    return paired.paired_table(_per_run(6), RATIOS, metrics=("amae",))


def test_p_number_and_interval_texts_say_na_rather_than_none():
    assert rt.p_text(0.0004) == "< 0.001"
    assert rt.p_text(0.1634) == "0.163"
    assert rt.p_text(None) == rt.p_text(math.nan) == "n/a"
    assert rt.number_text(0.12345) == "0.123"
    assert rt.number_text(pd.NA) == "n/a"
    assert rt.interval_text(-0.0291, 0.159) == "[-0.029, 0.159]"
    assert rt.interval_text(math.nan, 0.1) == "n/a"


def test_endpoint_label_names_the_declared_family_primary():
    assert rt.endpoint_label(paired.PRIMARY_FAMILY) == "primary"
    assert rt.endpoint_label("exploratory: KL qwk") == "exploratory"


def test_paired_view_puts_primary_rows_first_with_titled_pairs_and_readings(table):
    view = rt.paired_view(table)
    assert len(view) == len(table) == 6
    assert list(view["Endpoint"]) == ["primary"] * 4 + ["exploratory"] * 2
    assert view.loc[0, "A − B"] == "Nominal − Binomial"
    kl = table[(table["task"] == "KL") & (table["method_b"] == "binomial")].iloc[0]
    row = view[(view["Task"] == "KL") & (view["A − B"] == "Nominal − Binomial")].iloc[0]
    assert row["Mean difference"] == f"{kl['mean_diff']:.3f}"
    assert row["CI (new patients)"] == rt.interval_text(kl["ci_low"], kl["ci_high"])
    assert row["Bootstrap CI"] == "n/a"  # no bootstrap column in this table
    assert "Nominal" in row["Reading"] and "nominal's" not in row["Reading"]
    assert "None" not in view.to_string()


def test_row_reading_keeps_over_seeds_and_new_patients_apart():
    row = {
        "method_a": "nominal",
        "method_b": "binomial",
        "metric": "amae",
        "n_seeds": 20,
        "mean_diff": 0.065,
        "p_corrected": 0.16,
        "p_wilcoxon_holm": 0.004,
    }
    text = rt.row_reading(row)
    assert "consistently over seeds" in text and "not significantly for new patients" in text
    assert text.startswith("Nominal's AMAE is higher than Binomial's")
    assert "needs 2 seeds" in rt.row_reading(row | {"n_seeds": 1, "p_corrected": math.nan})


def test_primary_view_gives_a_verdict_per_row(table):
    view = rt.primary_view(paired.primary_endpoint(table))
    assert len(view) == 4
    assert set(view["Soft method − Nominal"]) == {"Binomial", "Beta"}
    assert set(view["Verdict (α = 0.05, Holm)"]) <= {
        "lower AMAE",
        "higher AMAE",
        "no difference shown",
    }
    assert float(view.loc[0, "AMAE difference"]) < 0  # soft methods err less here


def test_paired_export_keeps_the_jobs_stats_columns_in_order(table):
    export = rt.paired_export(table.assign(boot_ci_low=0.0, boot_ci_high=1.0))
    n = len(paired.PAIRED_COLUMNS)
    assert tuple(export.columns[:n]) == paired.PAIRED_COLUMNS
    assert list(export.columns[n : n + 2]) == ["boot_ci_low", "boot_ci_high"]


def test_seed_shortfall_says_what_one_and_two_seeds_cannot_give():
    assert "One seed" in rt.seed_shortfall(1)
    assert "Two seeds" in rt.seed_shortfall(2)
    assert rt.seed_shortfall(3) is None


def test_friedman_view_says_why_a_task_is_untested():
    frame = pd.DataFrame(
        {
            "task": ["KL", "CPPD"],
            "metric": ["amae", "amae"],
            "n_methods": [3, 2],
            "n_blocks": [6, 6],
            "chi2": [7.0, math.nan],
            "p": [0.03, math.nan],
            "kendall_w": [0.58, math.nan],
        }
    )
    view = rt.friedman_view(frame)
    assert list(view["p"]) == ["0.03", "needs 3 methods and 2 seeds"]
    assert view.loc[1, "χ²"] == "n/a"


def test_anova_view_names_columns_and_blanks_missing_cells():
    frame = pd.DataFrame(
        {
            "factor": ["Method", "Residual"],
            "SS": [0.2, 0.5],
            "df": [2, 18],
            "F": [4.6, math.nan],
            "p": [0.024, math.nan],
            "partial_eta2": [0.338, math.nan],
        }
    )
    view = rt.anova_view(frame)
    assert list(view.columns) == ["Factor", "Sum of squares", "df", "F", "p", "partial η²"]
    assert list(view.loc[1]) == ["Residual", "0.5", "18", "", "", ""]


def test_power_view_says_when_more_seeds_cannot_reach_the_target(table):
    plan = power.power_table(table, chosen_effect=0.001)
    view = rt.power_view(plan)
    assert len(view) == len(table)
    chosen = view["Seeds for 80% (chosen effect)"]
    assert chosen.str.startswith("not reachable").all()  # a tiny effect, ρ = 0.3
    observed = view["Seeds for 80% (observed effect)"]
    assert observed.str.fullmatch(r"\d+").any()


def test_mean_ci_table_writes_mean_and_interval_or_why_not():
    intervals = paired.mean_intervals(_per_run(4), RATIOS, metrics=("amae", "qwk"))
    view = rt.mean_ci_table(intervals, ["amae", "qwk"])
    assert list(view.columns) == ["Task", "Method", "Seeds", "AMAE ↓", "QWK ↑"]
    assert view["AMAE ↓"].str.fullmatch(r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]").all()
    one = paired.mean_intervals(_per_run(1), RATIOS, metrics=("amae",))
    assert rt.mean_ci_table(one, ["amae"])["AMAE ↓"].str.endswith("needs 2 seeds").all()
    assert "corrected resampled t interval" in rt.mean_ci_note(intervals)


def test_paired_latex_is_a_table_with_the_corrected_p():
    latex = rt.paired_latex(paired.paired_table(_per_run(6), RATIOS, metrics=("amae",)), "AMAE")
    assert latex.startswith(r"\begin{table}") and "p corrected" in latex
    assert rt.paired_latex(pd.DataFrame(), "AMAE") == ""


def test_seeds_plan_text_gives_seeds_and_gpu_hours_or_the_ceiling():
    assert "**12 seeds**" in rt.seeds_plan_text(12, 2.5, 0.9)
    assert "about 30 GPU hours" in rt.seeds_plan_text(12, 2.5, 0.9)
    assert "GPU hours" not in rt.seeds_plan_text(12, None, 0.9)
    assert "even unlimited seeds give 40%" in rt.seeds_plan_text(None, 2.5, 0.4)
    assert "effect other than 0" in rt.seeds_plan_text(None, None, math.nan)
