"""Triangular soft labels (Vargas et al. 2023) through dlordinal's ``TriangularLoss``.

Search space: the paper's Table 3 (learning rate, alpha2, eta; in that order, which fixes
the order of the grid and so the paper's draws).
"""

from __future__ import annotations

from engine.methods.base import (
    ETA,
    LEARNING_RATE,
    TARGET_DISTRIBUTION,
    HyperParameter,
    Method,
)
from engine.methods.targets import dlordinal_soft_target

ALPHA2 = HyperParameter(
    "alpha2",
    "α₂",
    (0.01, 0.05, 0.10),
    "the probability given to each neighbouring grade of the triangular target",
)


_loss, _matrix = dlordinal_soft_target("TriangularLoss", alpha2=("alpha2", 0.05))


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
