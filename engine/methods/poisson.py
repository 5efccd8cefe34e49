"""Poisson soft labels (Liu et al. 2020) through dlordinal's ``PoissonLoss``.

Search space: learning rate and eta as the paper's soft methods; the Poisson targets have
no parameter of their own in dlordinal.
"""

from __future__ import annotations

from engine.methods.base import ETA, LEARNING_RATE, TARGET_DISTRIBUTION, Method
from engine.methods.targets import dlordinal_soft_target

_loss, _matrix = dlordinal_soft_target("PoissonLoss")


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
