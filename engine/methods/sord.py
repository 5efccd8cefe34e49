"""SORD: soft ordinal labels (Díaz & Marathe 2019) through dlordinal's ``SORDLoss``.

The target of grade k is ``softmax(-alpha * |j - k|)`` over the grades j, and the loss is the
cross-entropy against it, so SORD is a target distribution (dlordinal files it among its
losses). The matrix below is the one ``SORDLoss`` builds per batch; tests/engine/test_train.py
checks that both give the same loss.

Search space: alpha, the sharpness of the target, over (0.5, 1, 2) around the paper's
squared-distance choice; learning rate as the paper. No eta: SORD's target is used alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.methods.base import (
    LEARNING_RATE,
    TARGET_DISTRIBUTION,
    HyperParameter,
    Method,
    MethodParams,
)
from engine.methods.targets import check_classes

if TYPE_CHECKING:
    import numpy as np
    from torch import nn

ALPHA = HyperParameter(
    "alpha",
    "α",
    (0.5, 1.0, 2.0),
    "how sharply the target falls off with distance from the true grade (larger: sharper)",
)


def _loss(num_classes: int, params: MethodParams) -> nn.Module:
    import torch
    from dlordinal.losses import SORDLoss

    check_classes(num_classes)
    # train_targets feed only the optional proximity weighting, which is off here.
    return SORDLoss(
        alpha=params.value("alpha", 1.0),
        num_classes=num_classes,
        train_targets=torch.zeros(0, dtype=torch.long),
    )


def _matrix(num_classes: int, params: MethodParams) -> np.ndarray:
    import torch

    grades = torch.arange(num_classes, dtype=torch.float64)
    distance = (grades.view(1, -1) - grades.view(-1, 1)).abs()
    return torch.softmax(-params.value("alpha", 1.0) * distance, dim=1).float().numpy()


METHOD = Method(
    name="sord",
    label="SORD",
    family=TARGET_DISTRIBUTION,
    description="Soft ordinal targets softmax(-alpha |j - k|): the true grade most likely, "
    "neighbours next, with alpha setting the spread.",
    hyperparameters=(LEARNING_RATE, ALPHA),
    source="Díaz & Marathe 2019 (alpha around their squared-distance choice); lr: the paper",
    loss=_loss,
    target_matrix=_matrix,
)
