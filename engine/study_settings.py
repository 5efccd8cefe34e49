"""A study's whole-number settings, each declared once: the key a study file gives it, the
name people see, what it means, and the values it may take.

`engine.config.StudySpec` checks its numbers against these records and the Launch page draws
one number box per record (`pages.widgets.launch_form`), so a setting's name, meaning and
limits are written in one place; a new whole-number setting is a record here plus its field
in `StudySpec`. Settings whose limits depend on others (the budget's per-method grid, the
KL-graded films against all films) keep those cross-checks where both values are known.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.seeds import MIN_LEVELS

MAX_BUDGET = 15  # the paper samples at most 15 configurations per (task, method, seed)
#: The side of the knee crops a model may train on, smallest and largest (px); a demo bundle's
#: models are held to it too (`jobs.services.demo_bundle`).
IMAGE_SIZES = (16, 1024)


@dataclass(frozen=True)
class WholeSetting:
    """One whole-number setting: ``key`` in its mapping (the study file's top level, its
    ``dataset:`` or its ``seeds:``), its ``label`` and ``meaning`` for people, the values
    allowed (``low`` to ``high``; no upper limit when ``high`` is None) and the step a form
    moves by. ``name`` tells it apart where ``key`` alone is ambiguous (the phantom's
    ``seed`` beside the study's seeds)."""

    key: str
    label: str
    meaning: str
    low: int = 1
    high: int | None = None
    step: int = 1
    name: str = ""

    @property
    def field(self) -> str:
        """The setting's name among every study setting (a form widget's name)."""
        return self.name or self.key

    def allowed(self) -> str:
        """The values allowed, in words: "a whole number from 16 to 1024"."""
        if self.high is None:
            return f"a whole number >= {self.low}"
        return f"a whole number from {self.low} to {self.high}"

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` (naming the key and what is allowed), or None."""
        whole = isinstance(value, int) and not isinstance(value, bool)
        if whole and self.low <= value and (self.high is None or value <= self.high):
            return None
        return f"{self.key}: {value!r} must be {self.allowed()}"


#: The phantom's size and seed (a study file's ``dataset:`` of kind phantom).
PHANTOM_SIZE: tuple[WholeSetting, ...] = (
    WholeSetting("n_images", "Films", "Films in the phantom; every film has a CPPD grade.", low=1),
    WholeSetting(
        "n_joint",
        "KL-graded films",
        "How many of those films also have a KL grade; the KL task trains on these only.",
        low=0,
    ),
    WholeSetting(
        "seed",
        "Phantom seed",
        "The same seed and sizes always draw the same films.",
        low=0,
        name="phantom_seed",
    ),
)
#: What the phantom's settings are when a study file leaves them out (`PhantomSpec`'s
#: defaults read them here; the films of the paper's cohort: 2,170, 970 of them KL-graded).
PHANTOM_DEFAULTS: dict[str, int] = {"n_images": 2170, "n_joint": 970, "seed": 0}

#: Independent seeds: how many (a study file's ``seeds: N``).
SEED_COUNT = WholeSetting(
    "seeds",
    "Number of seeds",
    "Repetitions with different data splits and initialisations (seeds 0, 1, …). The paper "
    "uses 20; statistics need several.",
)

#: A factorial design's size (a study file's ``seeds: {splits: S, inits: I}``): at least two
#: levels of each factor, or their variances cannot be told apart.
FACTORIAL_SIZE: tuple[WholeSetting, ...] = (
    WholeSetting(
        "splits",
        "Splits",
        "Train/validation/test splits of the films (split seeds 0, 1, …).",
        low=MIN_LEVELS,
    ),
    WholeSetting(
        "inits",
        "Inits per split",
        "Initialisations (weights, batch order and search sample) each split is trained "
        "from; the same init seeds on every split.",
        low=MIN_LEVELS,
    ),
)

#: The search budget; a study's chosen methods may lower its upper limit (their grids).
BUDGET = WholeSetting(
    "budget",
    "Search budget",
    f"Hyper-parameter configurations tried per task, method and seed (at most {MAX_BUDGET}, "
    "as in the paper; nominal has only 3). The one with the best validation AMAE is kept.",
    high=MAX_BUDGET,
)
#: The search and training settings every study has (top level of a study file).
TRAINING_NUMBERS: tuple[WholeSetting, ...] = (
    BUDGET,
    WholeSetting("max_epochs", "Max epochs", "Upper limit of training epochs per run."),
    WholeSetting(
        "patience",
        "Patience (epochs)",
        "Stop a run early after this many epochs without a lower validation loss.",
    ),
    WholeSetting(
        "image_size",
        "Image size (px)",
        "Side of the square knee crop fed to the network (224 in the paper).",
        low=IMAGE_SIZES[0],
        high=IMAGE_SIZES[1],
        step=16,
    ),
    WholeSetting("batch_size", "Batch size", "Films per training step."),
)


def training_problems(values: Mapping[str, Any]) -> list[str]:
    """What is wrong with the training numbers ``values`` has (a study has all of them, a
    run all but the budget), each naming its key."""
    return [
        p
        for s in TRAINING_NUMBERS
        if s.key in values and (p := s.problem(values[s.key])) is not None
    ]
