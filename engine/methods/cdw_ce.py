"""CDW-CE: class-distance weighted cross-entropy (Polat et al. 2022) through dlordinal's
``CDWCELoss``.

Each wrong grade's probability is penalised by ``-log(1 - p_j) * |j - k|^alpha``.

Search space: alpha over (0.5, 1, 2, 5): dlordinal's default 0.5 and the powers Polat et al.
tried (their best were 5 and above for many classes, lower for few); learning rate as the paper.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.methods.base import (
    LEARNING_RATE,
    REGULARISED_LOSS,
    HyperParameter,
    Method,
    MethodParams,
)
from engine.methods.targets import check_classes

if TYPE_CHECKING:
    from torch import nn

ALPHA = HyperParameter(
    "alpha",
    "α",
    (0.5, 1.0, 2.0, 5.0),
    "the power of the grade distance that weights each wrong grade's penalty",
)


def _loss(num_classes: int, params: MethodParams) -> nn.Module:
    from dlordinal.losses import CDWCELoss

    check_classes(num_classes)
    return CDWCELoss(num_classes=num_classes, alpha=params.value("alpha", 0.5))


METHOD = Method(
    name="cdw_ce",
    label="CDW-CE",
    family=REGULARISED_LOSS,
    description="Class-distance weighted cross-entropy: probability on a wrong grade costs "
    "more the farther that grade is from the true one.",
    hyperparameters=(LEARNING_RATE, ALPHA),
    source="Polat et al. 2022 and dlordinal's default (alpha); lr: the paper",
    loss=_loss,
)
