"""Soft-label matrices and losses wrap dlordinal and follow the paper's Table 3."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.soft_labels import (
    METHODS,
    MethodParams,
    grid_size,
    make_loss,
    sample_configs,
    soft_label_matrix,
)


@pytest.mark.parametrize("num_classes", [4, 5])
@pytest.mark.parametrize("method", METHODS)
def test_soft_label_matrix_is_a_unimodal_distribution_per_row(method, num_classes):
    m = soft_label_matrix(method, num_classes, MethodParams(lr=1e-3, eta=1.0, alpha2=0.05, p=1.5))
    assert m.shape == (num_classes, num_classes)
    assert np.all(m >= 0)
    np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=1e-5)
    assert np.all(m.argmax(axis=1) == np.arange(num_classes))


@pytest.mark.parametrize("method", [m for m in METHODS if m != "nominal"])
def test_loss_rises_as_prediction_moves_away_from_the_target(method):
    loss = make_loss(method, 5, MethodParams(lr=1e-3, eta=1.0, alpha2=0.05, p=1.0))
    target = torch.tensor([1])
    losses = [
        float(loss(10 * torch.nn.functional.one_hot(torch.tensor([k]), 5).float(), target))
        for k in (1, 2, 3, 4)
    ]
    assert losses == sorted(losses)


def test_eta_mixes_one_hot_and_soft_targets():
    soft = soft_label_matrix("beta", 4, MethodParams(lr=1e-3, eta=1.0))
    mixed = soft_label_matrix("beta", 4, MethodParams(lr=1e-3, eta=0.8))
    np.testing.assert_allclose(mixed, 0.2 * np.eye(4) + 0.8 * soft, atol=1e-6)


def test_grid_sizes_follow_table_3():
    assert {m: grid_size(m) for m in METHODS} == {
        "nominal": 3,
        "binomial": 6,
        "beta": 6,
        "triangular": 18,
        "exponential": 18,
    }


def test_search_samples_without_replacement_and_reproducibly():
    picks = sample_configs("triangular", 15, seed=4)
    assert len(picks) == len(set(picks)) == 15
    assert picks == sample_configs("triangular", 15, seed=4)
    assert picks != sample_configs("triangular", 15, seed=5)
    assert len(sample_configs("nominal", 15, seed=0)) == 3
