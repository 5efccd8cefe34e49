"""What a training method is: the `Method` record, its hyper-parameters and its families.

A method is one small module in this package (or in a package named by
``SOFTGRADE_METHOD_PACKAGES``) that defines ``METHOD = Method(...)``. Everything else learns
about methods from `engine.methods.registry`, so adding one is one new file plus its test
(docs/add-a-method.md).

Nothing here imports torch: pages, the store and the command line read names, labels,
families and search spaces without paying for it. A method's ``loss``, ``target_matrix`` and
head build torch objects when called.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from torch import nn

#: The three kinds of ordinal method, in the order the Launch page groups them.
TARGET_DISTRIBUTION = "target distribution"
REGULARISED_LOSS = "regularised loss"
OUTPUT_LAYER = "ordinal output layer"
FAMILIES: tuple[str, ...] = (TARGET_DISTRIBUTION, REGULARISED_LOSS, OUTPUT_LAYER)
FAMILY_DESCRIPTIONS: Mapping[str, str] = {
    TARGET_DISTRIBUTION: "Cross-entropy against a soft target: a distribution over the grades "
    "centred on the true one (one-hot for nominal).",
    REGULARISED_LOSS: "A loss that charges a wrong grade by its distance from the true one.",
    OUTPUT_LAYER: "An output layer whose probabilities are ordinal by construction.",
}


@dataclass(frozen=True)
class HyperParameter:
    """One searched hyper-parameter of a method.

    Attributes:
        name: Its key in a run's configuration (``"eta"``).
        label: What a person reads (``"η"``).
        values: The search grid, in order.
        meaning: One sentence a page shows beside its values.
    """

    name: str
    label: str
    values: tuple[float, ...]
    meaning: str

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError(f"hyper-parameter {self.name!r} needs at least one value")


#: The paper's Table 3 learning rates (Adam), searched by every method.
LEARNING_RATE = HyperParameter(
    "lr", "Learning rate", (1e-4, 1e-3, 1e-2), "Adam's step size; the paper's Table 3."
)
#: The paper's mixing factor of a soft target with one-hot (h_SLO, Table 3).
ETA = HyperParameter(
    "eta",
    "η",
    (0.8, 1.0),
    "the share of the soft target mixed with one-hot (1 = the soft target alone)",
)


class MethodParams(Mapping[str, float]):
    """One configuration of a method: the learning rate and its other hyper-parameters.

    A read-only mapping (``params["eta"]``, ``params.get("p")``) whose ``lr`` is always set;
    ``as_dict`` is what runs store.
    """

    __slots__ = ("_values",)

    def __init__(self, lr: float, **values: float | None) -> None:
        self._values: dict[str, float] = {"lr": float(lr)}
        self._values.update({k: float(v) for k, v in values.items() if v is not None})

    @property
    def lr(self) -> float:
        """Adam's learning rate."""
        return self._values["lr"]

    def __getitem__(self, key: str) -> float:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v:g}" for k, v in self._values.items())
        return f"MethodParams({inner})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MethodParams):
            return self._values == other._values
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._values.items())))

    def as_dict(self) -> dict[str, float]:
        """The parameters, for JSON and display."""
        return dict(self._values)

    def value(self, name: str, default: float) -> float:
        """The parameter ``name``, or ``default`` where this configuration does not set it."""
        return self._values.get(name, default)


#: (num_classes, params) -> a training criterion ``criterion(outputs, grades)``.
LossBuilder = Callable[[int, MethodParams], "nn.Module"]
#: (num_classes, params) -> the (J, J) soft-target matrix, row k for true grade k.
MatrixBuilder = Callable[[int, MethodParams], "np.ndarray"]


@dataclass(frozen=True)
class Method:
    """One ordinal training method.

    Attributes:
        name: Its key everywhere (store, YAML, URLs): lower case, letters, digits and ``_``.
        label: Its display name (``"CDW-CE"``).
        family: One of `FAMILIES`.
        description: One or two sentences for a person choosing methods.
        hyperparameters: The searched parameters, learning rate first.
        source: Where its search space comes from (a paper, dlordinal's defaults).
        loss: Builds the training criterion over the head's outputs and integer grades.
        target_matrix: For target-distribution methods, the (J, J) targets the loss is a
            cross-entropy against. With it the CUDA fast path replays one captured graph for
            every configuration; without it the fast path trains eagerly (docs/add-a-method.md).
        head: The output layer, a name in `engine.methods.heads.HEADS` ("softmax": a linear
            layer whose softmax gives the probabilities).
        rank: Display order: the paper's five are 0-4, others follow by family and name.
        search_key: Seeds the randomised search with the study seed. The paper's five keep
            their index in the paper's order, so their draws never change; others hash
            their name, so adding a method changes nobody else's draws.
        in_paper: One of the paper's five methods (its preset and reference study).
    """

    name: str
    label: str
    family: str
    description: str
    hyperparameters: tuple[HyperParameter, ...]
    source: str
    loss: LossBuilder
    target_matrix: MatrixBuilder | None = None
    head: str = "softmax"
    rank: int = 100
    search_key: int | None = None
    in_paper: bool = False

    def __post_init__(self) -> None:
        if not self.name or not all(c.islower() or c.isdigit() or c == "_" for c in self.name):
            raise ValueError(f"method name {self.name!r}: use lower-case letters, digits and _")
        if self.family not in FAMILIES:
            raise ValueError(f"method {self.name!r}: family {self.family!r}; allowed: {FAMILIES}")
        names = [h.name for h in self.hyperparameters]
        if not names or names[0] != "lr" or len(set(names)) != len(names):
            raise ValueError(f"method {self.name!r}: hyper-parameters must start with lr, once")
        if self.target_matrix is not None and self.head != "softmax":
            # The fast path's graphs train softmax logits against the matrix.
            raise ValueError(f"method {self.name!r}: a target matrix needs the softmax head")

    @property
    def seed_key(self) -> int:
        """The number that seeds this method's search draw beside the study seed."""
        if self.search_key is not None:
            return self.search_key
        return zlib.crc32(self.name.encode())

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """Its hyper-parameters' names, learning rate first."""
        return tuple(h.name for h in self.hyperparameters)

    def search_grid(self) -> list[MethodParams]:
        """Every configuration of its search space, in a fixed order."""
        axes = [h.values for h in self.hyperparameters]
        names = self.parameter_names
        return [
            MethodParams(**dict(zip(names, values, strict=True)))
            for values in itertools.product(*axes)
        ]

    def params_from(self, values: Mapping[str, Any]) -> MethodParams:
        """This method's parameters out of a mapping that may hold others (a run's config)."""
        kept = {k: values[k] for k in self.parameter_names if values.get(k) is not None}
        if "lr" not in kept:
            raise ValueError(f"method {self.name!r}: a configuration needs lr")
        return MethodParams(**kept)
