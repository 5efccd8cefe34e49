"""The t quantile and two-sided p the paired tests and the referee use are scipy's numbers."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from engine.analysis.paired_tests import t_quantile, t_two_sided_p

NAN = math.nan
# Degrees of freedom and values as the tests meet them (few seeds, Satterthwaite's fractional
# df, an infinite df) and the edges (zero, negative, NaN), where scipy returns NaN or inf.
DFS = [0.0, -1.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.7, 29.3, 1e4, 1e8, math.inf, NAN]


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("df", DFS)
def test_the_upper_quantile_is_scipys_to_the_last_bit(df: float) -> None:
    for q in (0.5, 0.6, 0.95, 0.975, 0.999, 1.0, 1.1, NAN):
        assert _same(t_quantile(q, df), float(sps.t.ppf(q, df))), (q, df)


@pytest.mark.parametrize("df", DFS)
def test_the_two_sided_p_is_scipys_to_the_last_bit_whatever_the_sign(df: float) -> None:
    for t in (0.0, 1e-9, 0.5, 1.96, 3.0, 50.0, math.inf, NAN):
        expected = float(2 * sps.t.sf(abs(t), df))
        assert _same(t_two_sided_p(t, df), expected), (t, df)
        assert _same(t_two_sided_p(-t, df), expected), (-t, df)
