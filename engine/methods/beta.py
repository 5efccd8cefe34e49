"""Beta soft labels (Vargas et al. 2022) through dlordinal's ``BetaLoss``.

Search space: the paper's Table 3 (learning rate, eta).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.methods.base import ETA, LEARNING_RATE, TARGET_DISTRIBUTION, Method, MethodParams
from engine.methods.targets import dlordinal_loss, mixed_matrix

if TYPE_CHECKING:
    import numpy as np
    from torch import nn


def _loss(num_classes: int, params: MethodParams) -> nn.Module:
    return dlordinal_loss("BetaLoss", num_classes, params)


def _matrix(num_classes: int, params: MethodParams) -> np.ndarray:
    return mixed_matrix(_loss(num_classes, params))


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
