"""SORD: soft ordinal labels (Díaz & Marathe 2019).

The target of grade k is ``softmax(-alpha * (j - k)^2)`` over the grades j: the squared
distance, the metric penalty Díaz & Marathe use, and the loss is the cross-entropy against
it, so SORD is a target distribution. (dlordinal's ``SORDLoss`` uses ``|j - k|``, a flatter
target; it is not used.) tests/engine/test_methods.py checks the rows against the formula.

Search space: alpha, the sharpness of the target, over (0.5, 1, 2); learning rate as the
paper. No eta: SORD's target is used alone.
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
from engine.methods.targets import check_classes, matrix_target

if TYPE_CHECKING:
    import numpy as np

ALPHA = HyperParameter(
    "alpha",
    "α",
    (0.5, 1.0, 2.0),
    "how sharply the target falls off with distance from the true grade (larger: sharper)",
)


def sord_rows(num_classes: int, params: MethodParams) -> np.ndarray:
    """The (J, J) targets: row k is softmax(-alpha (j - k)^2) over the grades j."""
    import torch

    check_classes(num_classes)
    grades = torch.arange(num_classes, dtype=torch.float64)
    distance = (grades.view(1, -1) - grades.view(-1, 1)) ** 2
    return torch.softmax(-params.value("alpha", 1.0) * distance, dim=1).float().numpy()


_loss, _matrix = matrix_target(sord_rows)


METHOD = Method(
    name="sord",
    label="SORD",
    family=TARGET_DISTRIBUTION,
    description="Soft ordinal targets softmax(-alpha (j - k)^2): the true grade most likely, "
    "neighbours next, with alpha setting the spread.",
    hyperparameters=(LEARNING_RATE, ALPHA),
    source="Díaz & Marathe 2019 (their squared distance; alpha around 1); lr: the paper",
    loss=_loss,
    target_matrix=_matrix,
)
