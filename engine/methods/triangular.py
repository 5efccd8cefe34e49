"""Triangular soft labels (Vargas et al. 2023) through dlordinal's ``TriangularLoss``.

Search space: the paper's Table 3 (learning rate, alpha2, eta; in that order, which fixes
the order of the grid and so the paper's draws).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.methods.base import (
    ETA,
    LEARNING_RATE,
    TARGET_DISTRIBUTION,
    HyperParameter,
    Method,
    MethodParams,
)
from engine.methods.targets import dlordinal_loss, mixed_matrix

if TYPE_CHECKING:
    import numpy as np
    from torch import nn

ALPHA2 = HyperParameter(
    "alpha2",
    "α₂",
    (0.01, 0.05, 0.10),
    "the probability given to each neighbouring grade of the triangular target",
)


def _loss(num_classes: int, params: MethodParams) -> nn.Module:
    return dlordinal_loss(
        "TriangularLoss", num_classes, params, alpha2=params.value("alpha2", 0.05)
    )


def _matrix(num_classes: int, params: MethodParams) -> np.ndarray:
    return mixed_matrix(_loss(num_classes, params))


METHOD = Method(
    name="triangular",
    label="Triangular",
    family=TARGET_DISTRIBUTION,
    description="Triangular targets: the neighbours of the grade get a fixed small probability "
    "(alpha2), distant grades none.",
    hyperparameters=(LEARNING_RATE, ALPHA2, ETA),
    source="the paper's Table 3",
    loss=_loss,
    target_matrix=_matrix,
    rank=3,
    search_key=3,
    in_paper=True,
)
