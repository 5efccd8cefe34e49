"""CDW-CE: class-distance weighted cross-entropy (Polat et al. 2022), dlordinal's
``CDWCELoss`` computed stably.

Each wrong grade's probability is penalised by ``-log(1 - p_j) * |j - k|^alpha``. dlordinal
takes ``exp`` of the raw logits, which overflows to inf (then NaN) once a logit passes ~88 in
float32, as at a high learning rate, and builds its distance weights on the CPU, which a CUDA
graph cannot capture. Here ``log(1 - p_j) = logsumexp_{i != j} z_i - logsumexp_i z_i``, exact
and finite for any finite logits; tests/engine/test_methods.py checks it equals dlordinal's
where dlordinal is finite.

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
    import torch
    from torch import nn

    check_classes(num_classes)
    alpha = params.value("alpha", 0.5)

    class StableCDWCELoss(nn.Module):
        def forward(self, outputs: torch.Tensor, grades: torch.Tensor) -> torch.Tensor:
            z = outputs.float()
            own = torch.eye(num_classes, dtype=torch.bool, device=z.device)
            # row j of `others` holds every logit but z_j: log of the mass off grade j
            others = z.unsqueeze(1).masked_fill(own, float("-inf"))
            log_not = torch.logsumexp(others, dim=2) - torch.logsumexp(z, dim=1, keepdim=True)
            grade_axis = torch.arange(num_classes, device=z.device).view(1, -1)
            weights = (grade_axis - grades.view(-1, 1)).abs().float() ** alpha
            # the true grade's weight is 0: keep its (possibly -inf) term out of the sum
            terms = torch.where(weights > 0, log_not * weights, torch.zeros_like(log_not))
            return -terms.sum(dim=1).mean()

    return StableCDWCELoss()


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
