"""How a study's seeds draw its randomness: one seed for everything, or a factorial design.

A run has three seeds:

* ``seed``: the pairing key. Runs of different methods with the same ``seed`` are compared
  with each other (every paired test pairs by it), so they must share their split and their
  initialisation.
* ``split_seed``: draws the train/validation/test split (`engine.datasets.make_splits`).
* ``init_seed``: draws what the learning procedure draws: the initial weights, the batch order
  and the search's sample of configurations (`engine.methods.sample_configs`).

Independent seeds (``seeds: 20`` or a list) set ``split_seed = init_seed = seed``, as every
study did before the two were stored apart; a store or checkpoint without them reads so.

A factorial design (``seeds: {splits: S, inits: I}``) crosses S split seeds ``0..S-1`` with I
init seeds ``0..I-1``: every split is trained from every initialisation, so the variance of a
paired difference can be separated into a split part, an init part and a residual
(`engine.analysis.variance_components`). Its pairing keys are ``seed = split * I + init``
(0..S·I-1): the keys of one split are consecutive, so the seed-major plan
(`engine.study.plan_runs`) finishes whole splits first. Init seed ``i`` is the same number on
every split, so the same initial weights (and search draw) recur across splits: the design is
crossed, not nested.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: The keys of a factorial ``seeds:`` mapping, as a study file spells them.
FACTORIAL_KEYS: tuple[str, str] = ("splits", "inits")
#: Each factor needs at least two levels to have a variance.
MIN_LEVELS = 2
#: What ``seeds:`` accepts, for every message that refuses a value.
SEEDS_ALLOWED = (
    "a count (seeds: 20 means seeds 0-19), a list of distinct non-negative whole numbers "
    "(seeds: [0, 3, 7]), or a factorial design (seeds: {splits: 10, inits: 2}, each a whole "
    f"number >= {MIN_LEVELS})"
)


class SeedDesignError(ValueError):
    """A ``seeds:`` value is refused; the message says what is allowed."""


@dataclass(frozen=True)
class SeedDesign:
    """A factorial seeds design: ``splits`` split seeds crossed with ``inits`` init seeds."""

    splits: int
    inits: int

    def __post_init__(self) -> None:
        for name in FACTORIAL_KEYS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < MIN_LEVELS:
                raise SeedDesignError(
                    f"seeds.{name}: {value!r} must be a whole number >= {MIN_LEVELS} (a "
                    "factorial design needs two levels of each factor to separate their "
                    f"variance); seeds takes {SEEDS_ALLOWED}"
                )

    @classmethod
    def from_mapping(cls, value: Mapping[str, Any]) -> SeedDesign:
        """Parse ``{splits: S, inits: I}``; SeedDesignError names the key at fault."""
        unknown = sorted(str(k) for k in value if k not in FACTORIAL_KEYS)
        missing = [k for k in FACTORIAL_KEYS if k not in value]
        if unknown or missing:
            what = f"unknown key {unknown[0]!r}" if unknown else f"{missing[0]!r} is missing"
            raise SeedDesignError(
                f"seeds: {what}; a factorial design names exactly splits and inits, e.g. "
                f"seeds: {{splits: 10, inits: 2}}; seeds takes {SEEDS_ALLOWED}"
            )
        return cls(splits=_whole(value["splits"]), inits=_whole(value["inits"]))

    @property
    def n_runs_per_group(self) -> int:
        """Seeds (pairing keys) per (task, method): splits × inits."""
        return self.splits * self.inits

    def pairing_seeds(self) -> tuple[int, ...]:
        """Every pairing key of the design, split-major."""
        return tuple(range(self.n_runs_per_group))

    def split_seed(self, seed: int) -> int:
        """The split seed of pairing key ``seed``."""
        return seed // self.inits

    def init_seed(self, seed: int) -> int:
        """The init seed of pairing key ``seed``."""
        return seed % self.inits

    def seed_of(self, split_seed: int, init_seed: int) -> int:
        """The pairing key of one (split, init) cell."""
        return split_seed * self.inits + init_seed

    def to_dict(self) -> dict[str, int]:
        """``{"splits": S, "inits": I}``, as a study file and a stored spec write it."""
        return {"splits": self.splits, "inits": self.inits}

    def describe(self) -> str:
        """The design in words: "10 splits × 2 inits (20 seeds)"."""
        return (
            f"{self.splits} splits × {self.inits} inits ({self.n_runs_per_group} seeds, "
            "every split trained from every initialisation)"
        )


#: What the command line's ``--seeds`` accepts.
SEEDS_OPTION_ALLOWED = (
    "a count (--seeds 20), a comma-separated list (--seeds 0,3,7) or splits x inits "
    "(--seeds 10x2, a factorial design, each at least 2)"
)


def seeds_from_text(text: str) -> int | list[int] | dict[str, int]:
    """The command line's ``--seeds``: ``20``, ``0,3,7`` or ``10x2`` (splits × inits), as
    the value of a study file's ``seeds:``.

    Raises:
        SeedDesignError: the text is none of those; the message names what is allowed.
    """
    cleaned = text.strip().lower().replace(" ", "").replace("×", "x")
    try:
        if "x" in cleaned:
            splits, inits = cleaned.split("x")
            design = SeedDesign(splits=int(splits), inits=int(inits))
            return design.to_dict()
        if "," in cleaned:
            return [int(part) for part in cleaned.split(",") if part]
        return int(cleaned)
    except SeedDesignError:
        raise
    except ValueError:
        raise SeedDesignError(
            f"--seeds {text!r} is not allowed; give {SEEDS_OPTION_ALLOWED}"
        ) from None


def _whole(value: Any) -> Any:
    """A whole-number float (10.0) as an int; anything else as given, for the check to name."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def split_and_init(seed: int, design: SeedDesign | None) -> tuple[int, int]:
    """The (split seed, init seed) of pairing key ``seed``: both ``seed`` without a design."""
    if design is None:
        return seed, seed
    return design.split_seed(seed), design.init_seed(seed)


def split_seed_of(runs: Any, seed: int) -> int:
    """The split seed pairing key ``seed`` trained on, read from a study's runs.

    Args:
        runs: rows of `store.runs.list_runs` (columns ``seed`` and ``split_seed``); rows
            without ``split_seed`` (an older frame) mean the seed drew its split.
        seed: the pairing key.
    """
    if "split_seed" not in runs:
        return int(seed)
    rows = runs.loc[runs["seed"] == seed, "split_seed"]
    return int(rows.iloc[0]) if len(rows) else int(seed)
