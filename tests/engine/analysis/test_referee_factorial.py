"""The referee's Wilcoxon (Hodges–Lehmann) interval and its factorial design's intervals and
tests, scored on draws whose truth is known."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from engine.analysis import paired, referee
from engine.analysis import variance_components as vc
from engine.analysis.referee import Comparison, PairSample

REAL = Comparison("a", "b")
NULL = Comparison("a", "a_twin", null=True)
FACTORIAL_KEYS = ("factorial", "split_means", "design_corrected")


def _crossed(
    rng: np.random.Generator,
    *,
    k: int,
    splits: int,
    inits: int,
    mean: float,
    rho: float,
    init_var: float = 0.5,
    comparison: Comparison = REAL,
) -> list[PairSample]:
    """``k`` datasets of ``splits × inits`` cells: d = mean + b_k + u_ks + c_ki + e_ksi.

    The split part ``b_k + u_ks`` has variance 1 and between-split correlation ``rho`` within
    a dataset (``b_k`` is the dataset's own draw of patients, which every split resamples);
    the inits add ``init_var`` (init ``i`` the same on every split: crossed) and the residual
    0.25. The truth is ``mean``.
    """
    out = []
    for dataset in range(k):
        shift = rng.normal(0.0, math.sqrt(rho))
        split = rng.normal(0.0, math.sqrt(1 - rho), size=(splits, 1))
        init = rng.normal(0.0, math.sqrt(init_var), size=(1, inits))
        noise = rng.normal(0.0, 0.5, size=(splits, inits))
        cells = (mean + shift + split + init + noise).ravel()  # split-major, as `engine.seeds`
        split_seeds, init_seeds = np.divmod(np.arange(splits * inits), inits)
        out.append(
            PairSample(
                dataset=dataset,
                comparison=comparison,
                diffs=cells,
                fresh_diffs=np.full(cells.size, mean),
                ratio=rho / (1 - rho),
                split_seeds=split_seeds,
                init_seeds=init_seeds,
            )
        )
    return out


def _coverage(table: pd.DataFrame, interval: str, pair: str = REAL.name) -> float:
    row = table[(table["interval"] == interval) & (table["pair"] == pair)]
    return float(row["coverage"].iloc[0])


def _rules(*keys: str) -> tuple[referee.IntervalRule, ...]:
    return tuple(rule for rule in referee.INTERVALS if rule.key in keys)


def _tests(*keys: str) -> tuple[referee.TestRule, ...]:
    return tuple(rule for rule in referee.TESTS if rule.key in keys)


def test_design_corrected_interval_covers_new_patients_where_the_factorial_one_does_not():
    """Splits of one dataset share its patients (rho 0.3): the factorial interval, taking the
    splits as independent data, is short of 95 %; charging Nadeau–Bengio's r = rho/(1 − rho)
    to the split component alone covers (its variance is then right in expectation;
    Satterthwaite's df on few inits errs wide)."""
    rng = np.random.default_rng(10)
    samples = _crossed(rng, k=1000, splits=10, inits=2, mean=0.2, rho=0.3)
    assert all(s.factorial for s in samples)
    table = referee.coverage(samples, intervals=_rules(*FACTORIAL_KEYS))
    assert _coverage(table, "design_corrected") > 0.95 - 0.012
    assert _coverage(table, "factorial") < 0.9


def test_split_means_are_exact_without_init_variance_and_short_with_crossed_inits():
    """t on the split means is exact when splits are independent and inits add nothing; a
    crossed init (the same init seed on every split) moves every split mean alike, which the
    split means' spread cannot see."""
    rng = np.random.default_rng(11)
    plain = _crossed(rng, k=2000, splits=4, inits=3, mean=0.0, rho=0.0, init_var=0.0)
    table = referee.coverage(plain, intervals=_rules(*FACTORIAL_KEYS))
    assert _coverage(table, "split_means") == pytest.approx(0.95, abs=0.012)
    assert _coverage(table, "factorial") > 0.95 - 0.012
    assert _coverage(table, "design_corrected") == _coverage(table, "factorial")  # r = 0
    crossed = _crossed(rng, k=800, splits=4, inits=3, mean=0.0, rho=0.0, init_var=0.5)
    table = referee.coverage(crossed, intervals=_rules(*FACTORIAL_KEYS))
    assert _coverage(table, "split_means") < 0.93
    assert _coverage(table, "factorial") > 0.95 - 0.012


def test_factorial_tests_hold_their_type_one_error_on_a_null_pair():
    rng = np.random.default_rng(12)
    samples = _crossed(
        rng, k=2000, splits=3, inits=2, mean=0.0, rho=0.0, init_var=0.0, comparison=NULL
    )
    table = referee.rejections(samples, tests=_tests(*FACTORIAL_KEYS))
    rates = table.set_index("test")["rate"]
    assert set(table["measure"]) == {referee.TYPE_I}
    assert (table["n_datasets"] == 2000).all()
    assert rates["split_means"] == pytest.approx(0.05, abs=0.012)  # an exact t on 3 means
    assert rates["factorial"] <= 0.05 + 0.012
    assert rates["design_corrected"] == rates["factorial"]  # r = 0: the same test


def test_the_factorial_intervals_are_variance_components_own():
    sample = _crossed(np.random.default_rng(13), k=1, splits=3, inits=2, mean=0.1, rho=0.2)[0]
    cells = pd.DataFrame(
        {"split": sample.split_seeds, "init": sample.init_seeds, "value": sample.diffs}
    )
    comp = vc.estimate(cells)
    by_key = {rule.key: rule.compute(sample, 0.9) for rule in referee.INTERVALS}
    factorial = vc.factorial_interval(comp, level=0.9)
    design = vc.design_interval(comp, sample.ratio, level=0.9)
    assert by_key["factorial"] == pytest.approx((factorial.low, factorial.high))
    assert by_key["design_corrected"] == pytest.approx((design.low, design.high))
    means = vc.split_means_interval(comp, level=0.9)
    assert by_key["split_means"] == pytest.approx((means.low, means.high))


def test_on_independent_seeds_the_factorial_rows_are_not_run_not_misses():
    rng = np.random.default_rng(14)
    samples = [
        PairSample(k, REAL, rng.normal(size=6), np.zeros(6), 0.4) for k in range(3)
    ] + [  # seeds recorded, but each drew its own split and init: not crossed
        PairSample(
            k, NULL, rng.normal(size=6), np.zeros(6), 0.4, split_seeds=np.arange(6),
            init_seeds=np.arange(6),
        )
        for k in range(3)
    ]  # fmt: skip
    assert not any(s.factorial for s in samples)
    table = referee.coverage(samples)
    assert not set(FACTORIAL_KEYS) & set(table["interval"])
    tests = referee.rejections(samples, tests=_tests(*FACTORIAL_KEYS))
    assert tests["rate"].isna().all() and (tests["n_datasets"] == 0).all()


def test_the_wilcoxon_interval_is_the_hodges_lehmann_one_and_covers_symmetric_draws():
    rng = np.random.default_rng(15)
    samples = [
        PairSample(k, REAL, 0.3 + rng.normal(size=10), np.full(10, 0.3), 0.0) for k in range(3000)
    ]
    (rule,) = _rules("wilcoxon_hl")
    assert rule.targets == referee.PSEUDO_MEDIAN
    result = paired.hodges_lehmann(samples[0].diffs)
    assert rule.compute(samples[0], 0.95) == (result.low, result.high)
    # Normal differences are symmetric, so the pseudo-median is the mean: it covers at its
    # exact confidence (1 − 2·P(T+ <= 8) with 10 seeds, 0.951).
    table = referee.coverage(samples, intervals=(rule,))
    assert _coverage(table, "wilcoxon_hl") == pytest.approx(result.confidence, abs=0.012)
    # Five seeds admit no finite 95 % interval: not run, not a miss.
    five = PairSample(0, REAL, samples[0].diffs[:5], np.zeros(5), 0.0)
    assert all(math.isnan(x) for x in rule.compute(five, 0.95))


def test_the_wilcoxon_interval_is_never_recommended_for_the_mean():
    rows = [
        ("wilcoxon_hl", 0.96, 0.01),
        ("corrected_t", 0.95, 0.05),
        ("naive_t", 0.70, 0.005),
    ]
    summary = pd.DataFrame(
        [
            {
                "section": referee.COVERAGE,
                "procedure": procedure,
                "pair": REAL.name,
                "null": False,
                "value": value,
                "n_datasets": 40,
                "mean_width": width,
                "mc_se": 0.0,
            }
            for procedure, value, width in rows
        ]
    )
    assert referee.recommend(summary) == "corrected_t"


def test_pair_samples_read_the_seed_factors_where_the_results_have_them():
    rows = []
    for dataset in range(2):
        for seed in range(6):
            split, init = divmod(seed, 2)
            for method, value in (("a", 0.5), ("b", 0.4)):
                rows.append(
                    {
                        "dataset": dataset,
                        "seed": seed,
                        "split_seed": split,
                        "init_seed": init,
                        "method": method,
                        "n_test": 30,
                        "n_fit": 70,
                        "test_amae": value + 0.01 * split + 0.003 * init * (method == "a"),
                        "fresh_amae": value,
                    }
                )
    draws = pd.DataFrame(rows)
    samples = referee.pair_samples(draws, [REAL], "amae")
    assert all(s.factorial for s in samples)
    np.testing.assert_array_equal(samples[0].split_seeds, [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(samples[0].init_seeds, [0, 1, 0, 1, 0, 1])
    # Results from before the seeds were recorded read as independent seeds.
    old = referee.pair_samples(draws.drop(columns=list(referee.SEED_FACTORS)), [REAL], "amae")
    assert not any(s.factorial for s in old)
    assert old[0].split_seeds is None
