"""The Hodges–Lehmann estimate and its exact signed-rank interval, checked against a brute-force
inversion of scipy's exact Wilcoxon test."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from engine.analysis import paired


def _walsh(d: np.ndarray) -> np.ndarray:
    """Every Walsh average (d_i + d_j)/2, i <= j, by enumeration."""
    pairs = itertools.combinations_with_replacement(range(d.size), 2)
    return np.sort([(d[i] + d[j]) / 2 for i, j in pairs])


def _not_rejected(d: np.ndarray, theta: float, alpha: float) -> bool:
    """scipy's exact two-sided signed-rank test of ``d − theta`` does not reject at alpha."""
    return stats.wilcoxon(d - theta, method="exact").pvalue > alpha


@pytest.mark.parametrize(("n", "seed"), [(6, 0), (7, 1), (9, 2), (12, 3), (15, 4)])
def test_interval_is_the_set_of_shifts_the_exact_wilcoxon_does_not_reject(n, seed):
    d = np.random.default_rng(seed).normal(0.02, 0.05, size=n)
    result = paired.hodges_lehmann(d, level=0.95)
    walsh = _walsh(d)
    # Between two neighbouring Walsh averages no difference d − θ is zero or tied, so
    # scipy's exact test applies; every such θ is inside the interval iff it is not rejected.
    grid = np.concatenate([[walsh[0] - 1.0], (walsh[:-1] + walsh[1:]) / 2, [walsh[-1] + 1.0]])
    for theta in grid:
        inside = result.low < theta < result.high
        assert inside == _not_rejected(d, float(theta), 0.05), theta
    # The confidence is one minus the exact p just outside either end.
    smaller = walsh[walsh < result.low]
    below = (smaller.max() + result.low) / 2 if smaller.size else result.low - 1.0
    p_out = stats.wilcoxon(d - below, method="exact").pvalue
    assert result.confidence == pytest.approx(1 - p_out, abs=1e-12)
    assert result.confidence >= 0.95
    assert result.estimate == pytest.approx(float(np.median(walsh)))
    assert result.n == n


def test_six_differences_give_their_range_at_95_percent_and_five_no_finite_interval():
    six = np.array([0.3, -0.1, 0.2, 0.5, 0.1, 0.4])
    result = paired.hodges_lehmann(six)
    # P(T+ = 0) = 1/64 <= 0.025 < P(T+ <= 1) = 2/64: one Walsh average cut from each end.
    assert (result.low, result.high) == (-0.1, 0.5)
    assert result.confidence == pytest.approx(1 - 2 / 64)
    five = paired.hodges_lehmann(six[:5])  # P(T+ = 0) = 1/32 > 0.025
    assert five.low == -math.inf and five.high == math.inf and five.confidence == 1.0
    assert five.estimate == pytest.approx(float(np.median(_walsh(six[:5]))))


def test_the_estimate_is_the_pseudo_median_not_the_mean():
    skewed = np.array([0.0, 0.0, 0.01, 0.01, 0.02, 0.5, 0.9])
    result = paired.hodges_lehmann(skewed, level=0.8)
    assert result.estimate < skewed.mean() / 2
    assert result.low <= result.estimate <= result.high
    assert result.confidence >= 0.8


def test_nothing_finite_gives_nans():
    result = paired.hodges_lehmann([math.nan, math.inf])
    assert result.n == 0 and math.isnan(result.estimate) and math.isnan(result.low)
