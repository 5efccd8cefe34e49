"""Seed-blocked ANOVA against a hand computation, Friedman and Kendall's W, the CD ranking of
every grade metric, and the corrected test's power against statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower

from engine.analysis import designs, power, ranking


def _blocked(n_seeds: int = 6, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_seeds):
        block = rng.normal(0, 0.2)
        for m_index, method in enumerate(("nominal", "binomial", "beta")):
            for t_index, task in enumerate(("CPPD", "KL")):
                value = 0.5 + block + 0.05 * m_index + 0.1 * t_index + 0.03 * m_index * t_index
                rows.append(
                    {
                        "method": method,
                        "task": task,
                        "seed": s,
                        "value": value + rng.normal(0, 0.02),
                    }
                )
    return pd.DataFrame(rows)


def _hand_rm_f(data: pd.DataFrame, factor: str) -> float:
    """F of one within factor: its mean square over its interaction with the subject."""
    grand = data["value"].mean()
    levels = data.groupby(factor)["value"].mean()
    n_seeds, n_levels = data["seed"].nunique(), len(levels)
    per_cell = len(data) / (n_seeds * n_levels)
    ss_effect = per_cell * n_seeds * ((levels - grand) ** 2).sum()
    cell = data.groupby([factor, "seed"])["value"].mean()
    seeds = data.groupby("seed")["value"].mean()
    resid = [
        cell[(lvl, s)] - levels[lvl] - seeds[s] + grand for lvl in levels.index for s in seeds.index
    ]
    ss_error = per_cell * np.sum(np.square(resid))
    return (ss_effect / (n_levels - 1)) / (ss_error / ((n_levels - 1) * (n_seeds - 1)))


def test_seed_blocked_anova_matches_a_hand_repeated_measures_computation():
    data = _blocked()
    result = designs.seed_blocked_anova(data)
    table = result.table.set_index("factor")
    assert table.loc["Method", "F"] == pytest.approx(_hand_rm_f(data, "method"))
    assert table.loc["Task", "F"] == pytest.approx(_hand_rm_f(data, "task"))
    assert table.loc["Method", "num_df"] == 2 and table.loc["Method", "den_df"] == 10
    f, a, b = table.loc["Method", ["F", "num_df", "den_df"]]
    assert table.loc["Method", "partial_eta2"] == pytest.approx(f * a / (f * a + b))
    assert table.loc["Method × Task", "p"] < 0.05  # built in
    assert "depend on the task" in result.reading


def test_seed_blocked_anova_leaves_out_incomplete_seeds_and_says_so():
    data = _blocked()
    data = data.drop(data.index[(data["seed"] == 0) & (data["method"] == "beta")])
    result = designs.seed_blocked_anova(data)
    assert result.note == "1 seeds without every method and task were left out."
    assert result.table.set_index("factor").loc["Method", "den_df"] == 8


def test_blocking_finds_what_the_ols_anova_misses():
    """A large seed effect hides the method effect from an OLS ANOVA, not from the blocked one."""
    data = _blocked()
    ols = designs.ols_anova_with_effect_sizes(data).table.set_index("factor")
    blocked = designs.seed_blocked_anova(data).table.set_index("factor")
    assert blocked.loc["Method", "partial_eta2"] > ols.loc["Method", "partial_eta2"]
    ss = ols.loc["Method", "SS"]
    assert ols.loc["Method", "partial_eta2"] == pytest.approx(ss / (ss + ols.loc["Residual", "SS"]))


def _per_run(data: pd.DataFrame) -> pd.DataFrame:
    return data.rename(columns={"value": "amae"}).assign(
        qwk=lambda f: 1 - f["amae"], study_id="x", run_id=lambda f: f.index.astype(str)
    )


def test_friedman_table_matches_scipy_and_kendall_w_is_one_for_identical_rankings():
    per_run = _per_run(_blocked())
    table = designs.friedman_table(per_run, metrics=("amae", "qwk")).set_index(["task", "metric"])
    wide = per_run[per_run.task == "KL"].pivot(index="seed", columns="method", values="amae")
    ref = stats.friedmanchisquare(*wide.to_numpy().T)
    assert table.loc[("KL", "amae"), "chi2"] == pytest.approx(ref.statistic)
    assert table.loc[("KL", "amae"), "p"] == pytest.approx(ref.pvalue)
    # Every seed ranks the three methods the same way (the noise is small): W = 1.
    assert table.loc[("KL", "amae"), "kendall_w"] == pytest.approx(1.0)


def test_critical_differences_rank_every_grade_metric_in_its_direction():
    per_run = _per_run(_blocked())
    cds = designs.critical_differences(per_run, metrics=("amae", "qwk"))
    assert set(cds) == {("CPPD", "amae"), ("CPPD", "qwk"), ("KL", "amae"), ("KL", "qwk")}
    assert isinstance(cds[("KL", "amae")], ranking.CriticalDifference)
    # Lower AMAE is better and QWK = 1 − AMAE here, so both put nominal first.
    assert cds[("KL", "amae")].table["method"].iloc[0] == "nominal"
    assert cds[("KL", "qwk")].table["method"].iloc[0] == "nominal"


def test_power_without_correction_matches_statsmodels():
    effect, sd = 0.05, 0.06
    n = power.seeds_for_power(effect, sd, 0.0)
    expected = math.ceil(TTestPower().solve_power(effect_size=effect / sd, alpha=0.05, power=0.8))
    assert n == expected
    assert power.corrected_power(effect, sd, 12, 0.0) == pytest.approx(
        TTestPower().power(effect_size=effect / sd, nobs=12, alpha=0.05)
    )


def test_power_has_a_ceiling_that_more_seeds_cannot_pass():
    effect, sd, ratio = 0.06, 0.065, 0.43
    ceiling = power.power_ceiling(effect, sd, ratio)
    assert power.corrected_power(effect, sd, 400, ratio) == pytest.approx(ceiling, abs=0.01)
    assert ceiling < 0.8
    assert power.seeds_for_power(effect, sd, ratio) is None
    assert power.seeds_for_power(0.2, sd, ratio) is not None  # a larger effect can be reached


def test_power_table_reports_seeds_for_observed_and_chosen_effects():
    table = pd.DataFrame(
        {
            "task": ["KL"],
            "metric": ["amae"],
            "method_a": ["nominal"],
            "method_b": ["beta"],
            "n_seeds": [20],
            "mean_diff": [0.06],
            "sd_diff": [0.05],
            "test_train_ratio": [0.1],
        }
    )
    out = power.power_table(table, chosen_effect=0.2).iloc[0]
    assert out["seeds_observed"] == power.seeds_for_power(0.06, 0.05, 0.1)
    assert out["seeds_chosen"] == power.seeds_for_power(0.2, 0.05, 0.1)
    assert 0 < out["power_now"] < out["ceiling_observed"] <= 1


def test_a_one_task_study_gets_the_one_way_blocked_anova():
    data = _blocked()
    kl = data[data["task"] == "KL"]
    result = designs.seed_blocked_anova(kl)
    assert list(result.table["factor"]) == ["Method"]
    assert result.table["F"].iloc[0] == pytest.approx(_hand_rm_f(kl, "method"))
    assert "the methods differ" in result.reading
    one_method = designs.seed_blocked_anova(kl[kl["method"] == "beta"])
    assert one_method.table.empty and "2 methods" in one_method.note
