"""Second readings (issue 41): a lab member's grade of a film the models disagree on, kept
beside the dataset's recorded label, never over it; and the per-film probabilities of a
study's selected runs that rank the films worth a second look."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from engine.vocab import TASK_CLASSES
from store.audit import record_in
from store.db import connect

StorePath = Path | str | None


def film_probabilities(
    study_id: str, task: str, method: str, *, split: str = "test", path: StorePath = None
) -> pd.DataFrame:
    """Each selected run's per-film probabilities of one task and method, with the film.

    Returns:
        Columns ``image_id``, ``seed``, ``y_true`` and ``p0`` .. ``p{J-1}``, by seed and film.
    """
    grades = ", ".join(f"p.probs[{g + 1}] AS p{g}" for g in range(TASK_CLASSES[task]))
    with connect(path, read_only=True) as con:
        return con.execute(
            f"""
            SELECT p.image_id, r.seed, p.y_true, {grades}
            FROM runs r JOIN predictions p USING (run_id)
            WHERE r.study_id = ? AND r.task = ? AND r.method = ? AND r.selected AND p.split = ?
            ORDER BY r.seed, p.image_id
            """,
            [study_id, task, method, split],
        ).df()


def record_reading(
    dataset_id: str,
    image_id: str,
    task: str,
    grade: int,
    *,
    reader: str,
    recorded: int | None = None,
    study_id: str | None = None,
    note: str | None = None,
    path: StorePath = None,
) -> None:
    """Append one second reading and its audit line in one transaction.

    Raises:
        ValueError: a task or grade the vocabulary does not know.
    """
    if task not in TASK_CLASSES:
        raise ValueError(f"unknown task {task!r}; choose one of {', '.join(TASK_CLASSES)}")
    if not 0 <= int(grade) < TASK_CLASSES[task]:
        raise ValueError(f"{task} grade {grade} is not one of 0..{TASK_CLASSES[task] - 1}")
    detail = f"{task} {int(grade)}" + ("" if recorded is None else f" (recorded {recorded})")
    with connect(path) as con:
        con.execute(
            "INSERT INTO second_readings (dataset_id, image_id, task, grade, recorded, reader, "
            "study_id, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [dataset_id, image_id, task, int(grade), recorded, reader, study_id, note],
        )
        record_in(
            con, "second_reading", actor=reader, target=f"{dataset_id}/{image_id}", detail=detail
        )


def list_readings(dataset_id: str, *, path: StorePath = None) -> pd.DataFrame:
    """Every second reading of a dataset, newest first: ``image_id``, ``task``, ``grade``,
    ``recorded``, ``reader``, ``study_id``, ``note``, ``read_at``."""
    with connect(path, read_only=True) as con:
        return con.execute(
            "SELECT image_id, task, grade, recorded, reader, study_id, note, read_at "
            "FROM second_readings WHERE dataset_id = ? ORDER BY read_at DESC, rowid DESC",
            [dataset_id],
        ).df()
