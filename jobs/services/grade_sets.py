"""A study's conformal grade sets in one call: each selected run's validation and test
probabilities (`store.runs.selected_probabilities`) fed to `engine.analysis.conformal`.

For the pages (cache these), the command line (`softgrade sets`) and the report.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from engine.analysis import conformal
from engine.analysis import probability_metrics as pm
from engine.analysis.conformal import NO_VALIDATION_NOTE as NO_VALIDATION_NOTE
from store import runs as store_runs

StorePath = Path | str | None


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


def seed_thresholds(
    study_id: str,
    method: str,
    *,
    coverage: float = conformal.DEFAULT_COVERAGE,
    score: str = conformal.DEFAULT_SCORE,
    path: StorePath = None,
) -> dict[str, dict[int, np.ndarray]]:
    """Each selected run's thresholds of one method, calibrated on its own validation films:
    task -> seed -> ``(J,)`` thresholds (`engine.analysis.conformal.calibrate`). Runs
    without validation probabilities are left out."""
    val = store_runs.selected_probabilities([study_id], split="val", path=path)
    out: dict[str, dict[int, np.ndarray]] = {}
    for (task, seed), films in val[val["method"] == method].groupby(["task", "seed"]):
        probs, y_true = pm.task_arrays(films, str(task))
        out.setdefault(str(task), {})[int(seed)] = conformal.calibrate(
            probs, y_true, score=score, coverage=coverage
        )
    return out
