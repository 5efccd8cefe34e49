"""CORN: conditional ordinal regression (Shi et al. 2021): a head of J - 1 conditional logits
(`engine.methods.heads`, ``corn``), dlordinal's ``CORNLoss`` computed with masks, and Shi et
al.'s rank rule for the predicted grade (the head's ``median`` rule: the number of k with
P(y > k) > 0.5), not the most probable grade.

dlordinal's ``CORNLoss`` picks each binary task's films by boolean indexing, whose sizes the
GPU must report to the host, so a CUDA graph cannot capture it; `CornLoss` weights every film
by a 0/1 mask instead and divides by the same count (tests/engine/test_methods.py checks the
two agree).

Search space: the learning rate only (the paper's grid); CORN has no parameter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.methods.base import LEARNING_RATE, OUTPUT_LAYER, Method, MethodParams
from engine.methods.targets import check_classes

if TYPE_CHECKING:
    from torch import nn


def _loss(num_classes: int, params: MethodParams) -> nn.Module:
    import torch
    from torch import nn

    check_classes(num_classes)

    class CornLoss(nn.Module):
        """Sum over tasks k of the binary cross-entropy of 'y > k' on the films with
        y >= k, over the number of such (film, task) pairs, as dlordinal's ``CORNLoss``."""

        def forward(self, outputs: torch.Tensor, grades: torch.Tensor) -> torch.Tensor:
            tasks = torch.arange(num_classes - 1, device=outputs.device).view(1, -1)
            y = grades.view(-1, 1)
            asked = (y >= tasks).float()  # the films task k is trained on
            above = (y > tasks).float()
            z = outputs.float()
            log_yes, log_no = nn.functional.logsigmoid(z), nn.functional.logsigmoid(-z)
            per_pair = -(above * log_yes + (1 - above) * log_no)
            return (per_pair * asked).sum() / asked.sum().clamp_min(1.0)

    return CornLoss()


METHOD = Method(
    name="corn",
    label="CORN",
    family=OUTPUT_LAYER,
    description="J - 1 binary questions 'is the grade above k, given it is above k - 1?'; "
    "their product gives ordered probabilities.",
    hyperparameters=(LEARNING_RATE,),
    source="no parameter of its own (Shi et al. 2021; their rank rule predicts); lr: the paper",
    loss=_loss,
    head="corn",
)
