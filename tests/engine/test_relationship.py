"""Tests for engine.analysis.relationship: tables, KLD, residuals and per-seed scoring."""

import logging
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import entropy

from engine.analysis.relationship import (
    CPPD_GRADES,
    DEFAULT_EPS,
    KL_GRADES,
    SeedRelationship,
    contingency,
    count_mae,
    kld,
    relationship_by_seed,
    relationship_scores,
    residuals,
    summarise_relationship,
)

# The reference joint table (reference/kl_cppd_contingency.csv), rows KL 0-4, cols CPPD 0-3.
REFERENCE = np.array(
    [
        [111, 13, 8, 14],
        [201, 52, 34, 23],
        [98, 45, 36, 28],
        [70, 42, 40, 43],
        [29, 21, 30, 32],
    ]
)


def test_contingency_hand_case():
    # Images: (KL, CPPD) = (0,0), (0,0), (4,3), (2,1), (4,0)
    kl = np.array([0, 0, 4, 2, 4])
    cppd = np.array([0, 0, 3, 1, 0])
    table = contingency(kl, cppd)
    expected = np.zeros((KL_GRADES, CPPD_GRADES), dtype=np.int64)
    expected[0, 0] = 2
    expected[4, 3] = 1
    expected[2, 1] = 1
    expected[4, 0] = 1
    np.testing.assert_array_equal(table, expected)
    assert table.shape == (5, 4)


@pytest.mark.parametrize(("kl", "cppd"), [([5], [0]), ([0], [4]), ([-1], [0]), ([0, 1], [0])])
def test_contingency_rejects_bad_grades(kl, cppd):
    with pytest.raises(ValueError):
        contingency(np.array(kl), np.array(cppd))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kld_matches_scipy_entropy_without_empty_cells(seed):
    rng = np.random.default_rng(seed)
    predicted = rng.integers(1, 60, size=(5, 4))  # no zeros
    # scipy.stats.entropy normalises both inputs and uses the natural log.
    expected = entropy(REFERENCE.ravel(), predicted.ravel())
    assert kld(REFERENCE, predicted) == pytest.approx(expected, rel=1e-12)


def test_kld_of_identical_distributions_is_zero():
    assert kld(REFERENCE, REFERENCE * 3) == pytest.approx(0.0, abs=1e-15)


def test_kld_ignores_cells_where_truth_is_zero():
    # Truth puts nothing in the last cell; predicting there only shrinks Q elsewhere.
    p = np.array([2.0, 2.0, 0.0])
    q = np.array([1.0, 1.0, 2.0])
    # P = [.5, .5, 0], Q = [.25, .25, .5] -> 2 * 0.5 * log(0.5 / 0.25) = log 2.
    assert kld(p, q) == pytest.approx(math.log(2))


def test_kld_uses_eps_for_empty_predicted_cells():
    p = np.array([1.0, 1.0])
    q = np.array([2.0, 0.0])
    # Q = [1, 0] -> [1, eps] renormalised -> [1/(1+eps), eps/(1+eps)].
    for eps in (DEFAULT_EPS, 1e-3):
        q_eps = np.array([1.0, eps]) / (1 + eps)
        expected = 0.5 * math.log(0.5 / q_eps[0]) + 0.5 * math.log(0.5 / q_eps[1])
        assert kld(p, q, eps=eps) == pytest.approx(expected)
    # A smaller eps penalises the missed combination more, and stays finite.
    assert math.isfinite(kld(p, q, eps=1e-12))
    assert kld(p, q, eps=1e-9) > kld(p, q, eps=1e-3)
    # Every empty predicted cell takes eps, also where the truth is empty, so an exact
    # match with k empty cells scores log(1 + k * eps): Q = P / (1 + k eps) on P's support.
    assert kld(np.array([1.0, 0.0, 0.0]), np.array([3.0, 0.0, 0.0])) == pytest.approx(
        math.log(1 + 2 * DEFAULT_EPS)
    )


