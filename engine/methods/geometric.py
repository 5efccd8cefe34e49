"""Geometric soft labels (Haas & Hüllermeier 2023) through dlordinal's ``GeometricLoss``.

Search space: the smoothing factor alpha around dlordinal's default 0.1 (0.05, 0.1, 0.2),
learning rate and eta as the paper's soft methods.
"""

from __future__ import annotations

from engine.methods.base import (
    ETA,
    LEARNING_RATE,
    TARGET_DISTRIBUTION,
    HyperParameter,
    Method,
)
from engine.methods.targets import dlordinal_soft_target

ALPHA = HyperParameter(
    "alpha",
    "α",
    (0.05, 0.1, 0.2),
    "the probability mass moved off the true grade, spread geometrically over the others",
)


_loss, _matrix = dlordinal_soft_target("GeometricLoss", alphas=("alpha", 0.1))


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
