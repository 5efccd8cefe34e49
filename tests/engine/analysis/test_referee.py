"""The referee's arithmetic on draws whose truth is known: coverage, type-I error, the
realised correlation, the leave-one-out truth and the recommendation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from engine.analysis import paired, referee
from engine.analysis.referee import Comparison, PairSample

REAL = Comparison("a", "b")
NULL = Comparison("a", "a_twin", null=True)


def _samples(
    rng: np.random.Generator,
    *,
    k: int,
    s: int,
    mean: float,
    rho: float,
    ratio: float,
    comparison: Comparison = REAL,
) -> list[PairSample]:
    """``k`` datasets of ``s`` per-seed differences with a between-dataset share ``rho`` of
    the variance (d = mean + b_k + e_ks, var(b) = rho, var(e) = 1 − rho); the fresh
    differences are the truth itself, so every dataset is scored against ``mean``."""
    out = []
    for dataset in range(k):
        shift = rng.normal(0.0, math.sqrt(rho))
        diffs = mean + shift + rng.normal(0.0, math.sqrt(1 - rho), size=s)
        out.append(
            PairSample(
                dataset=dataset,
                comparison=comparison,
                diffs=diffs,
                fresh_diffs=np.full(s, mean),
                ratio=ratio,
            )
        )
    return out


def _coverage_of(table: pd.DataFrame, interval: str, pair: str) -> float:
    row = table[(table["interval"] == interval) & (table["pair"] == pair)]
    return float(row["coverage"].iloc[0])


def _rate_of(table: pd.DataFrame, test: str, pair: str) -> float:
    row = table[(table["test"] == test) & (table["pair"] == pair)]
    return float(row["rate"].iloc[0])


def test_naive_t_covers_95_percent_of_independent_normal_draws():
    rng = np.random.default_rng(0)
    samples = _samples(rng, k=3000, s=10, mean=0.3, rho=0.0, ratio=0.0)
    table = referee.coverage(samples, intervals=referee.INTERVALS[:2])
    # With r = 0 both t intervals are the exact 95 % interval of normal draws.
    assert _coverage_of(table, "naive_t", REAL.name) == pytest.approx(0.95, abs=0.012)
    assert _coverage_of(table, "corrected_t", REAL.name) == pytest.approx(0.95, abs=0.012)


def test_corrected_t_covers_what_the_naive_t_misses_when_seeds_share_a_dataset():
    """Seeds of one dataset correlated with rho = 0.3: the naive t undercovers, the corrected
    t with r = rho/(1 − rho) covers at the nominal level (Nadeau & Bengio's variance is then
    exact: within-dataset sd² · (1/S + r) = the variance of the dataset's mean)."""
    rng = np.random.default_rng(1)
    rho = 0.3
    samples = _samples(rng, k=3000, s=10, mean=0.0, rho=rho, ratio=rho / (1 - rho))
    table = referee.coverage(samples)
    assert _coverage_of(table, "corrected_t", REAL.name) == pytest.approx(0.95, abs=0.012)
    # The naive interval's half-width is sd/sqrt(10) against a true sd of the mean
    # sqrt(0.3 + 0.07) = 0.61: it covers about 2·Φ(2.26 · 0.26/0.61) − 1 ≈ 0.66.
    assert _coverage_of(table, "naive_t", REAL.name) < 0.75
    # The Bayesian credible interval under the flat prior is the corrected one.
    assert _coverage_of(table, "bayes_t", REAL.name) == _coverage_of(
        table, "corrected_t", REAL.name
    )
    row = table[(table["interval"] == "corrected_t") & (table["pair"] == REAL.name)].iloc[0]
    assert row["mc_se"] == pytest.approx(math.sqrt(row["coverage"] * (1 - row["coverage"]) / 3000))


def test_bayesian_interval_is_the_corrected_interval_number_for_number():
    sample = _samples(np.random.default_rng(2), k=1, s=8, mean=0.1, rho=0.2, ratio=0.25)[0]
    bayes = referee.INTERVALS[2].compute(sample, 0.95)
    corrected = referee.INTERVALS[1].compute(sample, 0.95)
    test = paired.corrected_resampled_t(sample.diffs, 0.25)
    assert bayes == pytest.approx(corrected, abs=1e-12)
    assert corrected == pytest.approx((test.ci_low, test.ci_high), abs=1e-12)


def test_type_one_error_of_an_exact_null_is_alpha_for_the_naive_t():
    rng = np.random.default_rng(3)
    samples = _samples(rng, k=4000, s=10, mean=0.0, rho=0.0, ratio=0.43, comparison=NULL)
    table = referee.rejections(samples, tests=referee.TESTS[:3])
    assert set(table["measure"]) == {referee.TYPE_I}
    assert _rate_of(table, "naive_t", NULL.name) == pytest.approx(0.05, abs=0.011)
    # The corrected test assumes a correlation these draws do not have: conservative.
    assert _rate_of(table, "corrected_t", NULL.name) < 0.01
    # The exact Wilcoxon with 10 seeds: at most alpha, and not far below it.
    assert 0.03 < _rate_of(table, "wilcoxon", NULL.name) <= 0.05 + 0.011


def test_a_real_pair_reports_power_and_the_bootstrap_rejects_only_without_zero():
    base = _samples(np.random.default_rng(4), k=2, s=5, mean=1.0, rho=0.0, ratio=0.0)
    with_boot = [
        PairSample(s.dataset, s.comparison, s.diffs, s.fresh_diffs, s.ratio, boot=box)
        for s, box in zip(base, [(0.2, 0.9), (-0.1, 0.5)], strict=True)
    ]
    table = referee.rejections(with_boot, tests=referee.TESTS[3:4])
    row = table.iloc[0]
    assert row["measure"] == referee.POWER and row["rate"] == 0.5 and row["n_datasets"] == 2


def test_bootstrap_interval_not_run_is_left_out_not_counted_as_a_miss():
    samples = _samples(np.random.default_rng(5), k=3, s=4, mean=0.0, rho=0.0, ratio=0.0)
    table = referee.coverage(samples)
    assert "hier_bootstrap" not in set(table["interval"])


def test_intraclass_correlation_recovers_the_share_of_between_dataset_variance():
    rng = np.random.default_rng(6)
    table = np.vstack([s.diffs for s in _samples(rng, k=2000, s=8, mean=0.0, rho=0.3, ratio=0.0)])
    icc = referee.intraclass_correlation(table)
    assert icc.rho == pytest.approx(0.3, abs=0.03)
    assert icc.low < 0.3 < icc.high
    assert icc.between_var == pytest.approx(0.3, abs=0.05)
    assert icc.within_var == pytest.approx(0.7, abs=0.03)


def test_intraclass_correlation_needs_two_groups_of_two():
    assert math.isnan(referee.intraclass_correlation(np.ones((1, 5))).rho)
    assert math.isnan(referee.intraclass_correlation(np.ones((4, 1))).rho)
    assert math.isnan(referee.intraclass_correlation(np.ones((4, 3))).rho)  # no variation


def test_realised_correlation_sets_the_realised_rho_beside_the_assumed_one():
    rng = np.random.default_rng(7)
    samples = _samples(rng, k=1500, s=6, mean=0.0, rho=0.1, ratio=0.43)
    row = referee.realised_correlation(samples).iloc[0]
    assert row["rho_realised"] == pytest.approx(0.1, abs=0.03)
    assert row["r_realised"] == pytest.approx(row["rho_realised"] / (1 - row["rho_realised"]))
    assert row["rho_assumed"] == pytest.approx(0.43 / 1.43)
    assert math.isnan(row["rho_training"])  # fresh differences constant: nothing to share


def test_truth_of_a_dataset_is_the_mean_of_the_other_datasets_fresh_differences():
    fresh = [np.array([10.0, 10.0]), np.array([1.0, 3.0]), np.array([2.0, 2.0])]
    samples = [PairSample(k, REAL, np.zeros(2), f, 0.4) for k, f in enumerate(fresh)] + [
        PairSample(k, NULL, np.zeros(2), f, 0.4) for k, f in enumerate(fresh)
    ]
    truth = referee.true_differences(samples).set_index(["pair", "dataset"])
    assert truth.loc[(REAL.name, 0), "truth_loo"] == pytest.approx(2.0)
    assert truth.loc[(REAL.name, 1), "truth_loo"] == pytest.approx(6.0)
    assert truth.loc[(REAL.name, 0), "truth"] == pytest.approx(28.0 / 6)
    means = np.array([10.0, 2.0, 2.0])
    assert truth.loc[(REAL.name, 2), "truth_se"] == pytest.approx(means.std(ddof=1) / 3**0.5)
    # A null pair's truth is estimated like a real pair's, not assumed 0.
    assert truth.loc[(NULL.name, 0), "truth_loo"] == pytest.approx(2.0)
    assert truth.loc[(NULL.name, 0), "truth"] == pytest.approx(28.0 / 6)
    assert truth.loc[(NULL.name, 0), "truth_se"] == pytest.approx(means.std(ddof=1) / 3**0.5)


def test_wilson_interval_is_not_a_point_at_full_coverage():
    low, high = referee.wilson_interval(1.0, 24)
    assert high == 1.0 and 0.85 < low < 0.87  # 24 of 24 is compatible with 0.95
    low, high = referee.wilson_interval(0.0, 24)
    assert low == 0.0 and 0.13 < high < 0.15
    # Against the score interval by hand at 0.5 of 100 (centre 0.5).
    z = 1.959963984540054
    half = z * math.sqrt(0.25 / 100 + z * z / 40000) / (1 + z * z / 100)
    assert referee.wilson_interval(0.5, 100) == pytest.approx((0.5 - half, 0.5 + half))
    assert all(math.isnan(v) for v in referee.wilson_interval(0.5, 0))


def test_clustered_draws_count_as_fewer_than_they_are():
    # 40 datasets × 3 pairs; a clustered SE twice the binomial one counts as a quarter.
    share, n = 0.9, 120
    se = 2 * math.sqrt(share * (1 - share) / n)
    assert referee.effective_draws(share, se, 40, n) == pytest.approx(40.0)
    assert referee.effective_draws(share, se / 2, 40, n) == pytest.approx(120.0)
    assert referee.effective_draws(1.0, 0.0, 40, n) == 40.0


def _draws() -> pd.DataFrame:
    rows = []
    for dataset in range(2):
        for seed in range(3):
            for method, value in (("a", 0.5), ("b", 0.4), ("a_twin", 0.5)):
                rows.append(
                    {
                        "dataset": dataset,
                        "seed": seed,
                        "method": method,
                        "n_test": 30,
                        "n_fit": 70,
                        "test_amae": value + 0.01 * seed + 0.1 * dataset,
                        "fresh_amae": value,
                    }
                )
    return pd.DataFrame(rows)


def test_pair_samples_pair_seeds_and_flip_a_bootstrap_given_the_other_way_round():
    boot = pd.DataFrame(
        {
            "dataset": [0, 1],
            "method_a": ["b", "a"],
            "method_b": ["a", "b"],
            "boot_ci_low": [-0.3, 0.05],
            "boot_ci_high": [0.1, 0.2],
        }
    )
    samples = referee.pair_samples(_draws(), [REAL, NULL], "amae", boot=boot)
    assert [(s.comparison.name, s.dataset) for s in samples] == [
        (REAL.name, 0),
        (REAL.name, 1),
        (NULL.name, 0),
        (NULL.name, 1),
    ]
    first = samples[0]
    np.testing.assert_allclose(first.diffs, [0.1, 0.1, 0.1])
    np.testing.assert_allclose(first.fresh_diffs, [0.1, 0.1, 0.1])
    assert first.ratio == pytest.approx(30 / 70)
    assert first.boot == pytest.approx((-0.1, 0.3))  # b − a flipped to a − b
    assert samples[1].boot == pytest.approx((0.05, 0.2))
    assert all(math.isnan(x) for x in samples[2].boot)


def test_pair_samples_name_a_metric_the_results_lack():
    with pytest.raises(ValueError, match="fresh_qwk"):
        referee.pair_samples(_draws().assign(test_qwk=0.0), [REAL], "qwk")


def test_binomial_se_and_covers():
    assert referee.binomial_se(0.9, 100) == pytest.approx(0.03)
    assert math.isnan(referee.binomial_se(0.9, 0))
    assert referee.covers((0.0, 1.0), 1.0) == 1.0
    assert referee.covers((0.0, 1.0), 1.5) == 0.0
    assert math.isnan(referee.covers((math.nan, 1.0), 0.5))


def _summary(rows: list[tuple[str, str, bool, float, int, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "section": referee.COVERAGE,
                "procedure": procedure,
                "pair": pair,
                "null": null,
                "value": value,
                "n_datasets": n,
                "mean_width": width,
                "mc_se": 0.0,
            }
            for procedure, pair, null, value, n, width in rows
        ]
    )


def test_recommend_names_the_narrowest_interval_that_is_not_detectably_short():
    summary = _summary(
        [
            ("naive_t", REAL.name, False, 0.70, 30, 0.01),  # short: below 0.95 − 2·0.04
            ("corrected_t", REAL.name, False, 0.93, 30, 0.03),
            ("hier_bootstrap", REAL.name, False, 0.97, 30, 0.05),
            ("naive_t", NULL.name, True, 1.0, 30, 0.001),  # the null pair does not count
        ]
    )
    assert referee.recommend(summary) == "corrected_t"


def test_recommend_says_nothing_from_too_few_datasets_and_falls_back_to_the_best_cover():
    few = _summary([("naive_t", REAL.name, False, 1.0, 3, 0.01)])
    assert referee.recommend(few) is None
    all_short = _summary(
        [
            ("naive_t", REAL.name, False, 0.5, 40, 0.01),
            ("corrected_t", REAL.name, False, 0.7, 40, 0.1),
        ]
    )
    assert referee.recommend(all_short) == "corrected_t"
    assert referee.below_nominal(0.87, 30) and not referee.below_nominal(0.88, 30)
    assert 0.95 - 2 * math.sqrt(0.95 * 0.05 / 30) == pytest.approx(0.8704, abs=1e-4)


def test_summary_table_holds_every_section_with_its_columns():
    rng = np.random.default_rng(8)
    samples = _samples(rng, k=12, s=5, mean=0.1, rho=0.2, ratio=0.25) + _samples(
        rng, k=12, s=5, mean=0.0, rho=0.0, ratio=0.25, comparison=NULL
    )
    table = referee.summary_table(samples)
    assert tuple(table.columns) == referee.SUMMARY_COLUMNS
    assert set(table["section"]) == {
        referee.COVERAGE,
        referee.TEST,
        referee.CORRELATION,
        referee.TRUTH,
    }
    tests = table[table["section"] == referee.TEST]
    assert set(tests.loc[tests["null"], "measure"]) == {referee.TYPE_I}
    assert set(tests.loc[~tests["null"], "measure"]) == {referee.POWER}
    rho = table[(table["section"] == referee.CORRELATION) & (table["procedure"] == "rho_realised")]
    assert (rho["low"] <= rho["value"]).all() and (rho["value"] <= rho["high"]).all()
