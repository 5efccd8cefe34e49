"""Ordinal training methods: one module per method, one registry (docs/add-a-method.md).

Everything that needs to know which methods exist, what they are called, how they are
searched, trained or drawn asks here. Importing this package loads no torch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from engine.methods.base import (
    FAMILIES,
    FAMILY_DESCRIPTIONS,
    OUTPUT_LAYER,
    REGULARISED_LOSS,
    TARGET_DISTRIBUTION,
    HyperParameter,
    Method,
    MethodParams,
)
from engine.methods.heads import MODE, get_head, predict_grades
from engine.methods.registry import (
    BUILT_IN_ORDER,
    PLUGIN_VARIABLE,
    UnknownMethodError,
    get_method,
    hyperparameters,
    is_registered,
    method_names,
    methods_by_family,
    paper_methods,
    registry,
)
from engine.vocab import LABEL_SEPARATOR

if TYPE_CHECKING:
    from torch import nn

__all__ = [
    "BUILT_IN_ORDER",
    "FAMILIES",
    "FAMILY_DESCRIPTIONS",
    "OUTPUT_LAYER",
    "PLUGIN_VARIABLE",
    "REGULARISED_LOSS",
    "TARGET_DISTRIBUTION",
    "HyperParameter",
    "Method",
    "MethodParams",
    "UnknownMethodError",
    "check_method",
    "get_method",
    "grid_size",
    "hyperparameters",
    "is_registered",
    "method_label",
    "method_names",
    "method_sort_key",
    "methods_by_family",
    "order_methods",
    "paper_methods",
    "predicted_grades",
    "prediction_rule",
    "make_loss",
    "target_matrix",
    "registry",
    "sample_configs",
    "search_grid",
]


def check_method(method: str) -> None:
    """Raise `UnknownMethodError` (a ValueError) naming the allowed methods if unknown."""
    get_method(method)


def search_grid(method: str) -> list[MethodParams]:
    """Every configuration of ``method``'s search space, in a fixed order."""
    return get_method(method).search_grid()


def grid_size(method: str) -> int:
    """Number of configurations in ``method``'s grid (3 for nominal up to 18)."""
    return len(search_grid(method))


def sample_configs(method: str, budget: int, seed: int) -> list[MethodParams]:
    """Draw ``min(budget, grid size)`` configurations without replacement, reproducibly.

    The paper samples "a maximum of 15 configurations"; a grid smaller than the budget
    (nominal has 3) is searched exhaustively. The draw depends on the seed and the method's
    own `Method.seed_key` only, so adding a method changes no other method's draws.
    """
    if budget < 1:
        raise ValueError(f"{budget=} must be >= 1")
    spec = get_method(method)
    grid = spec.search_grid()
    rng = np.random.default_rng([seed, spec.seed_key])
    picks = rng.permutation(len(grid))[: min(budget, len(grid))]
    return [grid[i] for i in sorted(picks)]


def make_loss(method: str, num_classes: int, params: MethodParams) -> nn.Module:
    """The training criterion of ``method`` over its head's outputs and integer grades."""
    return get_method(method).loss(num_classes, params)


def target_matrix(method: str, num_classes: int, params: MethodParams) -> np.ndarray | None:
    """The (J, J) soft targets of a target-distribution method (row k: true grade k, the eta
    mix included); None for a method that trains another way."""
    build = get_method(method).target_matrix
    return None if build is None else build(num_classes, params)


def prediction_rule(method: str) -> str:
    """How ``method`` reads a grade off its probabilities (its head's rule, as its source
    defines it); the mode for a method this checkout does not know (imported results)."""
    base = str(method).partition(LABEL_SEPARATOR)[0]
    known = registry().get(base)
    return MODE if known is None else get_head(known.head).rule


def predicted_grades(probs: np.ndarray, method: str) -> np.ndarray:
    """The grade ``method`` predicts for each row of ``probs`` (N, J): what runs store as
    ``y_pred`` and every metric reads."""
    return np.asarray(predict_grades(np.asarray(probs), prediction_rule(method)))


def method_label(method: str) -> str:
    """A method's display name; a name this checkout does not know reads as given.

    A label of a method run in several studies (``"beta · study B"``) keeps its study.
    """
    base, sep, rest = str(method).partition(LABEL_SEPARATOR)
    known = registry().get(base)
    return (known.label if known else base) + sep + rest


def method_sort_key(method: str) -> tuple[int, str]:
    """Display order: registered methods in registry order (the paper's five first), then
    any other name (imported results) by name. Labels (``"beta · study"``) and display names
    (``"Beta"``) sort with their method."""
    base = str(method).partition(LABEL_SEPARATOR)[0]
    methods = list(registry().values())
    for rank, known in enumerate(methods):
        if base == known.name or base.lower() == known.label.lower():
            return rank, str(method)
    return len(methods), str(method)


def order_methods(methods: Iterable[str]) -> list[str]:
    """Distinct methods (or labels) in display order."""
    if hasattr(methods, "unique"):
        # A pandas Series: one pass in pandas, not a Python loop over every row (pandas is
        # not imported here, so the package stays light).
        methods = methods.unique()
    return sorted(dict.fromkeys(str(m) for m in methods), key=method_sort_key)
