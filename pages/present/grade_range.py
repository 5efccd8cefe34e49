"""A film's likely range of grades in a clinician's words (no streamlit):
"KL 2, likely range KL 2–3 at 90 %" and one line saying what that means.

How the seeds' models are combined: each seed's model has its own thresholds, fitted on its
own validation films (`jobs.services.grade_sets.seed_thresholds`); each gives the film a
range, and the range shown spans them all (`engine.analysis.conformal.ensemble_range`) and
the grade shown. Each seed's range holds the recorded grade for at least 90 % of films like
its validation films, so the span holds it at least as often. (Averaging the seeds'
probabilities and calibrating on pooled validation films would not be valid here: one
seed's validation film may be another seed's training film.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from engine.analysis import conformal

# The defaults, which a demo bundle's thresholds are also made at (jobs.services.demo_bundle).
RANGE_SCORE = conformal.DEFAULT_SCORE
RANGE_COVERAGE = conformal.DEFAULT_COVERAGE
#: Said instead of a range for a film the models were not calibrated on.
NO_RANGE_UPLOAD = (
    "No likely range for an uploaded film: ranges are checked only on this study's own films, "
    "and a film from another scanner or site may not behave like them. The grade is shown alone."
)
NO_RANGE_CALIBRATION = (
    "No likely range: these models come without the validation films a range is checked on "
    "(an older demo bundle, or imported results), so the grade is shown alone."
)


@dataclass(frozen=True)
class GradeRange:
    """A film's range: its ends and the words shown under the grade."""

    lo: int
    hi: int
    line: str
    note: str


def film_range(
    task: str,
    grade: int,
    probs_by_seed: Mapping[int, np.ndarray],
    thresholds_by_seed: Mapping[int, np.ndarray],
    coverage: float = RANGE_COVERAGE,
) -> GradeRange | None:
    """The range over the seeds that have both the film's probabilities and thresholds,
    widened to hold ``grade``; None when no seed has both."""
    seeds = [s for s in probs_by_seed if s in thresholds_by_seed]
    if not seeds:
        return None
    lo, hi = conformal.ensemble_range(
        np.stack([probs_by_seed[s] for s in seeds]),
        np.stack([thresholds_by_seed[s] for s in seeds]),
        score=RANGE_SCORE,
    )
    lo, hi = min(lo, grade), max(hi, grade)
    words = conformal.range_words(lo, hi, task, coverage)
    return GradeRange(lo, hi, f"{task} {grade}, {words}", range_note(coverage, len(seeds)))


def range_note(coverage: float, n_models: int) -> str:
    """One plain line: what the range means and where it was checked. "About", not "at
    least": the guarantee is on average over calibration draws, and on the reference study
    KL's measured coverage was 0.89 at 90 % (bench/RESULTS.md)."""
    in_ten = round(coverage * 10)
    models = "the models" if n_models > 1 else "the model"
    return (
        f"About {in_ten} in 10 films like this one have the annotators' grade inside this "
        f"range (checked on films {models} never trained on)."
    )
