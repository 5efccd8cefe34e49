"""Exponential soft labels (Vargas et al. 2023) through dlordinal's ``ExponentialLoss``.

Search space: the paper's Table 3 (learning rate, eta, p).
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

POWER = HyperParameter(
    "p", "p", (1.0, 1.5, 2.0), "the power of the distance |j - k| in the exponential decay"
)


_loss, _matrix = dlordinal_soft_target("ExponentialLoss", p=("p", 1.0))


METHOD = Method(
    name="exponential",
    label="Exponential",
    family=TARGET_DISTRIBUTION,
    description="Targets decay exponentially with the distance |j - k|^p: p sets how sharply mass "
    "falls off.",
    hyperparameters=(LEARNING_RATE, ETA, POWER),
    source="the paper's Table 3",
    loss=_loss,
    target_matrix=_matrix,
    rank=4,
    search_key=4,
    in_paper=True,
)
