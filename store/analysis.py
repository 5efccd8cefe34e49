"""Reads behind the reviewer-grade statistics (`engine.analysis`): split sizes, per-film test
predictions with patients and true grades, and every run's test counts for budget matching.

Everything returns DataFrames; the statistics themselves are `engine.analysis`'s.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from store.db import connect, one_value


def study_exists(study_id: str, *, path: Path | str | None = None) -> bool:
    """Whether the store holds a study with this id."""
    with connect(path, read_only=True) as con:
        row = con.execute("SELECT 1 FROM studies WHERE study_id = ?", [study_id]).fetchone()
    return row is not None


def split_sizes(study_id: str, *, path: Path | str | None = None) -> pd.DataFrame:
    """Films per seed, task and split of a study's dataset, counting only films graded for
    the task (a CPPD-only film is no KL test film). A study imported from another tool
    (``import-results``) has no splits here: its sizes are those its file gave
    (``seed_split_sizes``), and none when it gave none.

    Returns:
        Columns seed, task, n_test (films held out for testing) and n_fit (films used to fit
        and select: train + validation); one row per (seed, task) of the study's runs, each
        seed counted on the split its split seed drew.
    """
    with connect(path, read_only=True) as con:
        return con.execute(
            """
            WITH seeds AS (SELECT DISTINCT seed, coalesce(split_seed, seed) AS split_seed, task
                           FROM runs WHERE study_id = $study),
                 ds AS (SELECT dataset_id FROM studies WHERE study_id = $study)
            SELECT s.seed, l.task,
                   count(*) FILTER (WHERE sp.split = 'test') AS n_test,
                   count(*) FILTER (WHERE sp.split IN ('train', 'val')) AS n_fit
            FROM seeds s
            JOIN splits sp ON sp.seed = s.split_seed
                          AND sp.dataset_id = (SELECT dataset_id FROM ds)
            JOIN labels l ON l.dataset_id = sp.dataset_id AND l.image_id = sp.image_id
                         AND l.task = s.task
            GROUP BY ALL
            UNION ALL
            SELECT seed, task, n_test, n_train AS n_fit FROM seed_split_sizes
            WHERE study_id = $study
            ORDER BY 1, 2
            """,
            {"study": study_id},
        ).df()


def selected_test_films(study_ids: list[str], *, path: Path | str | None = None) -> pd.DataFrame:
    """Per-film test predictions of the selected runs with the film's patient and its true
    grade (the phantom's noiseless grade; NULL for real data). Films of results imported
    from another tool have no dataset: each is its own patient.

    Returns:
        Columns study_id, run_id, task, method, seed, image_id, patient_id, y_true (the
        recorded grade models were scored on), y_pred, true_grade (Int64, NA where unknown);
        ordered by run and image.
    """
    with connect(path, read_only=True) as con:
        frame = con.execute(
            """
            SELECT r.study_id, r.run_id, r.task, r.method, r.seed, p.image_id,
                   coalesce(i.patient_id, p.image_id) AS patient_id,
                   p.y_true, p.y_pred, l.true_grade
            FROM runs r
            JOIN studies s USING (study_id)
            JOIN predictions p USING (run_id)
            LEFT JOIN images i ON i.dataset_id = s.dataset_id AND i.image_id = p.image_id
            LEFT JOIN labels l ON l.dataset_id = s.dataset_id AND l.image_id = p.image_id
                              AND l.task = r.task
            WHERE r.study_id IN (SELECT unnest(?)) AND r.selected AND p.split = 'test'
            ORDER BY r.run_id, p.image_id
            """,
            [study_ids],
        ).df()
    frame["true_grade"] = frame["true_grade"].astype("Int64")
    return frame


def true_grade_counts(study_ids: list[str], *, path: Path | str | None = None) -> pd.DataFrame:
    """Counts of (true_grade, y_pred) per selected run on its test films: the input of
    `engine.analysis.compare.per_run_metrics` scored against the phantom's noiseless grades.

    Films without a true grade (real data) are left out, so a study on real data returns no
    rows. ``y_true`` holds the true grade, so the frame has the shape of
    `store.runs.confusion_counts`.
    """
    with connect(path, read_only=True) as con:
        return con.execute(
            """
            SELECT r.study_id, r.run_id, r.task, r.method, r.seed,
                   l.true_grade AS y_true, p.y_pred, count(*) AS n
            FROM runs r
            JOIN studies s USING (study_id)
            JOIN predictions p USING (run_id)
            JOIN labels l ON l.dataset_id = s.dataset_id AND l.image_id = p.image_id
                         AND l.task = r.task
            WHERE r.study_id IN (SELECT unnest(?)) AND r.selected AND p.split = 'test'
              AND l.true_grade IS NOT NULL
            GROUP BY ALL
            """,
            [study_ids],
        ).df()


def all_run_test_counts(study_id: str, *, path: Path | str | None = None) -> pd.DataFrame:
    """Test confusion counts of every run of a study (selected or not), with what budget
    matching re-selects on: the configuration index and the validation AMAE.

    A store the worker wrote keeps every run's test predictions; a study imported from a
    bundle keeps them for its selected runs only, so unselected runs have no rows here
    (:func:`runs_lacking_test_predictions` counts them).

    Returns:
        Columns study_id, run_id, task, method, seed, config_index, val_amae, y_true,
        y_pred, n.
    """
    with connect(path, read_only=True) as con:
        return con.execute(
            """
            SELECT r.study_id, r.run_id, r.task, r.method, r.seed, r.config_index, r.val_amae,
                   p.y_true, p.y_pred, count(*) AS n
            FROM runs r JOIN predictions p USING (run_id)
            WHERE r.study_id = ? AND p.split = 'test' AND r.status = 'succeeded'
            GROUP BY ALL
            """,
            [study_id],
        ).df()


def selected_runs_with_films(study_id: str, split: str, *, path: Path | str | None = None) -> int:
    """Selected runs of a study with at least one stored prediction on ``split`` ('val':
    the validation films a conformal set calibrates on; results imported as per-seed metrics
    have none)."""
    with connect(path, read_only=True) as con:
        count = one_value(
            con,
            """
            SELECT count(*) FROM runs r
            WHERE r.study_id = ? AND r.selected AND EXISTS (
                SELECT 1 FROM predictions p WHERE p.run_id = r.run_id AND p.split = ?)
            """,
            [study_id, split],
        )
    return int(count)


def runs_lacking_test_predictions(study_id: str, *, path: Path | str | None = None) -> int:
    """Succeeded runs of a study with no stored test prediction (e.g. the unselected runs of
    a study imported from a bundle)."""
    with connect(path, read_only=True) as con:
        count = one_value(
            con,
            """
            SELECT count(*) FROM runs r
            WHERE r.study_id = ? AND r.status = 'succeeded' AND NOT EXISTS (
                SELECT 1 FROM predictions p WHERE p.run_id = r.run_id AND p.split = 'test')
            """,
            [study_id],
        )
    return int(count)


def study_content_digest(
    study_id: str, *, path: Path | str | None = None
) -> tuple[int, int | None, int, int | None]:
    """What a study's results are computed from, in four numbers that change when any of it
    does: its runs (identity, status, selection, validation score) and its stored
    predictions, each as a count and an order-free hash (None when there are none). The same
    study in another store (imported from a bundle: same ids, same rows) has the same
    digest, so an analysis of it can be reused there.
    """
    with connect(path, read_only=True) as con:
        row = con.execute(_DIGEST_SQL, [study_id]).fetchone()
    runs, runs_hash, predictions, predictions_hash = row or (0, None, 0, None)  # always a row
    return int(runs), runs_hash, int(predictions), predictions_hash


_DIGEST_SQL = """
    WITH r AS (SELECT * FROM runs WHERE study_id = ?)
    SELECT
        (SELECT count(*) FROM r),
        (SELECT bit_xor(hash(run_id, task, method, seed, config_index, status, selected,
            pruned, val_amae)) FROM r),
        count(*),
        bit_xor(hash(p.run_id, p.image_id, p.split, p.y_true, p.y_pred, p.probs))
    FROM predictions p JOIN r USING (run_id)
"""
