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
    assert (primary["method_b"] == "nominal").all()  # method − Nominal, as the endpoint reads
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
    n_reps = 400
    rejected = np.zeros(3)
    for _ in range(n_reps):
        diffs = _resampled_diffs(rng, 0.0, 20)
        result = paired.corrected_resampled_t(diffs, 90 / 210)
        rejected += [result.p < 0.05, result.p_naive < 0.05, stats.wilcoxon(diffs).pvalue < 0.05]
    corrected, naive_t, wilcoxon = rejected / n_reps
    assert corrected < 0.10
    assert naive_t > 0.35 and wilcoxon > 0.35


def _resampled_diffs(rng: np.random.Generator, shift: float, n_seeds: int) -> list[float]:
    """Per-seed differences of seeds resampling one dataset of 300 films (as above), each
    film's difference drawn around ``shift``, the true difference for new patients."""
    n_films, n_test = 300, 90
    film_diff = rng.normal(shift, 1, n_films)
    train_effect = rng.normal(0, 1, n_films)
    diffs = []
    for _ in range(n_seeds):
        order = rng.permutation(n_films)
        test, train = order[:n_test], order[n_test:]
        diffs.append(film_diff[test].mean() + 0.5 * train_effect[train].mean())
    return diffs


def test_the_verdicts_operating_characteristics_on_resampled_seeds():
    """The rule's type-I error of "better" (no true difference) stays at or below the
    corrected test's own level and about half the old posterior-0.95 rule's; "equivalent" is
    almost never said of a true difference twice the ROPE (docs/statistics.md)."""
    rng = np.random.default_rng(1)
    reps, ratio = 300, 90 / 210
    better = old_better = corrected = equivalent = 0
    for _ in range(reps):
        test = paired.corrected_resampled_t(_resampled_diffs(rng, 0.0, 10), ratio)
        probs = paired.bayes_correlated_t(test, 0.02)
        better += (
            paired.better_method(paired.verdict("a", "b", probs, lower_is_better=True)) is not None
        )
        old_better += max(probs[0], probs[2]) >= 0.95
        corrected += test.p < 0.05
        real = paired.corrected_resampled_t(_resampled_diffs(rng, 0.2, 10), ratio)
        said = paired.verdict("a", "b", paired.bayes_correlated_t(real, 0.1), lower_is_better=True)
        equivalent += said == paired.EQUIVALENT
    assert better <= corrected and better < 0.7 * old_better
    assert better / reps < 0.06
    assert equivalent / reps < 0.02


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
    assert (row["method_a"], row["method_b"]) == ("beta", "nominal")
    from engine.analysis.metrics import compute_metrics

    def amae(g: pd.DataFrame, method: str) -> float:
        one = g[g.method == method]
        return compute_metrics(one.y_true, one.y_pred, 4)["amae"]

    diffs = [amae(g, "beta") - amae(g, "nominal") for _, g in films.groupby("seed")]
    assert row["boot_ci_low"] < np.mean(diffs) < row["boot_ci_high"]
    assert row["boot_ci_high"] < 0  # nominal is built to err more: beta − nominal < 0
    assert row["within_seed_sd"] > 0


def test_hierarchical_bootstrap_is_reproducible_and_zero_for_identical_methods():
    films = _films()
    twin = films[films["method"] == "beta"].assign(method="binomial")
    both = pd.concat([films[films["method"] == "beta"], twin])
    boot = paired.hierarchical_bootstrap(both, metrics=("amae", "qwk"), n_boot=200)
    assert boot[["boot_ci_low", "boot_ci_high", "boot_sd"]].abs().max().max() == 0
    again = paired.hierarchical_bootstrap(films, metrics=("amae",), n_boot=200, seed=5)
    assert again.equals(paired.hierarchical_bootstrap(films, metrics=("amae",), n_boot=200, seed=5))


