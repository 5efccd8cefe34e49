"""Paired comparisons: the corrected resampled t-test, effect sizes, Holm families, the
hierarchical bootstrap, each against a hand computation or scipy/statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from engine.analysis import paired
from engine.analysis import stats as engine_stats
from engine.methods import paper_methods

METHODS = paper_methods()


def test_corrected_t_matches_a_hand_computation():
    diffs = [1.0, 2.0, 3.0, 4.0]  # mean 2.5, s² = 5/3
    result = paired.corrected_resampled_t(diffs, 0.5)
    se = math.sqrt((1 / 4 + 0.5) * 5 / 3)
    assert result.se == pytest.approx(se)
    assert result.t == pytest.approx(2.5 / se)
    assert result.p == pytest.approx(2 * stats.t.sf(2.5 / se, 3))
    half = stats.t.ppf(0.975, 3) * se
    assert (result.ci_low, result.ci_high) == pytest.approx((2.5 - half, 2.5 + half))


def test_corrected_t_with_no_correction_is_the_paired_t_test():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=12), rng.normal(size=12)
    result = paired.corrected_resampled_t(a - b, 0.0)
    assert result.p == pytest.approx(stats.ttest_rel(a, b).pvalue)
    assert result.p_naive == pytest.approx(result.p)
    low, high = stats.ttest_rel(a, b).confidence_interval()
    assert (result.ci_low, result.ci_high) == pytest.approx((low, high))


def test_corrected_t_is_less_confident_than_the_naive_test():
    diffs = np.array([0.05, 0.07, 0.02, 0.09, 0.04, 0.06, 0.03, 0.08])
    result = paired.corrected_resampled_t(diffs, 0.43)
    assert result.p > result.p_naive
    assert result.ci_high - result.ci_low > 2 * stats.t.ppf(0.975, 7) * diffs.std(ddof=1) / 8**0.5


def test_corrected_t_on_too_few_or_constant_differences():
    assert math.isnan(paired.corrected_resampled_t([0.3], 0.4).p)
    zero = paired.corrected_resampled_t([0.0, 0.0, 0.0], 0.4)
    assert zero.p == 1.0 and zero.ci_low == zero.ci_high == 0.0
    assert paired.corrected_resampled_t([0.2, 0.2, 0.2], 0.4).p == 0.0


def test_effect_sizes_match_hand_cases():
    assert paired.d_z([1.0, 2.0, 3.0]) == pytest.approx(2.0 / 1.0)
    assert math.isnan(paired.d_z([1.0, 1.0]))
    # |d| ranks 1, 2, 3: T+ = 1 + 3, T− = 2.
    assert paired.rank_biserial([1.0, -2.0, 3.0]) == pytest.approx(1 / 3)
    assert paired.rank_biserial([0.0, 0.5, 0.2]) == 1.0  # zeros dropped
    assert paired.rank_biserial([-1.0, -2.0]) == -1.0
    assert math.isnan(paired.rank_biserial([0.0, 0.0]))


def test_mean_interval_without_correction_is_the_t_interval():
    values = np.array([0.5, 0.55, 0.62, 0.48, 0.51])
    low, high = paired.corrected_mean_interval(values, 0.0)
    ref = stats.t.interval(0.95, 4, loc=values.mean(), scale=stats.sem(values))
    assert (low, high) == pytest.approx(ref)
    wide = paired.corrected_mean_interval(values, 0.43)
    assert wide[0] < low and wide[1] > high


def test_test_train_ratio_is_test_films_over_fit_films():
    sizes = pd.DataFrame(
        {
            "seed": [0, 1, 0, 1],
            "task": ["KL", "KL", "CPPD", "CPPD"],
            "n_test": [30, 32, 60, 60],
            "n_fit": [70, 68, 140, 140],
        }
    )
    assert paired.test_train_ratios(sizes) == pytest.approx({"KL": 31 / 69, "CPPD": 60 / 140})


def _per_run(n_seeds: int = 8, seed: int = 0) -> pd.DataFrame:
    """Five methods × two tasks with AMAE and QWK per seed; nominal errs more."""
    rng = np.random.default_rng(seed)
    rows = []
    for task in ("CPPD", "KL"):
        for s in range(n_seeds):
            base = rng.normal(0.5, 0.05)
            for method in METHODS:
                shift = 0.1 if method == "nominal" else 0.0
                rows.append(
                    {
                        "study_id": "x",
                        "run_id": f"{task}{method}{s}",
                        "task": task,
                        "method": method,
                        "seed": s,
                        "amae": base + shift + rng.normal(0, 0.03),
                        "qwk": 0.7 - shift + rng.normal(0, 0.03),
                    }
                )
    return pd.DataFrame(rows)


def test_paired_table_declares_one_primary_family_of_eight():
    table = paired.paired_table(_per_run(), {"KL": 0.43, "CPPD": 0.43}, metrics=("amae", "qwk"))
    assert list(table.columns[: len(paired.PAIRED_COLUMNS)]) == list(paired.PAIRED_COLUMNS)
    assert len(table) == 2 * 2 * 10
    primary = table[table["family"] == paired.PRIMARY_FAMILY]
    assert len(primary) == 8
    assert set(primary["metric"]) == {"amae"}
    assert (primary["method_a"] == "nominal").all()
    holm = multipletests(primary["p_corrected"], method="holm")[1]
    assert primary["p_corrected_holm"].to_numpy() == pytest.approx(holm)
    exploratory = table[table["family"] != paired.PRIMARY_FAMILY]
    assert exploratory["family"].str.startswith("exploratory").all()


def test_paired_table_wilcoxon_is_the_statistics_page_s():
    per_run = _per_run()
    table = paired.paired_table(per_run, {"KL": 0.43, "CPPD": 0.43}, metrics=("amae",))
    kl = table[table["task"] == "KL"].reset_index(drop=True)
    scores = per_run[per_run["task"] == "KL"].rename(columns={"amae": "value"})
    page = engine_stats.wilcoxon_pairwise(scores[["method", "seed", "value"]], "holm").table
    assert kl["p_wilcoxon"].to_numpy() == pytest.approx(page["p"].to_numpy())
    assert kl["p_wilcoxon_holm"].to_numpy() == pytest.approx(page["p_adj"].to_numpy())
    assert kl["method_a"].tolist() == page["method_a"].tolist()


def test_primary_endpoint_reads_soft_minus_nominal():
    table = paired.paired_table(_per_run(), {"KL": 0.43, "CPPD": 0.43}, metrics=("amae",))
    endpoint = paired.primary_endpoint(table)
    assert len(endpoint) == 8 and "nominal" not in set(endpoint["method"])
    assert (endpoint["mean_diff"] < 0).all()  # soft methods err less by construction
    assert (endpoint["ci_low"] <= endpoint["mean_diff"]).all()
    assert (endpoint["rank_biserial"] < 0).all()


def test_corrected_test_keeps_its_level_where_the_naive_tests_do_not():
    """Seeds resampled from one dataset with no true difference for new patients: each film
    has a fixed method difference drawn with mean 0, each seed scores a random 30 % of the
    films (and the model is trained on the rest). The naive tests detect the dataset's own
    mean difference; the corrected test's type-I rate stays near 5 %."""
    rng = np.random.default_rng(1)
    n_reps, n_films, n_seeds, n_test = 400, 300, 20, 90
    rejected = np.zeros(3)
    for _ in range(n_reps):
        film_diff = rng.normal(0, 1, n_films)
        train_effect = rng.normal(0, 1, n_films)
        diffs = []
        for _ in range(n_seeds):
            order = rng.permutation(n_films)
            test, train = order[:n_test], order[n_test:]
            diffs.append(film_diff[test].mean() + 0.5 * train_effect[train].mean())
        result = paired.corrected_resampled_t(diffs, n_test / (n_films - n_test))
        rejected += [result.p < 0.05, result.p_naive < 0.05, stats.wilcoxon(diffs).pvalue < 0.05]
    corrected, naive_t, wilcoxon = rejected / n_reps
    assert corrected < 0.10
    assert naive_t > 0.35 and wilcoxon > 0.35


