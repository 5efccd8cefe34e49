"""A study's conformal grade sets in one call: each selected run's validation and test
probabilities (`store.runs.selected_probabilities`) fed to `engine.analysis.conformal`.

For the pages (cache these), the command line (`softgrade sets`) and the report.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from engine.analysis import conformal
from store import runs as store_runs

StorePath = Path | str | None

#: Why a run may have no sets: what the command line and the pages say then.
NO_VALIDATION_NOTE = (
    "grade sets need each run's validation probabilities to calibrate on; runs without them "
    "(per-seed metrics imported without per-film predictions) have none"
)


def study_sets(
    study_id: str,
    *,
    coverage: float = conformal.DEFAULT_COVERAGE,
    scores: tuple[str, ...] = tuple(conformal.SCORES),
    per_grade: bool = False,
    path: StorePath = None,
) -> pd.DataFrame:
    """`engine.analysis.conformal.run_sets` of the study's selected runs: one row per task,
    method, seed and score."""
    val = store_runs.selected_probabilities([study_id], split="val", path=path)
    test = store_runs.selected_probabilities([study_id], split="test", path=path)
    return conformal.run_sets(val, test, coverage=coverage, scores=scores, per_grade=per_grade)
