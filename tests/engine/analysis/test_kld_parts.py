"""The KLD's chain-rule parts add up to relationship.kld; MI against scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import mutual_info_score

from engine.analysis import kld_parts, relationship


def _tables(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 30, size=(5, 4))
    predicted = rng.integers(0, 30, size=(5, 4))
    predicted[0, 3] = predicted[4, 0] = 0  # empty predicted cells take ε
    return truth, predicted


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_parts_add_up_to_the_kld_of_the_relationship_page(seed):
    truth, predicted = _tables(seed)
    parts = kld_parts.chain_rule_parts(truth, predicted)
    assert parts["kl_marginal"] + parts["cppd_given_kl"] == pytest.approx(
        relationship.kld(truth, predicted), rel=1e-12
    )
    assert parts["kl_marginal"] >= 0 and parts["cppd_given_kl"] >= 0


def test_a_prediction_with_the_right_conditionals_has_only_a_marginal_part():
    truth = np.array([[8, 2, 0, 0], [4, 4, 2, 0], [1, 3, 3, 3], [0, 1, 2, 7], [0, 0, 5, 5]], float)
    rows = np.array([2.0, 1, 1, 1, 0.5])[:, None]  # every KL row rescaled
    parts = kld_parts.chain_rule_parts(truth, truth * rows)
    assert parts["cppd_given_kl"] == pytest.approx(0.0, abs=1e-5)  # up to the ε cells
    p_kl = truth.sum(axis=1) / truth.sum()
    q_kl = (truth * rows).sum(axis=1) / (truth * rows).sum()
    assert parts["kl_marginal"] == pytest.approx(np.sum(p_kl * np.log(p_kl / q_kl)), abs=1e-5)


def test_mutual_information_matches_scikit_learn_and_is_zero_for_independence():
    truth, _ = _tables(4)
    assert kld_parts.mutual_information(truth) == pytest.approx(
        mutual_info_score(None, None, contingency=truth)
    )
    independent = np.outer([1, 2, 3, 4, 5], [4, 3, 2, 1])
    assert kld_parts.mutual_information(independent) == pytest.approx(0.0, abs=1e-12)


def test_summary_names_the_part_that_drives_each_method():
    truth = np.array([[8, 2, 0, 0], [4, 4, 2, 0], [1, 3, 3, 3], [0, 1, 2, 7], [0, 0, 5, 5]], float)
    marginal_only = truth * np.array([6.0, 1, 1, 1, 0.2])[:, None]
    shuffled = truth[:, ::-1].copy()  # right KL marginal, CPPD reversed within each KL grade
    results = [
        relationship.SeedRelationship(s, m, table, 0.0, 0.0, truth, int(truth.sum()))
        for s in (0, 1)
        for m, table in (("nominal", marginal_only), ("beta", shuffled))
    ]
    summary = kld_parts.summarise(kld_parts.decompose(results)).set_index("method")
    assert summary.loc["nominal", "driver"] == "kl_marginal"
    assert summary.loc["beta", "driver"] == "cppd_given_kl"
    assert summary.loc["beta", "kl_marginal"] == pytest.approx(0.0, abs=1e-9)  # ε cells only
    assert "marginal finding" in summary.loc["nominal", "reading"]
    assert summary.loc["nominal", "n_seeds"] == 2