def _films(n_seeds: int = 4, n_patients: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = []
    for s in range(n_seeds):
        for p in range(n_patients):
            for knee in range(2):
                y = int(rng.integers(0, 4))
                for method, noise in (("nominal", 0.5), ("beta", 0.2)):
                    pred = int(
                        np.clip(
                            y + rng.choice([-1, 0, 1], p=[noise / 2, 1 - noise, noise / 2]), 0, 3
                        )
                    )
                    rows.append(
                        {
                            "task": "CPPD",
                            "method": method,
                            "seed": s,
                            "patient_id": f"p{p}",
                            "image_id": f"p{p}{knee}",
                            "y_true": y,
                            "y_pred": pred,
                        }
                    )
    return pd.DataFrame(rows)


def test_hierarchical_bootstrap_interval_brackets_the_mean_difference():
    films = _films()
    boot = paired.hierarchical_bootstrap(films, metrics=("amae",), n_boot=400, seed=1)
    row = boot.iloc[0]
    assert (row["method_a"], row["method_b"]) == ("nominal", "beta")
    from engine.analysis.metrics import compute_metrics

    diffs = [
        compute_metrics(g[g.method == "nominal"].y_true, g[g.method == "nominal"].y_pred, 4)["amae"]
        - compute_metrics(g[g.method == "beta"].y_true, g[g.method == "beta"].y_pred, 4)["amae"]
        for _, g in films.groupby("seed")
    ]
    assert row["boot_ci_low"] < np.mean(diffs) < row["boot_ci_high"]
    assert row["boot_ci_low"] > 0  # nominal is built to err more
    assert row["within_seed_sd"] > 0


def test_hierarchical_bootstrap_is_reproducible_and_zero_for_identical_methods():
    films = _films()
    twin = films[films["method"] == "beta"].assign(method="binomial")
    both = pd.concat([films[films["method"] == "beta"], twin])
    boot = paired.hierarchical_bootstrap(both, metrics=("amae", "qwk"), n_boot=200)
    assert boot[["boot_ci_low", "boot_ci_high", "boot_sd"]].abs().max().max() == 0
    again = paired.hierarchical_bootstrap(films, metrics=("amae",), n_boot=200, seed=5)
    assert again.equals(paired.hierarchical_bootstrap(films, metrics=("amae",), n_boot=200, seed=5))


def test_reading_keeps_consistent_over_seeds_apart_from_new_patients():
    row = {
        "method_a": "nominal",
        "method_b": "binomial",
        "metric": "amae",
        "mean_diff": 0.06,
        "p_wilcoxon_holm": 0.004,
        "p_corrected": 0.16,
    }
    text = paired.reading(row)
    assert "consistently over seeds" in text and "not significantly for new patients" in text


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_holm_matches_statsmodels(seed):
    p = np.random.default_rng(seed).uniform(0, 0.2, size=9)
    p[3] = p[5]  # a tie
    assert paired.holm(p) == pytest.approx(multipletests(p, method="holm")[1])
