"""An opt-in pruned search: stop configurations of a search that have already lost.

The paper's protocol trains every sampled configuration of a (task, method, seed) to its
stopping rule (`engine.protocol.EARLY_STOPPING`) and selects the best by validation
(`engine.protocol.SEARCH_SELECTION`). A study may instead ask for a pruner
(``search: {pruner: asha}`` in its file): each configuration then reports, after every epoch,
the value selection would give it if it stopped now, and the pruner stops the configurations
that are already behind at fixed epochs. The pruners are Optuna's (`make_pruner`), the
well-kept implementations of these rules:

* ``asha`` / ``successive_halving``: asynchronous successive halving (Optuna's
  ``SuccessiveHalvingPruner``, which is ASHA: Li et al. 2020). At the rungs ``r``, ``r·η``,
  ``r·η²``, ... epochs a configuration goes on only if it is among the best ``1/η`` of the
  configurations of its search that reached that rung so far. The two names are one rule:
  Optuna's successive halving is asynchronous, which is what lanes training side by side need
  (a synchronous rung would have to wait for every configuration, idling slots).
* ``hyperband``: Optuna's ``HyperbandPruner``, several successive-halving brackets with
  different first rungs, so a slow starter gets a bracket where it is judged later.
* ``median``: Optuna's ``MedianPruner``: at epochs ``r``, ``2r``, ... a configuration stops
  when its value is worse than the median of the finished configurations' values at the same
  epoch (once ``MEDIAN_STARTUP`` configurations have finished).

What is reported (`PRUNING.reported`): the selection metric on the validation films at the
epoch early stopping would keep so far (the best validation loss), i.e. exactly the number
the search selects by if the run ended now. Not the validation loss itself: configurations
of one method differ in their soft targets (η, α, ...), and a cross-entropy against softer
targets has a higher floor (the targets' entropy), so losses of two configurations are not
comparable while their selection metric is.

Decisions depend on which configurations reached a rung first, so a pruned search run twice
in parallel lanes need not prune the same configurations; the full search (``none``, the
default) is untouched and stays deterministic. Nothing here imports Optuna until
`make_pruner` is called, so pages that only need names load fast.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

NO_PRUNER = "none"
#: Each pruner a study may name, with what it does in plain words (the Launch page and docs).
PRUNERS: Mapping[str, str] = {
    NO_PRUNER: "every configuration trains to its stopping rule (the paper's protocol)",
    "asha": "asynchronous successive halving: at fixed epochs keep only the best third so far",
    "successive_halving": "the same rule as asha (Optuna's successive halving is asynchronous)",
    "median": "stop a configuration worse than the median of finished ones at the same epoch",
    "hyperband": "several successive-halving brackets, some judging configurations later",
}
#: The default share kept at each rung is 1 / REDUCTION_FACTOR (Optuna's default, η = 3).
REDUCTION_FACTOR = 3
#: Finished configurations the median rule waits for before it stops any.
MEDIAN_STARTUP = 3
#: The first rung, as a share of the study's most epochs: 100 epochs -> rungs at 10, 30, 90.
FIRST_RUNG_SHARE = 0.1


class PrunerError(ValueError):
    """A study's ``search`` setting is invalid; the message names the allowed values."""


@dataclass(frozen=True)
class PruningRule:
    """What a pruned search watches, as `engine.protocol`'s rules state theirs.

    Attributes:
        reported: what each configuration reports after every epoch, as a reader reads it.
    """

    reported: str


PRUNING = PruningRule(
    reported="the selection metric on the validation films at the epoch early stopping "
    "would keep so far"
)


