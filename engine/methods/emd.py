"""EMD: the squared earth mover's distance between the predicted and the true cumulative
distributions (ranked probability score; Hou et al. 2016), through dlordinal's ``EMDLoss``.

Search space: the learning rate only (the paper's grid); the loss has no parameter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.methods.base import LEARNING_RATE, REGULARISED_LOSS, Method, MethodParams
from engine.methods.targets import check_classes

if TYPE_CHECKING:
    from torch import nn


def _loss(num_classes: int, params: MethodParams) -> nn.Module:
    from dlordinal.losses import EMDLoss

    check_classes(num_classes)
    return EMDLoss(num_classes=num_classes)


METHOD = Method(
    name="emd",
    label="EMD",
    family=REGULARISED_LOSS,
    description="Squared earth mover's distance between predicted and true cumulative "
    "distributions: mass far from the true grade costs more.",
    hyperparameters=(LEARNING_RATE,),
    source="no parameter of its own (dlordinal); lr: the paper",
    loss=_loss,
)