def test_reading_compares_unadjusted_p_with_unadjusted_p_and_names_rho():
    row = {
        "method_a": "nominal",
        "method_b": "binomial",
        "metric": "amae",
        "mean_diff": 0.06,
        "p_wilcoxon": 0.0005,
        "p_wilcoxon_holm": 0.2,  # must not be the one read: the corrected p is unadjusted
        "p_corrected": 0.16,
        "test_train_ratio": 0.43,
        "r_break_even": 0.18,
    }
    text = paired.reading(row)
    assert "on most seeds (Wilcoxon" in text and "not by the corrected t-test" in text
    assert "assuming ρ = 0.30" in text and "ρ below 0.15" in text and "unadjusted" in text
    assert "new patients" not in text
    neither = paired.reading({**row, "p_wilcoxon": 0.3})
    assert "no evidence of a difference, which is not evidence of none" in neither


def test_wilcoxon_exact_equals_scipys_exact_test_without_ties():
    rng = np.random.default_rng(3)
    for n in (5, 9, 14):
        d = rng.normal(0.01, 0.05, size=n)
        assert paired.wilcoxon_exact_p(d) == pytest.approx(
            stats.wilcoxon(d, method="exact").pvalue, rel=1e-12
        )


def _hand_wilcoxon(d: list[float]) -> float:
    """Every sign assignment of the non-zero differences, mid-ranks for ties: the share of
    assignments whose T+ is at least as extreme as the observed, in either tail."""
    import itertools

    nonzero = [x for x in d if x != 0]
    ranks = stats.rankdata(np.abs(nonzero))
    observed = sum(r for r, x in zip(ranks, nonzero, strict=True) if x > 0)
    sums = [
        sum(r for r, s in zip(ranks, signs, strict=True) if s > 0)
        for signs in itertools.product((-1, 1), repeat=len(nonzero))
    ]
    low = sum(t <= observed + 1e-9 for t in sums) / len(sums)
    high = sum(t >= observed - 1e-9 for t in sums) / len(sums)
    return min(1.0, 2 * min(low, high))


@pytest.mark.parametrize(
    "d",
    [
        [0.1, 0.1, 0.2, -0.1, 0.3, 0.0, 0.2, 0.2, 0.4, -0.2, 0.0, 0.1],
        [0.05, 0.05, 0.05, 0.05, -0.05, 0.1, 0.0],
        [-0.3, -0.1, -0.1, 0.2, -0.2, -0.4, -0.4, 0.0, 0.0, -0.3, -0.1, -0.5, 0.1, -0.2, -0.1, 0.3],
    ],
)
def test_wilcoxon_exact_matches_a_hand_enumeration_with_ties_and_zeros(d):
    exact = paired.wilcoxon_exact_p(d)
    assert exact == pytest.approx(_hand_wilcoxon(d), rel=1e-12)
    scipy_default = stats.wilcoxon(d).pvalue
    if len(d) <= 13:  # scipy enumerates the sign flips itself up to 13 differences
        assert exact == pytest.approx(scipy_default, rel=1e-12)
    else:  # and falls back to the normal approximation above, as at 20 seeds
        assert exact != pytest.approx(scipy_default, rel=1e-3)


def test_wilcoxon_exact_edge_cases():
    assert paired.wilcoxon_exact_p([0.0, 0.0, 0.0]) == 1.0
    assert math.isnan(paired.wilcoxon_exact_p([]))
    assert paired.wilcoxon_exact_p([0.2, 0.3]) == pytest.approx(0.5)


