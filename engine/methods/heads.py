"""Output layers ("heads") of the grade model and how their outputs become probabilities.

Every method names a head. The backbone's 512 features go through the head; what the head
returns (its *outputs*) is what the method's loss takes, and `Head.probabilities` turns it
into (N, J) class probabilities that sum to one: what runs store, what the metrics, the
calibration and Grad-CAM read.

- ``softmax``: a linear layer of J logits; softmax gives the probabilities (the paper's).
- ``corn``: a linear layer of J - 1 conditional logits (Shi et al. 2021's CORN);
  P(y > k) is the running product of their sigmoids.
- ``clm``: a linear projection to one value and dlordinal's cumulative link model (logit
  link), which returns probabilities.
- ``binomial_layer``: dlordinal's binomial output layer, which returns probabilities.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from torch import nn

# Probabilities from a layer that returns them are floored here before the log of a loss or
# Grad-CAM's target: dlordinal's CLM can return an exact 0 for a grade far from the projection.
PROBABILITY_FLOOR = 1e-7


@dataclass(frozen=True)
class Head:
    """One output layer.

    Attributes:
        name: Its key in `HEADS`.
        description: One sentence for `softgrade methods`.
        build: ``(in_features, num_classes) -> module`` whose output the loss takes.
        probabilities: ``outputs -> (N, J)`` probabilities, rows summing to one.
        logits: The outputs are J logits whose softmax is the probability (Grad-CAM then
            explains a grade's logit, as the paper does); False: Grad-CAM explains the log of
            the grade's probability.
    """

    name: str
    description: str
    build: Callable[[int, int], nn.Module]
    probabilities: Callable[[torch.Tensor], torch.Tensor]
    logits: bool = False


def _linear(in_features: int, num_classes: int) -> nn.Module:
    from torch import nn

    return nn.Linear(in_features, num_classes)


def _softmax(outputs: torch.Tensor) -> torch.Tensor:
    import torch

    return torch.softmax(outputs.float(), dim=1)


def _corn_layer(in_features: int, num_classes: int) -> nn.Module:
    from torch import nn

    return nn.Linear(in_features, num_classes - 1)


def corn_probabilities(outputs: torch.Tensor) -> torch.Tensor:
    """Class probabilities from CORN's J - 1 conditional logits.

    ``S_k = P(y > k) = prod_{i <= k} sigmoid(z_i)`` decreases with k, so the differences
    ``P(y = k) = S_{k-1} - S_k`` (``S_{-1} = 1``, ``S_{J-1} = 0``) are non-negative and sum to
    one.
    """
    import torch

    above = torch.cumprod(torch.sigmoid(outputs.float()), dim=1)
    ones = torch.ones_like(above[:, :1])
    return torch.cat([ones, above], dim=1) - torch.cat([above, torch.zeros_like(ones)], dim=1)


def _clm_layer(in_features: int, num_classes: int) -> nn.Module:
    from dlordinal.output_layers import CLM
    from torch import nn

    return nn.Sequential(nn.Linear(in_features, 1), CLM(num_classes, link_function="logit"))


def _binomial_layer(in_features: int, num_classes: int) -> nn.Module:
    from dlordinal.output_layers import BinomialLayer

    return BinomialLayer(in_features=in_features, num_classes=num_classes)


def renormalised(outputs: torch.Tensor) -> torch.Tensor:
    """Probabilities a layer returned, floored and scaled to sum to one exactly."""
    probs = outputs.float().clamp_min(PROBABILITY_FLOOR)
    return probs / probs.sum(dim=1, keepdim=True)


HEADS: dict[str, Head] = {
    head.name: head
    for head in (
        Head("softmax", "J logits; softmax gives P(grade)", _linear, _softmax, logits=True),
        Head(
            "corn", "J - 1 conditional logits P(y > k | y > k - 1)", _corn_layer, corn_probabilities
        ),
        Head("clm", "one projection and ordered thresholds (logit link)", _clm_layer, renormalised),
        Head(
            "binomial_layer",
            "a binomial distribution over the grades",
            _binomial_layer,
            renormalised,
        ),
    )
}


def get_head(name: str) -> Head:
    """The head called ``name``; ValueError listing the heads otherwise."""
    if name not in HEADS:
        raise ValueError(f"unknown head {name!r}; allowed: {', '.join(HEADS)}")
    return HEADS[name]


def probability_nll() -> nn.Module:
    """Negative log-likelihood of the true grade, for heads that return probabilities
    (dlordinal's CLM and binomial layer are trained this way)."""
    import torch
    from torch import nn

    class ProbabilityNLL(nn.Module):
        def forward(self, outputs: torch.Tensor, grades: torch.Tensor) -> torch.Tensor:
            return nn.functional.nll_loss(torch.log(renormalised(outputs)), grades)

    return ProbabilityNLL()
