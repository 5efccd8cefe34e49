"""Beta soft labels (Vargas et al. 2022) through dlordinal's ``BetaLoss``.

Search space: the paper's Table 3 (learning rate, eta).
"""

from __future__ import annotations

from engine.methods.base import ETA, LEARNING_RATE, TARGET_DISTRIBUTION, Method
from engine.methods.targets import dlordinal_soft_target

_loss, _matrix = dlordinal_soft_target("BetaLoss")


METHOD = Method(
    name="beta",
    label="Beta",
    family=TARGET_DISTRIBUTION,
    description="Targets from beta distributions on [0, 1] cut into J bins: flexible spread, wider "
    "for middle grades.",
    hyperparameters=(LEARNING_RATE, ETA),
    source="the paper's Table 3",
    loss=_loss,
    target_matrix=_matrix,
    rank=2,
    search_key=2,
    in_paper=True,
)
