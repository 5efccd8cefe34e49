"""Binomial soft labels (Liu et al. 2020) through dlordinal's ``BinomialLoss``.

Search space: the paper's Table 3 (learning rate, eta).
"""

from __future__ import annotations

from engine.methods.base import ETA, LEARNING_RATE, TARGET_DISTRIBUTION, Method
from engine.methods.targets import dlordinal_soft_target

_loss, _matrix = dlordinal_soft_target("BinomialLoss")


METHOD = Method(
    name="binomial",
    label="Binomial",
    family=TARGET_DISTRIBUTION,
    description="Targets follow a binomial distribution centred on the grade: most mass on the"
    " grade, a little on its neighbours.",
    hyperparameters=(LEARNING_RATE, ETA),
    source="the paper's Table 3",
    loss=_loss,
    target_matrix=_matrix,
    rank=1,
    search_key=1,
    in_paper=True,
)