@dataclass(frozen=True)
class SearchSpec:
    """How a study searches each (task, method, seed): fully, or pruned.

    Attributes:
        pruner: a key of `PRUNERS`; ``none`` trains every configuration fully.
        min_epochs: the first rung (epochs every configuration trains before any is
            stopped); None: `FIRST_RUNG_SHARE` of the study's most epochs.
        reduction_factor: η: a rung keeps the best 1/η (successive halving, Hyperband).
    """

    pruner: str = NO_PRUNER
    min_epochs: int | None = None
    reduction_factor: int = REDUCTION_FACTOR

    def __post_init__(self) -> None:
        if self.pruner not in PRUNERS:
            raise PrunerError(
                f"search.pruner: unknown pruner {self.pruner!r}; allowed: {', '.join(PRUNERS)}"
            )
        if self.min_epochs is not None and (
            isinstance(self.min_epochs, bool)
            or not isinstance(self.min_epochs, int)
            or self.min_epochs < 1
        ):
            raise PrunerError(f"search.min_epochs: {self.min_epochs!r} must be a whole number >= 1")
        if (
            isinstance(self.reduction_factor, bool)
            or not isinstance(self.reduction_factor, int)
            or self.reduction_factor < 2
        ):
            raise PrunerError(
                f"search.reduction_factor: {self.reduction_factor!r} must be a whole number >= 2"
            )

    @property
    def pruned(self) -> bool:
        """True when configurations that have lost are stopped early."""
        return self.pruner != NO_PRUNER

    @classmethod
    def from_value(cls, value: Any) -> SearchSpec:
        """Parse a study file's ``search:`` (a mapping, or a pruner's name alone)."""
        if value is None:
            return cls()
        if isinstance(value, str):
            value = {"pruner": value}
        if not isinstance(value, Mapping):
            raise PrunerError(
                f"search: expected a mapping such as {{pruner: asha}}, got {value!r}; "
                f"pruners: {', '.join(PRUNERS)}"
            )
        allowed = ("pruner", "min_epochs", "reduction_factor")
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            raise PrunerError(
                f"search.{unknown[0]}: unknown setting; allowed: {', '.join(allowed)}"
            )
        pruner = value.get("pruner", NO_PRUNER)
        pruner = NO_PRUNER if pruner is None or pruner is False else str(pruner).strip().lower()
        return cls(
            pruner=pruner,
            min_epochs=value.get("min_epochs"),
            reduction_factor=value.get("reduction_factor", REDUCTION_FACTOR),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``studies.spec["search"]``)."""
        out: dict[str, Any] = {"pruner": self.pruner}
        if self.min_epochs is not None:
            out["min_epochs"] = self.min_epochs
        if self.reduction_factor != REDUCTION_FACTOR:
            out["reduction_factor"] = self.reduction_factor
        return out

    def first_rung(self, max_epochs: int) -> int:
        """Epochs every configuration trains before any may be stopped."""
        if self.min_epochs is not None:
            return min(self.min_epochs, max_epochs)
        return max(1, round(max_epochs * FIRST_RUNG_SHARE))

    def describe(self, max_epochs: int) -> str:
        """One sentence for the study card and the report: which rule, from which epoch."""
        if not self.pruned:
            return "full (every configuration trained to its stopping rule)"
        r, eta = self.first_rung(max_epochs), self.reduction_factor
        if self.pruner == "median":
            rule = (
                f"median rule every {r} epochs from epoch {r}, once {MEDIAN_STARTUP} "
                "configurations finished"
            )
        elif self.pruner == "hyperband":
            rule = f"Hyperband, first rung {r} epochs, η = {eta}"
        else:
            rungs = rung_epochs(r, eta, max_epochs)
            rule = f"ASHA, rungs at epochs {', '.join(map(str, rungs))}, keeping the best 1/{eta}"
        return f"pruned with {self.pruner} ({rule}; Optuna)"


def with_pruner(search: Any, pruner: str) -> Any:
    """A study file's ``search:`` value with its pruner replaced by ``pruner`` (the CLI's
    ``--pruner``): the file's other search settings (``min_epochs``, ...) are kept. A value
    that is not a mapping or a name is returned as is, for `SearchSpec.from_value` to refuse.
    """
    if search is None or isinstance(search, str):
        return {"pruner": pruner}
    if isinstance(search, Mapping):
        return {**search, "pruner": pruner}
    return search


def rung_epochs(first: int, eta: int, max_epochs: int) -> list[int]:
    """Successive halving's rungs below ``max_epochs``: first, first·η, first·η², ..."""
    rungs, epoch = [], first
    while epoch < max_epochs:
        rungs.append(epoch)
        epoch *= eta
    return rungs or [first]


def make_pruner(search: SearchSpec, max_epochs: int) -> Any:
    """The Optuna pruner of ``search`` for a study of at most ``max_epochs`` epochs.

    Raises:
        PrunerError: ``search`` prunes nothing (``none``).
    """
    import optuna  # lazily: ~1 s, only where a pruned search trains

    first = search.first_rung(max_epochs)
    if search.pruner in ("asha", "successive_halving"):
        return optuna.pruners.SuccessiveHalvingPruner(
            min_resource=first, reduction_factor=search.reduction_factor
        )
    if search.pruner == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=first,
            max_resource=max(max_epochs, first + 1),
            reduction_factor=search.reduction_factor,
        )
    if search.pruner == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=MEDIAN_STARTUP, n_warmup_steps=first, interval_steps=first
        )
    raise PrunerError(f"search.pruner: {search.pruner!r} prunes nothing; nothing to build")
