"""How the Statistics tab writes the careful reviewer's analysis (pages.present.reviewer_tables)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from engine.analysis import paired, power
from pages.present import power_tables
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
    assert view.loc[0, "A − B"] == "Binomial − Nominal"
    kl = table[(table["task"] == "KL") & (table["method_a"] == "binomial")].iloc[0]
    row = view[(view["Task"] == "KL") & (view["A − B"] == "Binomial − Nominal")].iloc[0]
    interval = rt.interval_text(kl["ci_low"], kl["ci_high"])
    assert row["Mean A − B [95 % CI, corrected, NB ρ = 0.23]"] == (
        f"{kl['mean_diff']:.3f} {interval}"
    )
    assert "Bootstrap CI" not in view.columns
    assert "Nominal" in row["Reading"] and "nominal's" not in row["Reading"]
    assert row["Verdict (ROPE ± 0.01)"] in {"Binomial better", "Nominal better"} | {
        "equivalent",
        "inconclusive",
    }
    assert row["p at ρ = 0 · 0.09 · 0.17 · assumed"].endswith("(ρ 0.23)")
    assert "None" not in view.to_string() and "new patients" not in view.to_string()


def test_the_compact_view_puts_the_verdict_and_holm_p_right_after_the_interval(table):
    compact = rt.compact_view(table)
    assert list(compact.columns) == [
        "Task",
        "A − B",
        "Seeds",
        "Mean A − B [95 % CI, corrected, NB ρ = 0.23]",
        "Verdict (ROPE ± 0.01)",
        "p corrected (Holm)",
        "Endpoint",
    ]
    details = rt.details_view(table)
    assert list(details.columns[:2]) == ["Task", "A − B"]
    assert {"TOST p", "Reading", "Effect size dz", "p Wilcoxon (exact)"} <= set(details.columns)
    assert "Verdict (ROPE ± 0.01)" not in details.columns


def test_the_primary_view_opens_with_its_verdict_and_holm_p(table):
    view = rt.primary_view(paired.primary_endpoint(table))
    first = list(view.columns[: rt.PRIMARY_COMPACT])
    assert first[-2:] == ["Verdict (ROPE ± 0.01)", "p (Holm over the family)"]


def test_an_exploratory_verdict_keeps_its_label_with_the_method_titled():
    assert rt.verdict_text("binomial better (exploratory)") == "Binomial better (exploratory)"
    assert rt.verdict_text("binomial better") == "Binomial better"
    assert rt.verdict_text("not estimable: fewer than 3 seeds (2)").startswith("not estimable")


def test_the_result_sentence_counts_every_verdict():
    table = pd.DataFrame(
        {
            "task": ["KL", "KL", "CPPD", "CPPD"],
            "method_a": ["nominal", "nominal", "beta", "nominal"],
            "method_b": ["binomial", "beta", "binomial", "beta"],
            "verdict": [
                "binomial better",
                "equivalent",
                "inconclusive",
                "not estimable: no spread across seeds",
            ],
        }
    )
    text = rt.result_sentence(table, "AMAE")
    assert text == (
        "Result on AMAE: 1 of 4 pairs name a better method (KL: Binomial better than "
        "Nominal), 1 are equivalent within the ROPE, 1 inconclusive and 1 not estimable "
        "(too few seeds or no spread)."
    )


def test_paired_views_share_one_set_of_human_headers(table):
    """Every header of the Statistics tab's paired, primary and bootstrap views comes from
    `PAIRED_HEADERS` (ρ and ROPE named where the view shows them): no snake_case column
    name of the stats table, no True/False cell."""
    boot = table.assign(boot_ci_low=0.01, boot_ci_high=0.02, within_seed_sd=0.0)
    views = (
        rt.paired_view(table),
        rt.primary_view(paired.primary_endpoint(table)),
        rt.bootstrap_view(boot),
    )
    known = set(rt.PAIRED_HEADERS.values()) | set(rt.paired_headers(table).values())
    for view in views:
        assert not any("_" in c for c in view.columns), view.columns
        assert not {"True", "False"} & set(view.astype(str).to_numpy().ravel())
    for key in ("d_z", "rank_biserial", "p_wilcoxon", "r_break_even", "p_tost", "p_strip"):
        assert rt.PAIRED_HEADERS[key] in views[0].columns
    assert set(views[0].columns) <= known
    assert rt.paired_headers(table)["ci"] == "95 % CI (corrected, NB ρ = 0.23)"


def test_row_reading_compares_like_with_like_and_names_rho():
    row = {
        "method_a": "nominal",
        "method_b": "binomial",
        "metric": "amae",
        "n_seeds": 20,
        "mean_diff": 0.065,
        "p_corrected": 0.16,
        "p_wilcoxon": 0.0005,
        "p_wilcoxon_holm": 0.004,
        "test_train_ratio": 0.43,
        "r_break_even": 0.18,
    }
    text = rt.row_reading(row)
    assert "on most seeds (Wilcoxon" in text and "assuming ρ = 0.30" in text
    assert "new patients" not in text
    assert text.startswith("Nominal's AMAE is higher than Binomial's")
    assert "needs 2 seeds" in rt.row_reading(row | {"n_seeds": 1, "p_corrected": math.nan})


def test_primary_view_gives_a_verdict_per_row(table):
    view = rt.primary_view(paired.primary_endpoint(table))
    assert len(view) == 4
    assert set(view["Method − Nominal"]) == {"Binomial", "Beta"}
    assert set(view["Corrected test (α = 0.05, Holm)"]) <= {
        "lower AMAE",
        "higher AMAE",
        "not significant at the assumed ρ",
    }
    assert "Verdict (ROPE ± 0.01)" in view.columns
    assert (
        view["P(method better) · P(equivalent) · P(Nominal better)"]
        .str.fullmatch(r"\d\.\d\d · \d\.\d\d · \d\.\d\d")
        .all()
    )
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


def test_power_view_gives_seeds_per_rho_or_the_ceiling_that_rho_imposes(table):
    plan = power.power_table(table, effect=0.02)
    view = power_tables.power_view(plan)
    assert len(view) == len(table)
    assert "Power now" not in view.columns
    at_zero, at_assumed = view["Seeds at ρ = 0"], view["Seeds at ρ = 0.3"]
    assert at_zero.str.fullmatch(r"\d+ \((\d+|more than 500) at the upper sd\)").all()
    assert at_assumed.str.startswith("not reachable: at most").any()
    tiny = power_tables.power_view(power.power_table(table, effect=0.001))
    assert tiny["Seeds at ρ = 0.1"].str.startswith("not reachable").all()
    assert "consequence of the assumed ρ" in power_tables.POWER_NOTE
    # At ρ = 0 power has no ceiling: a tiny effect needs more seeds than the planner counts,
    # which is not "not reachable: at most 100 % power".
    assert tiny["Seeds at ρ = 0"].str.startswith("more than 500 seeds").all()
    assert not tiny.apply(lambda c: c.str.contains("at most 100")).any().any()


def test_bootstrap_view_is_apart_and_labelled(table):
    assert rt.bootstrap_view(table).empty  # no bootstrap columns
    boot = rt.bootstrap_view(table.assign(boot_ci_low=0.01, boot_ci_high=0.02, within_seed_sd=0.0))
    assert boot["Film-sampling bootstrap 95 % interval"].eq("[0.010, 0.020]").all()
    assert "not an interval for the comparison" in rt.BOOTSTRAP_NOTE


def test_tests_on_page_line_names_the_confirmatory_family():
    line = rt.tests_on_page_line(97, 8)
    assert line.startswith("This view shows 97 hypothesis tests: only the 8 of the primary")
    assert "exploratory" in line
    assert "none is confirmatory" in rt.tests_on_page_line(12, 0)


def test_mean_ci_table_writes_mean_and_interval_or_why_not():
    intervals = paired.mean_intervals(_per_run(4), RATIOS, metrics=("amae", "qwk"))
    view = rt.mean_ci_table(intervals, ["amae", "qwk"])
    assert list(view.columns) == ["Task", "Method", "Seeds", "AMAE ↓", "QWK ↑"]
    assert view["AMAE ↓"].str.fullmatch(r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]").all()
    one = paired.mean_intervals(_per_run(1), RATIOS, metrics=("amae",))
    assert rt.mean_ci_table(one, ["amae"])["AMAE ↓"].str.endswith("needs 2 seeds").all()
    assert "corrected resampled t interval" in rt.mean_ci_note(intervals)


def test_mean_ci_table_shows_an_interval_at_its_metrics_bound_and_says_so():
    """One Table 4 for the Statistics tab, the report and its LaTeX: an interval reaching past
    what its metric can take is shown at the bound, and `clipped_sentence` gives it as computed."""
    intervals = pd.DataFrame(
        {
            "task": ["KL"] * 3,
            "method": ["nominal"] * 3,
            "metric": ["ms", "qwk", "amae"],
            "n_seeds": [20] * 3,
            "mean": [0.069, 0.75, 0.02],
            "ci_low": [-0.079, 0.7, 0.01],
            "ci_high": [0.217, 0.8, 0.05],
        }
    )
    view = rt.mean_ci_table(intervals)
    assert list(view.columns) == ["Task", "Method", "Seeds", "MS ↑", "QWK ↑", "AMAE ↓"]
    assert view.iloc[0]["MS ↑"] == "0.069 [0.000, 0.217]"
    assert view.iloc[0]["QWK ↑"] == "0.750 [0.700, 0.800]"
    assert rt.clipped_sentence(intervals).endswith(
        "(1 interval; as computed): KL Nominal MS: [−0.079, 0.217]."
    )
    assert rt.clipped_sentence(intervals.iloc[1:]) is None


def test_paired_latex_is_a_table_with_the_corrected_p():
    latex = rt.paired_latex(paired.paired_table(_per_run(6), RATIOS, metrics=("amae",)), "AMAE")
    assert latex.startswith(r"\begin{table}") and "p corrected" in latex
    assert rt.paired_latex(pd.DataFrame(), "AMAE") == ""


def test_seeds_plan_text_gives_seeds_and_gpu_hours_or_the_ceiling_of_the_assumed_rho():
    assert "**12 seeds**" in power_tables.seeds_plan_text(12, 2.5, 0.9, 0.1)
    assert "at ρ = 0.1" in power_tables.seeds_plan_text(12, 2.5, 0.9, 0.1)
    assert "about 30 GPU hours" in power_tables.seeds_plan_text(12, 2.5, 0.9, 0.1)
    assert "GPU hours" not in power_tables.seeds_plan_text(12, None, 0.9, 0.1)
    unreachable = power_tables.seeds_plan_text(None, 2.5, 0.4, 0.3)
    assert "At ρ = 0.3" in unreachable and "even unlimited seeds give 40%" in unreachable
    assert "follows from the assumed ρ" in unreachable
    assert "A larger dataset is needed" not in unreachable
    assert "effect other than 0" in power_tables.seeds_plan_text(None, None, math.nan, 0.3)
    beyond = power_tables.seeds_plan_text(None, 2.5, 1.0, 0.0)  # no ceiling, but past the planner
    assert "more than 500 seeds" in beyond and "100%" not in beyond
