"""Soft-label methods: the loss for each method and its (J, J) target matrix.

Every soft method is a `dlordinal` loss class with `nn.CrossEntropyLoss` as base and the
mixing factor ``eta`` of the paper's h_SLO equation:
``target = (1 - eta) * one_hot + eta * P(y = j | k)``, exactly what
``dlordinal.losses.CustomTargetsLoss`` computes. We wrap, never re-derive, the matrices.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from engine.vocab import METHODS

if TYPE_CHECKING:
    from torch import nn

# The paper's Table 3: the search space per method.
LEARNING_RATES: tuple[float, ...] = (1e-4, 1e-3, 1e-2)
ETAS: tuple[float, ...] = (0.8, 1.0)
TRIANGULAR_ALPHA2: tuple[float, ...] = (0.01, 0.05, 0.10)
EXPONENTIAL_P: tuple[float, ...] = (1.0, 1.5, 2.0)

_GRID_AXES: dict[str, dict[str, tuple[float, ...]]] = {
    "nominal": {"lr": LEARNING_RATES},
    "binomial": {"lr": LEARNING_RATES, "eta": ETAS},
    "beta": {"lr": LEARNING_RATES, "eta": ETAS},
    "triangular": {"lr": LEARNING_RATES, "alpha2": TRIANGULAR_ALPHA2, "eta": ETAS},
    "exponential": {"lr": LEARNING_RATES, "eta": ETAS, "p": EXPONENTIAL_P},
}


@dataclass(frozen=True)
class MethodParams:
    """Hyper-parameters of one configuration; fields a method does not use stay None."""

    lr: float
    eta: float | None = None
    alpha2: float | None = None
    p: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """The parameters that are set, for JSON and display."""
        return {k: v for k, v in self.__dict__.items() if v is not None}


def check_method(method: str) -> None:
    """Raise ValueError naming the allowed methods if ``method`` is unknown."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; allowed: {', '.join(METHODS)}")


def search_grid(method: str) -> list[MethodParams]:
    """Every configuration of the paper's Table 3 for ``method``, in a fixed order."""
    check_method(method)
    axes = _GRID_AXES[method]
    names = list(axes)
    return [
        MethodParams(**dict(zip(names, values, strict=True)))
        for values in itertools.product(*axes.values())
    ]


def grid_size(method: str) -> int:
    """Number of configurations in ``method``'s grid (3 for nominal up to 18)."""
    return len(search_grid(method))


def sample_configs(method: str, budget: int, seed: int) -> list[MethodParams]:
    """Draw ``min(budget, grid size)`` configurations without replacement, reproducibly.

    The paper samples "a maximum of 15 configurations"; a grid smaller than the budget
    (nominal has 3) is searched exhaustively.
    """
    if budget < 1:
        raise ValueError(f"{budget=} must be >= 1")
    grid = search_grid(method)
    rng = np.random.default_rng([seed, METHODS.index(method)])
    picks = rng.permutation(len(grid))[: min(budget, len(grid))]
    return [grid[i] for i in sorted(picks)]


def soft_label_matrix(
    method: str, num_classes: int, params: MethodParams | None = None
) -> np.ndarray:
    """The (J, J) target matrix: row k is the target distribution for true grade k.

    For soft methods this includes the ``eta`` mix with one-hot (eta defaults to 1).
    """
    import torch

    loss = make_loss(method, num_classes, params or MethodParams(lr=1e-3))
    eye = torch.eye(num_classes)
    if method == "nominal":
        return eye.numpy()
    eta = cast(float, loss.eta)  # every dlordinal soft loss keeps its constructor's eta
    return ((1 - eta) * eye + eta * loss.get_buffer("cls_probs")).numpy()


def make_loss(method: str, num_classes: int, params: MethodParams) -> nn.Module:
    """The training loss of ``method``: dlordinal's class over ``nn.CrossEntropyLoss``."""
    # torch and dlordinal load here, not at import: pages that only need the method list
    # and grid sizes then open without paying ~2 s of imports.
    from dlordinal.losses import BetaLoss, BinomialLoss, ExponentialLoss, TriangularLoss
    from torch import nn

    check_method(method)
    if num_classes < 2:
        raise ValueError(f"{num_classes=} must be >= 2")
    base = nn.CrossEntropyLoss()
    eta = 1.0 if params.eta is None else params.eta
    if method == "nominal":
        return base
    if method == "binomial":
        return BinomialLoss(base_loss=base, num_classes=num_classes, eta=eta)
    if method == "beta":
        return BetaLoss(base_loss=base, num_classes=num_classes, eta=eta)
    if method == "triangular":
        alpha2 = 0.05 if params.alpha2 is None else params.alpha2
        return TriangularLoss(base_loss=base, num_classes=num_classes, alpha2=alpha2, eta=eta)
    p = 1.0 if params.p is None else params.p
    return ExponentialLoss(base_loss=base, num_classes=num_classes, p=p, eta=eta)
