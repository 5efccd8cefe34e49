"""CORN: conditional ordinal regression (Shi et al. 2021) through dlordinal's ``CORNLoss``
and a head of J - 1 conditional logits (`engine.methods.heads`, ``corn``).

Search space: the learning rate only (the paper's grid); CORN has no parameter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.methods.base import LEARNING_RATE, OUTPUT_LAYER, Method, MethodParams
from engine.methods.targets import check_classes

if TYPE_CHECKING:
    from torch import nn


def _loss(num_classes: int, params: MethodParams) -> nn.Module:
    from dlordinal.losses import CORNLoss

    check_classes(num_classes)
    return CORNLoss(num_classes=num_classes)


METHOD = Method(
    name="corn",
    label="CORN",
    family=OUTPUT_LAYER,
    description="J - 1 binary questions 'is the grade above k, given it is above k - 1?'; "
    "their product gives ordered probabilities.",
    hyperparameters=(LEARNING_RATE,),
    source="no parameter of its own (Shi et al. 2021); lr: the paper",
    loss=_loss,
    head="corn",
)
