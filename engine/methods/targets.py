"""Shared pieces of the target-distribution methods: dlordinal's soft-target losses over
``nn.CrossEntropyLoss`` and the (J, J) matrix each one trains against.

dlordinal's ``CustomTargetsLoss`` computes ``target = (1 - eta) * one_hot + eta * P(y = j | k)``
(the paper's h_SLO); we wrap its classes, never re-derive their distributions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from engine.methods.base import MethodParams

if TYPE_CHECKING:
    import numpy as np
    from torch import nn


def dlordinal_loss(
    class_name: str, num_classes: int, params: MethodParams, **kwargs: Any
) -> nn.Module:
    """dlordinal's ``class_name`` loss over cross-entropy, mixed by the configuration's eta."""
    import dlordinal.losses
    from torch import nn

    check_classes(num_classes)
    loss_class = getattr(dlordinal.losses, class_name)
    return cast(
        "nn.Module",
        loss_class(
            base_loss=nn.CrossEntropyLoss(),
            num_classes=num_classes,
            eta=params.value("eta", 1.0),
            **kwargs,
        ),
    )


def mixed_matrix(loss: nn.Module) -> np.ndarray:
    """The (J, J) targets a dlordinal soft-target loss trains against, eta mix included."""
    import torch

    probs = loss.get_buffer("cls_probs")
    eta = float(cast(float, loss.eta))
    return ((1 - eta) * torch.eye(len(probs)) + eta * probs).numpy()


def matrix_target(
    rows: Callable[[int, MethodParams], np.ndarray],
) -> tuple[Callable[[int, MethodParams], nn.Module], Callable[[int, MethodParams], np.ndarray]]:
    """The loss and target-matrix builders of a target whose (J, J) rows we define ourselves
    (``rows(J, params)``, row k for true grade k): dlordinal's ``CustomTargetsLoss`` over
    cross-entropy, mixed with one-hot by the configuration's eta (1 where it has none)."""

    def loss(num_classes: int, params: MethodParams) -> nn.Module:
        import torch
        from dlordinal.losses import CustomTargetsLoss
        from torch import nn

        check_classes(num_classes)
        return CustomTargetsLoss(
            base_loss=nn.CrossEntropyLoss(),
            cls_probs=torch.as_tensor(rows(num_classes, params), dtype=torch.float32),
            eta=params.value("eta", 1.0),
        )

    def matrix(num_classes: int, params: MethodParams) -> np.ndarray:
        return mixed_matrix(loss(num_classes, params))

    return loss, matrix


def check_classes(num_classes: int) -> None:
    """Every method needs at least two grades."""
    if num_classes < 2:
        raise ValueError(f"{num_classes=} must be >= 2")


def dlordinal_soft_target(
    class_name: str, **param_defaults: tuple[str, float]
) -> tuple[Callable[[int, MethodParams], nn.Module], Callable[[int, MethodParams], np.ndarray]]:
    """The loss and target-matrix builders of a dlordinal soft-target method.

    ``param_defaults`` maps the loss class's keyword to (our hyper-parameter's name, its
    default), e.g. ``alphas=("alpha", 0.1)`` for ``GeometricLoss``.
    """

    def loss(num_classes: int, params: MethodParams) -> nn.Module:
        kwargs = {kw: params.value(name, default) for kw, (name, default) in param_defaults.items()}
        return dlordinal_loss(class_name, num_classes, params, **kwargs)

    def matrix(num_classes: int, params: MethodParams) -> np.ndarray:
        return mixed_matrix(loss(num_classes, params))

    return loss, matrix
