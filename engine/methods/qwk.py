"""QWK loss: one minus quadratic weighted kappa, made differentiable (de la Torre et al.
2018), through dlordinal's ``WKLoss`` on softmax probabilities.

Kappa is a batch statistic: the loss compares the batch's expected confusion matrix with the
one chance would give, so it depends on the batch size (the study's batch size, 128 in the
paper protocol).

Search space: the learning rate only (the paper's grid); quadratic weights as in the paper
that proposed it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.methods.base import LEARNING_RATE, REGULARISED_LOSS, Method, MethodParams
from engine.methods.targets import check_classes

if TYPE_CHECKING:
    from torch import nn


def _loss(num_classes: int, params: MethodParams) -> nn.Module:
    from dlordinal.losses import WKLoss

    check_classes(num_classes)
    return WKLoss(num_classes=num_classes, penalization_type="quadratic", use_logits=True)


METHOD = Method(
    name="qwk",
    label="QWK loss",
    family=REGULARISED_LOSS,
    description="Trains on quadratic weighted kappa itself (made differentiable): big grade "
    "errors cost by the square of their distance.",
    hyperparameters=(LEARNING_RATE,),
    source="de la Torre et al. 2018 (quadratic weights); lr: the paper",
    loss=_loss,
)
