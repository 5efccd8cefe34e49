"""Expected best validation score by configurations tried (Dodge et al. 2019): the closed
forms against brute-force enumeration of every draw on tiny searches, with ties, both
directions and both ways of drawing; and the per-seed table."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from engine.analysis import expected_max

SEARCHES = [
    [0.52, 0.48, 0.61],
    [0.5, 0.5, 0.4, 0.7, 0.4],  # ties
    [0.3],
    [0.9, 0.1, 0.5, 0.2],
]


def brute_force(values, n, *, lower_is_better, replace):
    """The mean of the best over every equally likely draw: all ordered n-tuples with
    replacement, all n-subsets without."""
    pick = min if lower_is_better else max
    draws = itertools.product(values, repeat=n) if replace else itertools.combinations(values, n)
    return float(np.mean([pick(d) for d in draws]))


@pytest.mark.parametrize("values", SEARCHES)
@pytest.mark.parametrize("lower_is_better", [True, False])
@pytest.mark.parametrize("replace", [False, True])
def test_expected_best_equals_brute_force_enumeration(values, lower_is_better, replace):
    top = len(values) + (2 if replace else 0)
    for n in range(1, top + 1):
        got = expected_max.expected_best(
            values, n, lower_is_better=lower_is_better, replace=replace
        )
        want = brute_force(values, n, lower_is_better=lower_is_better, replace=replace)
        assert got == pytest.approx(want, abs=1e-12), (n, values)


def test_the_curve_starts_at_the_mean_and_ends_at_the_best_without_replacement():
    values = [0.52, 0.48, 0.61, 0.55]
    curve = expected_max.expected_best_curve(values, lower_is_better=True)
    assert curve[0] == pytest.approx(np.mean(values))
    assert curve[-1] == pytest.approx(min(values))
    assert (np.diff(curve) <= 1e-15).all() and len(curve) == 4  # never worse with more tried
    longer = expected_max.expected_best_curve(values, lower_is_better=True, replace=True, n_max=9)
    assert len(longer) == 9 and longer[-1] > min(values)  # with replacement: only approaches it


def test_drawing_more_distinct_configurations_than_tried_is_refused():
    with pytest.raises(ValueError, match="cannot be drawn"):
        expected_max.best_probabilities(3, 4)
    assert np.isnan(expected_max.expected_best([np.nan], 1, lower_is_better=True))


def test_the_table_averages_each_seed_s_curve_and_stops_where_a_seed_does():
    runs = pd.DataFrame(
        {
            "task": "KL",
            "method": ["a"] * 5 + ["b"] * 2,
            "seed": [0, 0, 0, 1, 1, 0, 1],
            "val": [0.5, 0.4, 0.6, 0.3, 0.5, 0.45, np.nan],
        }
    )
    table = expected_max.expected_best_table(runs, "val", lower_is_better=True)
    a = table[table["method"] == "a"].set_index("n")
    # Seed 1 tried 2 configurations: the curve ends at n = 2, every point averaging both seeds.
    assert list(a.index) == [1, 2] and (a["n_seeds"] == 2).all()
    seed0 = expected_max.expected_best([0.5, 0.4, 0.6], 2, lower_is_better=True)
    assert a.loc[2, "expected"] == pytest.approx((seed0 + 0.3) / 2)
    assert a.loc[1, "expected"] == pytest.approx((0.5 + 0.4) / 2)
    assert a.loc[1, "configs"] == 3
    b = table[table["method"] == "b"]  # the unscored run is left out: one seed, one point
    assert list(b["n"]) == [1] and b["seed_sd"].isna().all()
    empty = expected_max.expected_best_table(runs.assign(val=np.nan), "val", lower_is_better=True)
    assert empty.empty and "expected" in empty.columns
