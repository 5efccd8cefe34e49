"""Poisson soft labels (Liu et al. 2020) through dlordinal's ``PoissonLoss``.

Search space: learning rate and eta as the paper's soft methods; the Poisson targets have
no parameter of their own in dlordinal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.methods.base import ETA, LEARNING_RATE, TARGET_DISTRIBUTION, Method, MethodParams
from engine.methods.targets import dlordinal_loss, mixed_matrix

if TYPE_CHECKING:
    import numpy as np
    from torch import nn


def _loss(num_classes: int, params: MethodParams) -> nn.Module:
    return dlordinal_loss("PoissonLoss", num_classes, params)


def _matrix(num_classes: int, params: MethodParams) -> np.ndarray:
    return mixed_matrix(_loss(num_classes, params))


METHOD = Method(
    name="poisson",
    label="Poisson",
    family=TARGET_DISTRIBUTION,
    description="Targets follow a Poisson distribution over the grades, softmax-normalised: most"
    " mass on the grade, decaying with distance.",
    hyperparameters=(LEARNING_RATE, ETA),
    source="the paper's Table 3 eta grid; the distribution has no parameter of its own (dlordinal)",
    loss=_loss,
    target_matrix=_matrix,
    rank=100,
)
