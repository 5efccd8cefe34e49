"""CLM: the cumulative link model (Vargas et al. 2020) as an output layer, dlordinal's ``CLM``
with the logit link over a one-value projection, trained by the negative log-likelihood of the
true grade.

Search space: the learning rate only (the paper's grid); the logit link, dlordinal's example.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.methods.base import LEARNING_RATE, OUTPUT_LAYER, Method, MethodParams
from engine.methods.heads import probability_nll
from engine.methods.targets import check_classes

if TYPE_CHECKING:
    from torch import nn


def _loss(num_classes: int, params: MethodParams) -> nn.Module:
    check_classes(num_classes)
    return probability_nll()


METHOD = Method(
    name="clm",
    label="CLM",
    family=OUTPUT_LAYER,
    description="Cumulative link model: the film is projected onto one severity axis cut by "
    "J - 1 learned, ordered thresholds.",
    hyperparameters=(LEARNING_RATE,),
    source="Vargas et al. 2020 (logit link); lr: the paper",
    loss=_loss,
    head="clm",
)