def test_kld_rejects_bad_input():
    with pytest.raises(ValueError, match="shapes differ"):
        kld(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="empty"):
        kld(np.ones(3), np.zeros(3))
    with pytest.raises(ValueError, match="eps"):
        kld(np.ones(3), np.ones(3), eps=0.0)


def test_residual_is_positive_for_over_estimation():
    true = np.array([[8.0, 2.0]])
    pred = np.array([[5.0, 5.0]])  # the model over-predicts the second combination
    normalised = residuals(pred, true)
    np.testing.assert_allclose(normalised, [[-0.3, 0.3]])
    assert normalised.sum() == pytest.approx(0.0)
    np.testing.assert_allclose(residuals(pred, true, normalise=False), [[-3.0, 3.0]])


def test_residuals_compare_proportions_across_different_totals():
    # Same distribution, twice as many images: no residual when normalised.
    np.testing.assert_allclose(residuals(REFERENCE * 2, REFERENCE), np.zeros((5, 4)))


def test_count_mae_hand_case():
    true = np.array([[10, 0], [5, 5]])
    pred = np.array([[7, 2], [5, 6]])
    # |7-10| + |2-0| + |5-5| + |6-5| = 3 + 2 + 0 + 1 = 6 over 4 cells = 1.5
    assert count_mae(pred, true) == pytest.approx(1.5)


def _frame() -> pd.DataFrame:
    """Two seeds with different test images, two methods per seed.

    Seed 0 images: a (KL0, CPPD0), b (KL4, CPPD3), c (KL2, CPPD1)
    Seed 1 images: a (KL0, CPPD0), d (KL1, CPPD0)
    "perfect" predicts the truth; "shifted" predicts KL + 1 (capped) and the true CPPD.
    """
    truth = {0: {"a": (0, 0), "b": (4, 3), "c": (2, 1)}, 1: {"a": (0, 0), "d": (1, 0)}}
    rows = []
    for method in ("perfect", "shifted"):
        for seed, images in truth.items():
            for image_id, (kl, cppd) in images.items():
                kl_pred = kl if method == "perfect" else min(kl + 1, 4)
                rows.append(
                    {
                        "method": method,
                        "seed": seed,
                        "image_id": image_id,
                        "kl_true": kl,
                        "cppd_true": cppd,
                        "kl_pred": kl_pred,
                        "cppd_pred": cppd,
                    }
                )
    return pd.DataFrame(rows)


def test_relationship_uses_each_seeds_own_truth():
    truth, results = relationship_by_seed(_frame())
    assert [(r.method, r.seed) for r in results] == [
        ("perfect", 0),
        ("perfect", 1),
        ("shifted", 0),
        ("shifted", 1),
    ]
    by_key = {(r.method, r.seed): r for r in results}
    seed0 = contingency(np.array([0, 4, 2]), np.array([0, 3, 1]))
    seed1 = contingency(np.array([0, 1]), np.array([0, 0]))
    np.testing.assert_array_equal(by_key[("perfect", 0)].truth, seed0)
    np.testing.assert_array_equal(by_key[("perfect", 1)].truth, seed1)
    # A perfect model matches its own seed's truth on every seed: MAE 0, and KLD only the
    # eps floor log(1 + k * eps) for the k = 17 or 18 empty cells of the 5 x 4 table.
    for seed in (0, 1):
        perfect = by_key[("perfect", seed)]
        empty = int((perfect.table == 0).sum())
        assert perfect.kld == pytest.approx(math.log(1 + empty * DEFAULT_EPS))
        assert perfect.mae == 0.0
        np.testing.assert_array_equal(
            by_key[("perfect", seed)].table, by_key[("perfect", seed)].truth
        )
    assert by_key[("perfect", 0)].n_images == 3
    # Display truth: mean of the two seeds' tables.
    np.testing.assert_allclose(truth, (seed0 + seed1) / 2)

    # Shifted, seed 1: predicted (1,0) and (2,0) vs true (0,0) and (1,0).
    shifted1 = by_key[("shifted", 1)]
    expected_table = contingency(np.array([1, 2]), np.array([0, 0]))
    np.testing.assert_array_equal(shifted1.table, expected_table)
    # |1-0| at (2,0) and |0-1| at (0,0); (1,0) matches: 2 over 20 cells.
    assert shifted1.mae == pytest.approx(2 / 20)
    assert shifted1.kld == pytest.approx(kld(seed1, expected_table))
    assert shifted1.kld > 0