def test_corrected_p_across_r_and_its_break_even_ratio():
    diffs = np.array([0.05, 0.07, -0.02, 0.09, 0.04, 0.06, 0.03, 0.08, -0.01, 0.05])
    test = paired.corrected_resampled_t(diffs, 0.43)
    for r in (0.0, 0.1, 0.43):
        assert paired.corrected_p_at(test, r) == pytest.approx(
            paired.corrected_resampled_t(diffs, r).p
        )
    r_star = paired.break_even_ratio(test)
    assert paired.corrected_resampled_t(diffs, r_star).p == pytest.approx(0.05)
    assert paired.corrected_resampled_t(diffs, r_star * 0.9).p < 0.05
    assert paired.corrected_resampled_t(diffs, r_star * 1.1).p > 0.05
    weak = paired.corrected_resampled_t(np.array([0.1, -0.1, 0.05, -0.04]), 0.43)
    assert math.isnan(paired.break_even_ratio(weak))  # p > 0.05 even at r = 0
    assert paired.rho_of_ratio(0.43) == pytest.approx(0.3007, abs=1e-4)
    assert paired.ratio_of_rho(paired.rho_of_ratio(0.43)) == pytest.approx(0.43)


def test_bayes_correlated_t_is_the_student_t_posterior_of_the_corrected_variance():
    diffs = np.array([-0.05, -0.07, 0.01, -0.09, -0.04, -0.06, -0.03, -0.08])
    ratio, rope = 0.43, 0.01
    test = paired.corrected_resampled_t(diffs, ratio)
    n, mean, s2 = diffs.size, diffs.mean(), diffs.var(ddof=1)
    posterior = stats.t(df=n - 1, loc=mean, scale=math.sqrt((1 / n + ratio) * s2))
    expected = (
        posterior.cdf(-rope),
        posterior.cdf(rope) - posterior.cdf(-rope),
        posterior.sf(rope),
    )
    assert paired.bayes_correlated_t(test, rope) == pytest.approx(expected, rel=1e-9)
    assert sum(paired.bayes_correlated_t(test, rope)) == pytest.approx(1.0)


def test_bayes_correlated_t_agrees_with_baycomp_where_its_k_fold_correction_applies():
    """baycomp's CorrelatedTTest corrects by 1/(k − 1) for k folds: 20 scores of 2 runs of
    10-fold cross-validation are our ratio 1/9."""
    import baycomp

    rng = np.random.default_rng(7)
    x, y = rng.normal(0.5, 0.03, 20), rng.normal(0.48, 0.03, 20)
    test = paired.corrected_resampled_t(y - x, 1 / 9)
    ours = paired.bayes_correlated_t(test, 0.01)
    theirs = baycomp.CorrelatedTTest.probs(x, y, rope=0.01, runs=2)
    assert ours == pytest.approx(tuple(float(v) for v in theirs), rel=1e-9)


def test_tost_is_the_corrected_interval_inside_the_rope():
    rng = np.random.default_rng(11)
    for _ in range(20):
        diffs = rng.normal(rng.uniform(-0.02, 0.02), 0.01, size=15)
        test = paired.corrected_resampled_t(diffs, 0.1)
        ninety = paired.corrected_resampled_t(diffs, 0.1, level=0.90)
        low, high = ninety.ci_low, ninety.ci_high
        inside = low > -0.02 and high < 0.02
        assert (paired.tost_p(test, 0.02) < 0.05) == inside
        # Under the flat prior the larger one-sided p is the posterior mass beyond the rope.
        left, _, right = paired.bayes_correlated_t(test, 0.02)
        assert paired.tost_p(test, 0.02) == pytest.approx(max(left, right))


def test_verdict_reads_the_posterior_in_the_metrics_direction():
    assert paired.verdict("a", "b", (0.98, 0.015, 0.005), lower_is_better=True) == "a better"
    assert paired.verdict("a", "b", (0.98, 0.015, 0.005), lower_is_better=False) == "b better"
    assert paired.verdict("a", "b", (0.01, 0.96, 0.03), lower_is_better=True) == "equivalent"
    assert paired.verdict("a", "b", (0.5, 0.3, 0.2), lower_is_better=True) == "inconclusive"
    nan = (math.nan,) * 3
    assert paired.verdict("a", "b", nan, lower_is_better=True) == "inconclusive"


