"""Binomial soft labels (Liu et al. 2020) through dlordinal's ``BinomialLoss``.

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
    return dlordinal_loss("BinomialLoss", num_classes, params)


def _matrix(num_classes: int, params: MethodParams) -> np.ndarray:
    return mixed_matrix(_loss(num_classes, params))


METHOD = Method(
    name="binomial",
    label="Binomial",
    family=TARGET_DISTRIBUTION,
    description="Targets follow a binomial distribution centred on the grade: most mass on the"
    " grade, a little on its neighbours.",
    hyperparameters=(LEARNING_RATE, ETA),
    source="the paper's Table 3",
    loss=_loss,
    target_matrix=_matrix,
    rank=1,
    search_key=1,
    in_paper=True,
)