def test_relationship_scores_missing_images_against_what_was_graded(caplog):
    frame = _frame()
    frame = frame[~((frame["method"] == "shifted") & (frame["image_id"] == "b"))]
    with caplog.at_level(logging.WARNING, logger="engine.analysis.relationship"):
        _, results = relationship_by_seed(frame)
    shifted0 = next(r for r in results if (r.method, r.seed) == ("shifted", 0))
    assert shifted0.n_images == 2
    assert shifted0.truth.sum() == 2
    assert "graded 2 of the seed's 3 images" in caplog.text


def test_relationship_rejects_conflicting_truth():
    frame = _frame()
    frame.loc[(frame["method"] == "shifted") & (frame["image_id"] == "a"), "kl_true"] = 3
    with pytest.raises(ValueError, match="true grades differ"):
        relationship_by_seed(frame)


def test_summarise_relationship_means_and_stds():
    _, results = relationship_by_seed(_frame())
    summary = summarise_relationship(results).set_index("method")
    assert list(summary.index) == ["perfect", "shifted"]
    shifted = [r for r in results if r.method == "shifted"]
    klds = [r.kld for r in shifted]
    assert summary.loc["shifted", "n_seeds"] == 2
    assert summary.loc["shifted", "kld_mean"] == pytest.approx(np.mean(klds))
    assert summary.loc["shifted", "kld_std"] == pytest.approx(np.std(klds, ddof=1))
    assert summary.loc["shifted", "mae_mean"] == pytest.approx(np.mean([r.mae for r in shifted]))
    assert summary.loc["perfect", "kld_mean"] < 1e-4  # only the eps floor
    mean_table = summary.loc["shifted", "mean_table"]
    assert mean_table.shape == (5, 4)
    np.testing.assert_allclose(mean_table, (shifted[0].table + shifted[1].table) / 2)
    np.testing.assert_allclose(
        summary.loc["shifted", "residuals"],
        residuals(mean_table, summary.loc["shifted", "mean_truth"]),
    )
    np.testing.assert_allclose(summary.loc["perfect", "residuals"], np.zeros((5, 4)))


def test_summarise_relationship_single_seed_has_no_std():
    result = SeedRelationship(
        seed=0,
        method="beta",
        table=REFERENCE,
        kld=0.0,
        mae=0.0,
        truth=REFERENCE,
        n_images=int(REFERENCE.sum()),
    )
    summary = summarise_relationship([result])
    assert summary.loc[0, "n_seeds"] == 1
    assert np.isnan(summary.loc[0, "kld_std"])


def test_relationship_scores_feed_the_stats_tests():
    _, results = relationship_by_seed(_frame())
    scores = relationship_scores(results, "kld")
    assert list(scores.columns) == ["method", "seed", "value"]
    assert len(scores) == 4
    assert scores["value"].tolist() == [r.kld for r in results]
    assert relationship_scores(results, "mae")["value"].tolist() == [r.mae for r in results]
    with pytest.raises(ValueError):
        relationship_scores(results, "qwk")