def test_better_needs_the_two_sided_level_not_a_one_sided_095():
    # 0.97 beyond the ROPE was "better" at the old 0.95 (a one-sided 5 % test); at the
    # corrected test's two-sided level 1 − α/2 = 0.975 it is not.
    assert pytest.approx(0.975) == paired.BAYES_THRESHOLD
    assert paired.verdict("a", "b", (0.97, 0.02, 0.01), lower_is_better=True) == "inconclusive"
    assert paired.verdict("a", "b", (0.975, 0.02, 0.005), lower_is_better=True) == "a better"


@pytest.mark.parametrize("seed", range(6))
def test_a_better_verdict_never_stands_beside_a_corrected_p_above_alpha(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        diffs = rng.normal(rng.uniform(-0.1, 0.1), 0.05, size=6)
        test = paired.corrected_resampled_t(diffs, 0.43)
        said = paired.verdict("a", "b", paired.bayes_correlated_t(test, 0.01), lower_is_better=True)
        if said.endswith("better"):
            assert test.p < 0.05


def test_equivalent_and_tost_follow_one_rule():
    # Posterior 0.90 inside the ROPE with 0.06 on one side: "equivalent" at the old 0.95-inside
    # rule fails and TOST fails too; both tails below 0.05 is both.
    assert paired.verdict("a", "b", (0.06, 0.90, 0.04), lower_is_better=True) == "inconclusive"
    assert paired.verdict("a", "b", (0.04, 0.92, 0.04), lower_is_better=True) == "equivalent"
    rng = np.random.default_rng(3)
    for _ in range(200):
        diffs = rng.normal(rng.uniform(-0.02, 0.02), rng.uniform(0.002, 0.02), size=8)
        test = paired.corrected_resampled_t(diffs, 0.1)
        probs = paired.bayes_correlated_t(test, 0.02)
        equivalent = paired.verdict("a", "b", probs, lower_is_better=True) == "equivalent"
        assert equivalent == (paired.tost_p(test, 0.02) < paired.ALPHA)


def test_no_verdict_from_fewer_than_three_seeds_or_no_spread():
    assert paired.not_estimable_reason([0.1, 0.2]) == "fewer than 3 seeds (2)"
    assert paired.not_estimable_reason([0.1, 0.1, 0.1]) == paired.NO_SPREAD
    assert paired.not_estimable_reason([0.1, 0.2, 0.1]) is None


def test_paired_table_says_not_estimable_where_seeds_give_no_spread():
    per_run = _per_run(n_seeds=4)
    # binomial and beta identical on every KL seed: the difference has no spread.
    kl = per_run["task"] == "KL"
    beta = per_run.loc[kl & (per_run["method"] == "beta")].set_index("seed")
    per_run.loc[kl & (per_run["method"] == "binomial"), "amae"] = (
        beta.loc[per_run.loc[kl & (per_run["method"] == "binomial"), "seed"], "amae"].to_numpy()
        + 0.05
    )
    table = paired.paired_table(per_run, {"KL": 0.43, "CPPD": 0.43}, metrics=("amae",))
    row = table[(table.task == "KL") & (table.method_a == "beta") & (table.method_b == "binomial")]
    row = row.iloc[0]
    assert row["verdict"] == f"not estimable: {paired.NO_SPREAD}"
    assert math.isnan(row["p_corrected"]) and math.isnan(row["p_tost"])
    assert math.isnan(row["p_bayes_a_better"]) and math.isnan(row["p_corrected_holm"])
    assert row["mean_diff"] == pytest.approx(-0.05)  # beta − binomial: binomial is listed first
    assert paired.reading(row.to_dict()).startswith("No verdict: not estimable")
    two = paired.paired_table(_per_run(n_seeds=2), {"KL": 0.43, "CPPD": 0.43}, metrics=("amae",))
    assert (two["verdict"] == "not estimable: fewer than 3 seeds (2)").all()


def test_exploratory_verdicts_say_so_and_better_needs_holm():
    table = paired.paired_table(
        _per_run(n_seeds=10), {"KL": 0.1, "CPPD": 0.1}, metrics=("amae", "qwk")
    )
    exploratory = table[table["family"] != paired.PRIMARY_FAMILY]
    decided = exploratory[exploratory["verdict"] != paired.INCONCLUSIVE]
    assert len(decided) > 0
    assert decided["verdict"].str.endswith(paired.EXPLORATORY_SUFFIX).all()
    primary = table[table["family"] == paired.PRIMARY_FAMILY]
    assert not primary["verdict"].str.contains(paired.EXPLORATORY).any()
    better = table[table["verdict"].map(paired.better_method).notna()]
    assert (better["p_corrected_holm"] < 0.05).all()


def test_a_posterior_held_back_by_holm_says_why_in_its_reading():
    row = {
        "method_a": "a", "method_b": "b", "metric": "amae", "mean_diff": -0.05,
        "p_corrected": 0.01, "p_corrected_holm": 0.08, "p_wilcoxon": 0.03,
        "rho_assumed": 0.3, "r_break_even": 0.6, "rope": 0.01,
        "p_bayes_a_better": 0.98, "p_bayes_equivalent": 0.015, "p_bayes_b_better": 0.005,
        "verdict": paired.INCONCLUSIVE,
    }  # fmt: skip
    assert "after Holm over its family the corrected p is 0.08" in paired.reading(row)
    within = {**row, "p_corrected_holm": 0.01, "p_bayes_a_better": 0.9}
    assert "reaches into it" in paired.reading(within)
    same = {**row, "p_corrected_holm": 0.01, "p_bayes_a_better": 0.99}
    same["verdict"] = "a better"
    assert "Holm" not in paired.reading(same)


def test_paired_table_gives_strip_break_even_and_verdicts_per_metric_rope():
    per_run = _per_run()
    table = paired.paired_table(
        per_run, {"KL": 0.43, "CPPD": 0.43}, metrics=("amae", "qwk"), ropes={"qwk": 0.2}
    )
    for column in ("rho_assumed", "r_break_even", "p_bayes_a_better", "verdict", "p_tost"):
        assert column in table
    assert set(table.loc[table["metric"] == "amae", "rope"]) == {paired.DEFAULT_ROPE}
    assert set(table.loc[table["metric"] == "qwk", "rope"]) == {0.2}
    assert table["rho_assumed"].to_numpy() == pytest.approx(0.43 / 1.43)
    assert table[paired.r_column(0.0)].to_numpy() == pytest.approx(table["p_naive_t"].to_numpy())
    probs = table[["p_bayes_a_better", "p_bayes_equivalent", "p_bayes_b_better"]].sum(axis=1)
    assert probs.to_numpy() == pytest.approx(1.0)
    nominal = table[(table["method_a"] == "nominal") & (table["task"] == "KL")]
    # nominal errs more by 0.1: lower AMAE and higher QWK are both "B better".
    amae, qwk = nominal[nominal.metric == "amae"], nominal[nominal.metric == "qwk"]
    assert (amae["p_bayes_b_better"] > amae["p_bayes_a_better"]).all()
    assert (qwk["p_bayes_b_better"] > qwk["p_bayes_a_better"]).all()
    assert (amae["verdict"] == amae["method_b"] + " better").all()
    # Soft vs soft: no true difference, and a wide QWK rope of 0.2 calls them equivalent
    # (exploratory rows: the verdict column says so).
    soft = table[(table["method_a"] != "nominal") & (table["metric"] == "qwk")]
    assert (soft["verdict"] == paired.EQUIVALENT + paired.EXPLORATORY_SUFFIX).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_holm_matches_statsmodels(seed):
    p = np.random.default_rng(seed).uniform(0, 0.2, size=9)
    p[3] = p[5]  # a tie
    assert paired.holm(p) == pytest.approx(multipletests(p, method="holm")[1])
