"""Output layers ("heads") of the grade model and how their outputs become probabilities.

Every method names a head. The backbone's 512 features go through the head; what the head
returns (its *outputs*) is what the method's loss takes, and `Head.probabilities` turns it
into (N, J) class probabilities that sum to one: what runs store, what the metrics, the
calibration and Grad-CAM read.

- ``softmax``: a linear layer of J logits; softmax gives the probabilities (the paper's).
- ``corn``: a linear layer of J - 1 conditional logits (Shi et al. 2021's CORN);
  P(y > k) is the running product of their sigmoids.
- ``clm``: a linear projection to one value and the cumulative link model (logit link) of
  dlordinal's ``CLM``, which returns probabilities.
- ``binomial_layer``: dlordinal's binomial output layer, which returns probabilities.

The last two are written out here as plain tensor algebra, with dlordinal's parameters and
outputs (tests check both), because dlordinal's versions need the host mid-step and every
method's training step is captured as a CUDA graph on a GPU (`engine.train_graphs`).

Each head also declares its *prediction rule*, how a grade is read off its probabilities:
the mode (argmax, every head but CORN) or the median (CORN: Shi et al. 2021 predict the
number of k with P(y > k) > 0.5, their rank rule). `predict_grades` applies a rule; the run's
selection, its stored ``y_pred`` and so every metric use it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, TypeVar

import numpy as np

if TYPE_CHECKING:
    import torch
    from torch import nn

#: The grade a distribution predicts: its most probable grade (the first on a tie).
MODE = "mode"
#: Its median: the number of grades k < J - 1 with P(y > k) > 0.5 (CORN's rank rule).
MEDIAN = "median"
PREDICTION_RULES: Mapping[str, str] = MappingProxyType(
    {
        MODE: "the most probable grade (argmax)",
        MEDIAN: "the median grade: how many k have P(y > k) > 0.5 (rank rule)",
    }
)

_Probs = TypeVar("_Probs", "np.ndarray", "torch.Tensor")

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
        rule: How a grade is predicted from the probabilities, a key of `PREDICTION_RULES`:
            what the head's source defines.
    """

    name: str
    description: str
    build: Callable[[int, int], nn.Module]
    probabilities: Callable[[torch.Tensor], torch.Tensor]
    logits: bool = False
    rule: str = MODE

    def __post_init__(self) -> None:
        if self.rule not in PREDICTION_RULES:
            raise ValueError(
                f"head {self.name!r}: rule {self.rule!r}; allowed: {', '.join(PREDICTION_RULES)}"
            )


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
    from torch import nn

    return nn.Sequential(nn.Linear(in_features, 1), _cumulative_logit_link(num_classes))


def _cumulative_logit_link(num_classes: int) -> nn.Module:
    """dlordinal's ``CLM`` (logit link) as plain tensor algebra, same parameters and outputs.

    dlordinal's layer computes its sigmoid through boolean indexing (``out[t > 0] = ...``),
    whose result size the GPU must report to the host: a CUDA graph cannot capture it, and
    every method's step is captured (`engine.train_graphs`). tests/engine/test_methods.py
    checks both give the same probabilities from the same state dict.
    """
    import torch
    from torch import nn

    class CumulativeLogitLink(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.num_classes = num_classes
            # dlordinal's parametrisation: the first threshold, then square-rooted gaps.
            self.thresholds_b_ = nn.Parameter(torch.zeros(1))
            self.thresholds_a_ = nn.Parameter(torch.ones(num_classes - 2))

        def forward(self, projected: torch.Tensor) -> torch.Tensor:
            gaps = torch.cat((self.thresholds_b_, self.thresholds_a_**2))
            thresholds = torch.cumsum(gaps, dim=0)  # (J - 1,), increasing
            below = torch.sigmoid(thresholds.view(1, -1) - projected.reshape(-1, 1))
            ones, zeros = torch.ones_like(below[:, :1]), torch.zeros_like(below[:, :1])
            # P(y = k) = P(y <= k) - P(y <= k - 1)
            return torch.cat((below, ones), dim=1) - torch.cat((zeros, below), dim=1)

    return CumulativeLogitLink()


def _binomial_layer(in_features: int, num_classes: int) -> nn.Module:
    """dlordinal's ``BinomialLayer`` in closed form, same parameters (``p_layer``) and outputs.

    dlordinal's builds a ``torch.distributions.Binomial`` every forward, whose argument
    checks and scalar tensors need the host mid-step: a CUDA graph cannot capture it.
    """
    import math

    import torch
    from torch import nn

    n = num_classes - 1
    log_choose = [
        math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) for k in range(n + 1)
    ]

    class BinomialGrades(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.num_classes = num_classes
            self.p_layer = nn.Linear(in_features, 1)
            # Not in the state dict: dlordinal's layer has no such entries.
            self.register_buffer("log_choose", torch.tensor(log_choose), persistent=False)
            self.register_buffer("grades", torch.arange(n + 1.0), persistent=False)

        def forward(self, features: torch.Tensor) -> torch.Tensor:
            z = self.p_layer(features).float()  # (N, 1); the success probability is sigmoid(z)
            log_p, log_q = nn.functional.logsigmoid(z), nn.functional.logsigmoid(-z)
            grades, log_choose = self.get_buffer("grades"), self.get_buffer("log_choose")
            return torch.exp(log_choose + grades * log_p + (n - grades) * log_q)

    return BinomialGrades()


def renormalised(outputs: torch.Tensor) -> torch.Tensor:
    """Probabilities a layer returned, floored and scaled to sum to one exactly."""
    probs = outputs.float().clamp_min(PROBABILITY_FLOOR)
    return probs / probs.sum(dim=1, keepdim=True)


HEADS: dict[str, Head] = {
    head.name: head
    for head in (
        Head("softmax", "J logits; softmax gives P(grade)", _linear, _softmax, logits=True),
        Head(
            "corn",
            "J - 1 conditional logits P(y > k | y > k - 1)",
            _corn_layer,
            corn_probabilities,
            rule=MEDIAN,
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


def predict_grades(probs: _Probs, rule: str = MODE) -> _Probs:
    """The predicted grade of each row of ``probs`` (N, J), numpy or torch, by ``rule``.

    The median counts the k < J - 1 whose P(y > k) = 1 - sum_{j <= k} p_j exceeds 0.5; for
    CORN's probabilities that is exactly Shi et al.'s count of conditional-product survival
    probabilities above 0.5, since `corn_probabilities` takes differences of them.
    """
    if rule not in PREDICTION_RULES:
        raise ValueError(f"prediction rule {rule!r}; allowed: {', '.join(PREDICTION_RULES)}")
    if isinstance(probs, np.ndarray):
        if rule == MODE:
            return probs.argmax(axis=1)
        above = 1.0 - np.cumsum(probs[:, :-1], axis=1, dtype=np.float64)
        return (above > 0.5).sum(axis=1)
    if rule == MODE:
        return probs.argmax(dim=1)
    above = 1.0 - probs[:, :-1].double().cumsum(dim=1)
    return (above > 0.5).sum(dim=1)


def probability_nll() -> nn.Module:
    """Negative log-likelihood of the true grade, for heads that return probabilities
    (dlordinal's CLM and binomial layer are trained this way)."""
    import torch
    from torch import nn

    class ProbabilityNLL(nn.Module):
        def forward(self, outputs: torch.Tensor, grades: torch.Tensor) -> torch.Tensor:
            return nn.functional.nll_loss(torch.log(renormalised(outputs)), grades)

    return ProbabilityNLL()
