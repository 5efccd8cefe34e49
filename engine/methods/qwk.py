"""QWK loss: dlordinal's ``WKLoss`` on softmax probabilities with quadratic weights, the
ratio of observed to chance-expected weighted disagreement, 1 - kappa (the form of Vargas et
al.'s dlordinal; de la Torre et al. 2018, who proposed the loss, minimise its logarithm,
log(1 - kappa), which has the same minimiser).

``WKLoss`` builds its one-hot targets on the CPU each call, which a CUDA graph cannot
capture, so the targets are made on the device here and handed to it one-hot.

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
    import torch
    from dlordinal.losses import WKLoss
    from torch import nn

    check_classes(num_classes)

    class DeviceOneHotWKLoss(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.kappa = WKLoss(
                num_classes=num_classes, penalization_type="quadratic", use_logits=True
            )

        def forward(self, outputs: torch.Tensor, grades: torch.Tensor) -> torch.Tensor:
            one_hot = nn.functional.one_hot(grades, num_classes).float()
            return self.kappa(outputs.float(), one_hot)

    return DeviceOneHotWKLoss()


METHOD = Method(
    name="qwk",
    label="QWK loss",
    family=REGULARISED_LOSS,
    description="Trains on quadratic weighted kappa itself (made differentiable): big grade "
    "errors cost by the square of their distance.",
    hyperparameters=(LEARNING_RATE,),
    source="1 - QWK as dlordinal's WKLoss (Vargas et al.); de la Torre et al. 2018 minimise its "
    "log; quadratic weights; lr: the paper",
    loss=_loss,
)
