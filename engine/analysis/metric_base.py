"""The metric record: what a registered metric declares (engine.analysis.metrics reads them).

Its own module, beneath the registry, so that a plug-in metric (a module of a package named in
``SOFTGRADE_METRIC_PACKAGES``, docs/add-a-metric.md) imports the record while the registry is
still reading the plug-ins, without an import circle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Which end of a metric's range is the better one.
HIGHER = "higher"
LOWER = "lower"
DIRECTIONS: tuple[str, ...] = (HIGHER, LOWER)
#: What a metric is computed from: the stored confusion counts (the predicted grade only),
#: the stored probabilities (the whole predicted distribution), or a run's validation
#: probabilities (to calibrate on) beside its test probabilities (to score: a conformal set).
FROM_CONFUSION = "confusion counts"
FROM_PROBABILITIES = "probabilities"
FROM_CALIBRATION = "validation and test probabilities"
KINDS: tuple[str, ...] = (FROM_CONFUSION, FROM_PROBABILITIES, FROM_CALIBRATION)


@dataclass(frozen=True)
class Metric:
    """One metric of a run's test predictions.

    Attributes:
        name: Its key everywhere (tables, CSV columns, URLs, ``--metric``): lower case.
        label: What a person reads (``"AMAE"``).
        direction: `HIGHER` or `LOWER`: which end of the range is better.
        range: ``(low, high)`` every value lies in (``nan`` aside: see the module docstring).
        kind: `FROM_CONFUSION` (``function`` takes ``(R, J, J)`` confusion counts),
            `FROM_PROBABILITIES` (``function`` takes a `ProbabilityBatch`) or
            `FROM_CALIBRATION` (``function`` takes a `CalibratedBatch`: each run's validation
            films beside its test films; a run without validation films scores ``nan``).
        function: Computes the metric of every run at once, returning ``(R,)`` values.
        meaning: One plain sentence for a page, the CLI or a report to show beside it.
        scales_with_grades: True when ``range`` is in grade steps, so its bounds are
            multiplied by ``J - 1`` (MAE lies in ``0 .. J-1``).
        counts_grades: True when the value is a number of grades, so the high end of its
            range is ``J`` itself (a set of grades holds 1 to J); ``range`` then gives the
            low end and the most grades of any task.
    """

    name: str
    label: str
    direction: str
    range: tuple[float, float]
    kind: str
    # Its input depends on ``kind`` (a union of the two callables could not be called).
    function: Callable[[Any], np.ndarray]
    meaning: str
    scales_with_grades: bool = False
    counts_grades: bool = False

    def __post_init__(self) -> None:
        if not self.name or not all(c.islower() or c.isdigit() or c == "_" for c in self.name):
            raise ValueError(f"metric name {self.name!r}: use lower-case letters, digits and _")
        if self.direction not in DIRECTIONS:
            raise ValueError(f"metric {self.name!r}: {self.direction=}; allowed: {DIRECTIONS}")
        if self.kind not in KINDS:
            raise ValueError(f"metric {self.name!r}: {self.kind=}; allowed: {KINDS}")
        low, high = self.range
        if not low < high:
            raise ValueError(f"metric {self.name!r}: range {self.range} must be (low, high)")
        if self.scales_with_grades and self.counts_grades:
            raise ValueError(f"metric {self.name!r}: scales_with_grades or counts_grades, not both")

    @property
    def lower_is_better(self) -> bool:
        """True when the lowest value is the best."""
        return self.direction == LOWER

    def bounds(self, n_classes: int) -> tuple[float, float]:
        """``(low, high)`` for a task of ``n_classes`` grades."""
        if self.counts_grades:
            return self.range[0], float(n_classes)
        scale = n_classes - 1 if self.scales_with_grades else 1
        return self.range[0] * scale, self.range[1] * scale

    def best(self, n_classes: int) -> float:
        """The best value a run can reach (every film right, all mass on the true grade)."""
        low, high = self.bounds(n_classes)
        return low if self.lower_is_better else high

    @property
    def range_text(self) -> str:
        """The range as a reader reads it: ``"0 to 1"``, ``"0 to J − 1"``."""
        low, high = (f"{v:g}" for v in self.range)
        if self.counts_grades:
            return f"{low} to J"
        if self.scales_with_grades:
            high = "J − 1" if high == "1" else f"{high} (J − 1)"
        return f"{low} to {high}"
