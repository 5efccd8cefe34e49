"""Geometric soft labels (Haas & Hüllermeier 2023) through dlordinal's ``GeometricLoss``.

Search space: the smoothing factor alpha around dlordinal's default 0.1 (0.05, 0.1, 0.2),
learning rate and eta as the paper's soft methods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.methods.base import (
    ETA,
    LEARNING_RATE,
    TARGET_DISTRIBUTION,
    HyperParameter,
    Method,
    MethodParams,
)
from engine.methods.targets import dlordinal_loss, mixed_matrix

if TYPE_CHECKING:
    import numpy as np
    from torch import nn

ALPHA = HyperParameter(
    "alpha",
    "α",
    (0.05, 0.1, 0.2),
    "the probability mass moved off the true grade, spread geometrically over the others",
)


def _loss(num_classes: int, params: MethodParams) -> nn.Module:
    return dlordinal_loss("GeometricLoss", num_classes, params, alphas=params.value("alpha", 0.1))


def _matrix(num_classes: int, params: MethodParams) -> np.ndarray:
    return mixed_matrix(_loss(num_classes, params))


METHOD = Method(
    name="geometric",
    label="Geometric",
    family=TARGET_DISTRIBUTION,
    description="The grade keeps 1 - alpha; alpha spreads over the other grades, shrinking "
    "geometrically with distance.",
    hyperparameters=(LEARNING_RATE, ALPHA, ETA),
    source="Haas & Hüllermeier 2023 (alpha around dlordinal's default 0.1); eta as the paper",
    loss=_loss,
    target_matrix=_matrix,
    rank=100,
)
