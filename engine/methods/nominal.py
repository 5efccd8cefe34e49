"""Nominal: one-hot targets with plain cross-entropy, the paper's baseline.

Search space: the paper's Table 3 (learning rate only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.methods.base import LEARNING_RATE, TARGET_DISTRIBUTION, Method, MethodParams
from engine.methods.targets import check_classes

if TYPE_CHECKING:
    import numpy as np
    from torch import nn


def _loss(num_classes: int, params: MethodParams) -> nn.Module:
    from torch import nn

    check_classes(num_classes)
    return nn.CrossEntropyLoss()


def _matrix(num_classes: int, params: MethodParams) -> np.ndarray:
    import torch

    return torch.eye(num_classes).numpy()


METHOD = Method(
    name="nominal",
    label="Nominal",
    family=TARGET_DISTRIBUTION,
    description="One-hot targets with plain cross-entropy: every wrong grade costs the same.",
    hyperparameters=(LEARNING_RATE,),
    source="the paper's Table 3",
    loss=_loss,
    target_matrix=_matrix,
    rank=0,
    search_key=0,
    in_paper=True,
)
