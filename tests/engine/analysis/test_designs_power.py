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


def _box_epsilon(wide: np.ndarray) -> float:
    """Greenhouse–Geisser ε by Box's (1954) formula in the covariance entries."""
    k = wide.shape[1]
    cov = np.cov(wide, rowvar=False)
    mean_diag, mean_all, row_means = np.trace(cov) / k, cov.mean(), cov.mean(axis=1)
    numerator = k**2 * (mean_diag - mean_all) ** 2
    denominator = (k - 1) * ((cov**2).sum() - 2 * k * (row_means**2).sum() + k**2 * mean_all**2)
    return numerator / denominator


def test_seed_blocked_anova_runs_per_task_with_the_greenhouse_geisser_correction():
    data = _blocked()
    result = designs.seed_blocked_anova(data)
    table = result.table.set_index("task")
    assert list(table.index) == ["CPPD", "KL"] and set(table["factor"]) == {"Method"}
    for task in ("CPPD", "KL"):
        part = data[data["task"] == task]
        row = table.loc[task]
        assert row["F"] == pytest.approx(_hand_rm_f(part, "method"))
        assert (row["num_df"], row["den_df"]) == (2, 10)
        wide = part.pivot(index="seed", columns="method", values="value").to_numpy()
        assert row["gg_epsilon"] == pytest.approx(_box_epsilon(wide))
        assert 0.5 <= row["gg_epsilon"] <= 1.0
        eps = row["gg_epsilon"]
        assert row["p_gg"] == pytest.approx(stats.f.sf(row["F"], 2 * eps, 10 * eps))
        assert row["p_gg"] >= row["p"]
        assert row["partial_eta2"] == pytest.approx(row["F"] * 2 / (row["F"] * 2 + 10))
    assert "Greenhouse–Geisser" in result.reading and "independent" in result.reading


def test_greenhouse_geisser_epsilon_is_one_for_two_levels_and_spherical_data():
    rng = np.random.default_rng(1)
    assert designs.greenhouse_geisser_epsilon(rng.normal(size=(10, 2))) == 1.0
    # Compound symmetry (equal variances, equal covariances) is spherical: ε = 1.
    block = rng.normal(size=(4000, 1))
    spherical = block + rng.normal(size=(4000, 4))
    assert designs.greenhouse_geisser_epsilon(spherical) == pytest.approx(1.0, abs=0.01)
    # One level far noisier than the rest violates sphericity.
    skewed = spherical * np.array([1.0, 1.0, 1.0, 6.0])
    assert designs.greenhouse_geisser_epsilon(skewed) < 0.6


def test_seed_blocked_anova_leaves_out_incomplete_seeds_and_says_so():
    data = _blocked()
    data = data.drop(data.index[(data["seed"] == 0) & (data["method"] == "beta")])
    result = designs.seed_blocked_anova(data)
    assert result.note == (
        "CPPD: 1 seeds without every method were left out. "
        "KL: 1 seeds without every method were left out."
    )
    assert (result.table["den_df"] == 8).all()


def test_blocking_finds_what_the_ols_anova_misses():
    """A large seed effect hides the method effect from an OLS ANOVA, not from the blocked one."""
    data = _blocked()
    ols = designs.ols_anova_with_effect_sizes(data).table.set_index("factor")
    blocked = designs.seed_blocked_anova(data).table.set_index("task")
    assert (blocked["partial_eta2"] > ols.loc["Method", "partial_eta2"]).all()
    ss = ols.loc["Method", "SS"]
    assert ols.loc["Method", "partial_eta2"] == pytest.approx(ss / (ss + ols.loc["Residual", "SS"]))


def test_the_papers_anova_no_longer_reads_a_missing_interaction_as_alike_ranks():
    data = _blocked()
    data["value"] = data["value"] - 0.03 * (data["method"] != "nominal") * (data["task"] == "KL")
    reading = designs.ols_anova_with_effect_sizes(data).reading
    assert "rank alike" not in reading


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


def test_sd_upper_bound_is_the_chi_square_bound():
    sd, n = 0.05, 20
    upper = power.sd_upper_bound(sd, n)
    # P(s < sd_true) for the bound: (n−1) s² / σ² ~ χ²(n−1).
    assert stats.chi2.cdf((n - 1) * sd**2 / upper**2, n - 1) == pytest.approx(0.2)
    assert upper > sd and math.isnan(power.sd_upper_bound(sd, 1))


def test_power_table_plans_a_smallest_effect_over_a_range_of_rho():
    table = pd.DataFrame(
        {
            "task": ["KL"],
            "metric": ["amae"],
            "method_a": ["nominal"],
            "method_b": ["beta"],
            "n_seeds": [20],
            "mean_diff": [0.06],
            "sd_diff": [0.05],
            "test_train_ratio": [0.43],
        }
    )
    plan = power.power_table(table, effect=0.05, design_rho=0.05)
    assert list(plan["rho"]) == [0.0, 0.1, 0.3, 0.05]
    assert list(plan["rho_source"]) == [power.FIXED] * 3 + [power.DESIGN]
    assert "power_now" not in plan
    by_rho = plan.set_index("rho")
    upper = power.sd_upper_bound(0.05, 20)
    for rho in (0.0, 0.1, 0.3):
        ratio = rho / (1 - rho)
        expected = power.seeds_for_power(0.05, 0.05, ratio)
        seeds = by_rho.loc[rho, "seeds"]
        assert pd.isna(seeds) if expected is None else seeds == expected
        assert by_rho.loc[rho, "sd_upper"] == pytest.approx(upper)
        assert by_rho.loc[rho, "ceiling"] == pytest.approx(power.power_ceiling(0.05, 0.05, ratio))
    assert by_rho.loc[0.0, "seeds"] < by_rho.loc[0.0, "seeds_sd_upper"]  # a wider sd costs seeds
    assert pd.isna(by_rho.loc[0.3, "seeds"])  # the ceiling at ρ = 0.3 is below 80 %
    assert by_rho.loc[0.3, "ceiling"] < 0.8 and by_rho.loc[0.0, "ceiling"] == 1.0


def test_a_one_task_study_gets_the_one_way_blocked_anova():
    data = _blocked()
    kl = data[data["task"] == "KL"]
    result = designs.seed_blocked_anova(kl)
    assert list(result.table["factor"]) == ["Method"] and list(result.table["task"]) == ["KL"]
    assert result.table["F"].iloc[0] == pytest.approx(_hand_rm_f(kl, "method"))
    assert "the methods differ" in result.reading
    one_method = designs.seed_blocked_anova(kl[kl["method"] == "beta"])
    assert one_method.table.empty and "2 methods" in one_method.note