def test_kld_grows_by_the_missed_mass_times_ln_1000_per_step_of_eps():
    """The issue's example: a grade combination never predicted makes ε decide the KLD
    (there 0.44, 1.49, 2.54 nats at 1e-3, 1e-6, 1e-9: steps of 1.05). Here 38 of 250 true
    films (0.152) sit in cells the model never predicts, so each factor 1000 in ε adds
    0.152 × ln 1000 = 1.05 nats, the same shape."""
    from engine.analysis.relationship import SENSITIVITY_EPS, missed_mass

    truth = np.array(
        [[40, 12, 8, 0], [35, 20, 5, 10], [20, 25, 10, 5], [5, 15, 12, 8], [2, 6, 6, 6]]
    )
    predicted = truth.copy()
    predicted[4, :] = 0  # no film predicted KL 4 (20 true)
    predicted[0, 2] = predicted[1, 3] = 0  # nor these two combinations (8 + 10 true)
    predicted[0, 0] += 38  # those films were predicted KL 0 / CPPD 0 instead
    assert truth.sum() == predicted.sum() == 250
    assert missed_mass(truth, predicted) == pytest.approx(0.152)
    values = [kld(truth, predicted, eps=eps) for eps in SENSITIVITY_EPS]
    # (the first step is a little short: at 1e-3 the six empty cells' eps shrink the other
    # cells by 1 / (1 + 6e-3) when Q is renormalised)
    np.testing.assert_allclose(np.diff(values), 0.152 * math.log(1000), rtol=1e-2)
    assert np.diff(values) == pytest.approx([1.05, 1.05], abs=0.01)
    # and by hand at eps = 1e-3: sum of P log(P / Q) over the truth's cells, Q with eps in
    # every empty predicted cell, renormalised
    p = truth / truth.sum()
    q = np.where(predicted == 0, 1e-3, predicted / predicted.sum())
    q = q / q.sum()
    expected = float(np.sum(p[p > 0] * np.log(p[p > 0] / q[p > 0])))
    assert values[0] == pytest.approx(expected, rel=1e-12)


def test_kld_does_not_depend_on_eps_when_every_true_cell_is_predicted():
    from engine.analysis.relationship import SENSITIVITY_EPS, missed_mass

    truth = np.array([[5, 1], [0, 4]])
    predicted = np.array([[4, 2], [0, 4]])  # the empty cell is empty in the truth too
    assert missed_mass(truth, predicted) == 0.0
    values = [kld(truth, predicted, eps=eps) for eps in SENSITIVITY_EPS]
    assert max(values) - min(values) < 1e-3


def test_jeffreys_smoothed_kld_by_hand():
    from engine.analysis.relationship import kld_smoothed

    truth = np.array([5, 3, 2])
    predicted = np.array([6, 4, 0])
    # Q = (counts + 1/2) / (10 + 3/2) = (6.5, 4.5, 0.5) / 11.5
    q = np.array([6.5, 4.5, 0.5]) / 11.5
    p = truth / 10
    assert kld_smoothed(truth, predicted) == pytest.approx(float(np.sum(p * np.log(p / q))))
    assert kld_smoothed(truth, predicted) < kld(truth, predicted, eps=1e-3)
    with pytest.raises(ValueError, match="alpha"):
        kld_smoothed(truth, predicted, alpha=0)


def test_kld_sensitivity_lists_every_method_seed_and_eps():
    from engine.analysis.relationship import SENSITIVITY_EPS, kld_sensitivity, relationship_by_seed

    frame = pd.DataFrame(
        {
            "method": ["nominal"] * 4 + ["beta"] * 4,
            "seed": [0, 0, 1, 1] * 2,
            "image_id": ["a", "b", "c", "d"] * 2,
            "kl_true": [0, 4, 1, 2] * 2,
            "cppd_true": [0, 3, 1, 0] * 2,
            "kl_pred": [0, 3, 1, 2, 0, 4, 1, 2],
            "cppd_pred": [0, 3, 1, 0, 0, 3, 1, 0],
        }
    )
    _, results = relationship_by_seed(frame)
    table = kld_sensitivity(results)
    assert len(table) == 4 * len(SENSITIVITY_EPS)
    nominal0 = table[(table["method"] == "nominal") & (table["seed"] == 0)]
    assert nominal0["missed_mass"].tolist() == [0.5] * 3  # KL 4 / CPPD 3 never predicted
    assert nominal0["kld"].is_monotonic_increasing
    beta = table[table["method"] == "beta"]  # a perfect prediction: only log(1 + k eps) left
    assert (beta["kld"] <= np.log1p(20 * beta["eps"]) + 1e-12).all()
    assert (beta["missed_mass"] == 0).all() and (beta["kld_smoothed"] > 0).all()
