"""engine.analysis.ranking against hand formulas, scipy and scikit-posthocs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import scikit_posthocs as sp
from scipy import stats

from engine.analysis import ranking

METHODS = ["nominal", "binomial", "beta", "triangular", "exponential"]


def _scores(matrix: np.ndarray, methods: list[str], task: str | None = None) -> pd.DataFrame:
    """Long scores from a (seeds, methods) matrix."""
    rows = [
        {"method": m, "seed": s, "value": float(matrix[s, j])}
        for s in range(matrix.shape[0])
        for j, m in enumerate(methods)
    ]
    frame = pd.DataFrame(rows)
    return frame.assign(task=task) if task else frame


# scikit-posthocs' example for posthoc_nemenyi_friedman (6 blocks, 3 groups), one tie removed.
HAND = np.array(
    [[31, 27, 24], [31, 28, 30], [45, 29, 46], [21, 18, 48], [42, 36, 46], [32, 17, 40]]
)


def test_mean_ranks_and_friedman_statistic_match_the_textbook_formula():
    result = ranking.critical_difference(_scores(HAND, ["a", "b", "c"]), lower_is_better=True)
    # Ranks per block, 1 = lowest: a 3,3,2,2,2,2 / b 2,1,1,1,1,1 / c 1,2,3,3,3,3
    expected = {"a": 14 / 6, "b": 7 / 6, "c": 15 / 6}
    got = result.table.set_index("method")["mean_rank"]
    assert got.to_dict() == pytest.approx(expected)
    assert list(result.table["method"]) == ["b", "a", "c"]  # best first
    n, k = HAND.shape
    sums = np.array([14, 7, 15])
    chi2 = 12 / (n * k * (k + 1)) * (sums**2).sum() - 3 * n * (k + 1)
    assert result.statistic == pytest.approx(chi2)
    assert result.statistic == pytest.approx(stats.friedmanchisquare(*HAND.T).statistic)
    assert result.p == pytest.approx(stats.chi2.sf(chi2, k - 1))
    assert result.n_blocks == 6


def test_nemenyi_p_values_match_scikit_posthocs_and_the_studentised_range():
    result = ranking.critical_difference(_scores(HAND, ["a", "b", "c"]), lower_is_better=True)
    reference = sp.posthoc_nemenyi_friedman(HAND)
    reference.index = reference.columns = ["a", "b", "c"]
    assert result.p_values.loc[["a", "b", "c"], ["a", "b", "c"]].to_numpy() == pytest.approx(
        reference.to_numpy()
    )
    ranks = result.table.set_index("method")["mean_rank"]
    n, k = HAND.shape
    q = abs(ranks["a"] - ranks["c"]) / math.sqrt(k * (k + 1) / (6 * n)) * math.sqrt(2)
    assert result.p_values.loc["a", "c"] == pytest.approx(stats.studentized_range.sf(q, k, np.inf))


def test_conover_p_values_are_scikit_posthocs_holm_adjusted_ones():
    result = ranking.critical_difference(
        _scores(HAND, ["a", "b", "c"]), lower_is_better=True, posthoc="conover"
    )
    reference = sp.posthoc_conover_friedman(HAND, p_adjust="holm")
    assert result.p_values.loc[["a", "b", "c"], ["a", "b", "c"]].to_numpy() == pytest.approx(
        reference.to_numpy()
    )
    assert result.posthoc == "conover"


@pytest.mark.parametrize(("k", "n", "q_alpha"), [(5, 20, 2.728), (3, 10, 2.343), (10, 20, 3.164)])
def test_critical_difference_is_demsars_formula_with_his_table_of_q(k, n, q_alpha):
    # q_0.05 from Demšar (2006), Table 5(a).
    expected = q_alpha * math.sqrt(k * (k + 1) / (6 * n))
    assert ranking.nemenyi_critical_difference(k, n) == pytest.approx(expected, abs=2e-3)


def _demsar_bars(ranks: pd.Series, cd: float) -> set[tuple[str, ...]]:
    """Runs of rank-adjacent methods spanning at most CD, not inside a longer run."""
    ordered = ranks.sort_values()
    names, values = list(ordered.index), ordered.to_numpy()
    runs = []
    for i in range(len(names)):
        j = i
        while j + 1 < len(names) and values[j + 1] - values[i] <= cd:
            j += 1
        if j > i:
            runs.append((i, j))
    maximal = [r for r in runs if not any(o != r and o[0] <= r[0] and r[1] <= o[1] for o in runs)]
    return {tuple(names[i : j + 1]) for i, j in maximal}


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_nemenyi_groups_are_the_runs_within_the_critical_difference(seed):
    rng = np.random.default_rng(seed)
    means = np.array([0.70, 0.52, 0.50, 0.55, 0.45])
    matrix = means + rng.normal(0, 0.08, size=(20, 5))
    result = ranking.critical_difference(_scores(matrix, METHODS), lower_is_better=True)
    ranks = result.table.set_index("method")["mean_rank"]
    assert set(result.groups["methods"]) == _demsar_bars(ranks, result.cd)
    for row in result.groups.itertuples():
        assert row.high - row.low <= result.cd
        assert all(
            result.p_values.loc[a, b] >= 0.05 for a, b in itertools.combinations(row.methods, 2)
        )
    assert list(result.groups["group"]) == list(range(1, len(result.groups) + 1))


def test_higher_is_better_gives_rank_one_to_the_highest_value():
    matrix = np.tile([0.9, 0.5, 0.1], (4, 1)) + np.arange(4)[:, None] * 0.01
    low = ranking.critical_difference(_scores(matrix, ["a", "b", "c"]), lower_is_better=True)
    high = ranking.critical_difference(_scores(matrix, ["a", "b", "c"]), lower_is_better=False)
    assert list(low.table["method"]) == ["c", "b", "a"]
    assert list(high.table["method"]) == ["a", "b", "c"]
    assert high.table["mean_rank"].tolist() == [1.0, 2.0, 3.0]
    assert "best mean rank: a" in high.reading


def test_ties_share_the_average_rank():
    matrix = np.array([[0.1, 0.1, 0.3], [0.2, 0.2, 0.1], [0.1, 0.1, 0.2]])
    result = ranking.critical_difference(_scores(matrix, ["a", "b", "c"]), lower_is_better=True)
    ranks = result.table.set_index("method")["mean_rank"]
    assert ranks["a"] == ranks["b"] == pytest.approx((1.5 + 2.5 + 1.5) / 3)


def test_seeds_not_run_by_every_method_are_left_out_and_counted():
    rng = np.random.default_rng(5)
    scores = _scores(rng.random((6, 3)), ["a", "b", "c"])
    scores = scores[~((scores["method"] == "c") & (scores["seed"] >= 4))]
    result = ranking.critical_difference(scores, lower_is_better=True)
    assert result.n_blocks == 4
    assert "2 seeds that not every method ran were left out" in result.note


def test_each_task_seed_pair_is_a_block_when_tasks_are_pooled():
    rng = np.random.default_rng(6)
    scores = pd.concat(
        [
            _scores(rng.random((5, 3)), ["a", "b", "c"], task="KL"),
            _scores(rng.random((5, 3)), ["a", "b", "c"], task="CPPD"),
        ]
    )
    assert ranking.critical_difference(scores, lower_is_better=True).n_blocks == 10


def test_too_few_methods_or_seeds_give_ranks_and_a_note_not_an_error():
    two = ranking.critical_difference(
        _scores(np.array([[0.1, 0.2], [0.3, 0.1]]), ["a", "b"]), lower_is_better=True
    )
    assert len(two.table) == 2 and math.isnan(two.p) and two.p_values.empty
    assert "at least 3 methods" in two.note
    one_seed = ranking.critical_difference(
        _scores(np.array([[0.1, 0.2, 0.3]]), ["a", "b", "c"]), lower_is_better=True
    )
    assert one_seed.table["mean_rank"].tolist() == [1.0, 2.0, 3.0]
    assert "2 seeds" in one_seed.note
    nothing = ranking.critical_difference(
        pd.DataFrame({"method": ["a"], "seed": [0], "value": [0.3]}), lower_is_better=True
    )
    assert nothing.table.empty and "at least 2 methods" in nothing.reading
    constant = ranking.critical_difference(
        _scores(np.full((4, 3), 0.5), ["a", "b", "c"]), lower_is_better=True
    )
    assert math.isnan(constant.p) and "same value" in constant.note


def test_a_repeated_method_and_seed_or_an_unknown_posthoc_is_refused():
    scores = _scores(np.random.default_rng(0).random((3, 3)), ["a", "b", "c"])
    with pytest.raises(ValueError, match="more than one value"):
        ranking.critical_difference(pd.concat([scores, scores]), lower_is_better=True)
    with pytest.raises(ValueError, match="posthoc"):
        ranking.critical_difference(scores, lower_is_better=True, posthoc="dunn")


def test_reading_names_the_groups_when_the_ranks_differ():
    matrix = np.tile([0.1, 0.2, 0.8, 0.9], (12, 1)) + np.random.default_rng(2).normal(
        0, 0.01, (12, 4)
    )
    result = ranking.critical_difference(
        _scores(matrix, ["a", "b", "c", "d"]), lower_is_better=True
    )
    assert result.p < 0.05
    assert "ranks differ" in result.reading
    assert "cannot be told apart" in result.reading
    assert ("a", "b") in set(result.groups["methods"])
    assert ranking.BLOCKING_SENTENCE.startswith("Blocking by seed")
