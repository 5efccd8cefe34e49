"""Reads behind engine.analysis: split sizes, films with patients and true grades, and every
run's test counts."""

from __future__ import annotations

import pandas as pd

from store import analysis as store_analysis
from store import runs as store_runs
from store.db import connect
from tests.helpers.synthetic_study import write_synthetic_study


def test_split_sizes_count_the_films_graded_for_each_task(store):
    study = write_synthetic_study(store, n_seeds=2, n_patients=20)
    sizes = store_analysis.split_sizes(study, path=store)
    assert sorted(sizes["seed"].unique()) == [0, 1]
    # 20 patients × 2 knees; 6 test patients, 4 val, 10 train.
    assert (sizes["n_test"] == 12).all() and (sizes["n_fit"] == 28).all()
    assert set(sizes["task"]) == {"KL", "CPPD"}


def test_selected_test_films_carry_patient_and_true_grade(store):
    study = write_synthetic_study(store, n_seeds=2, n_patients=20)
    films = store_analysis.selected_test_films([study], path=store)
    assert len(films) == 2 * 2 * 3 * 12  # seeds × tasks × methods × test films
    assert films["patient_id"].notna().all()
    with connect(store, read_only=True) as con:
        labels = con.execute("SELECT image_id, task, grade, true_grade FROM labels").df()
    joined = films.merge(labels, on=["image_id", "task"])
    assert (joined["y_true"] == joined["grade"]).all()
    assert (joined["true_grade_x"] == joined["true_grade_y"]).all()
    assert (joined["true_grade_x"] != joined["y_true"]).any()  # the noise is there


def test_true_grade_counts_have_the_shape_of_confusion_counts(store):
    study = write_synthetic_study(store, n_seeds=2, n_patients=20)
    recorded = store_runs.confusion_counts([study], path=store)
    true = store_analysis.true_grade_counts([study], path=store)
    assert list(true.columns) == list(recorded.columns)
    assert true.groupby("run_id")["n"].sum().equals(recorded.groupby("run_id")["n"].sum())


def test_all_run_test_counts_cover_unselected_runs_unless_they_were_dropped(store):
    study = write_synthetic_study(
        store, n_seeds=1, configs={"nominal": 1, "binomial": 2, "beta": 3}
    )
    counts = store_analysis.all_run_test_counts(study, path=store)
    assert counts["run_id"].nunique() == 2 * 6
    assert store_analysis.runs_lacking_test_predictions(study, path=store) == 0
    assert store_analysis.study_exists(study, path=store)
    assert not store_analysis.study_exists("study-nope", path=store)


def test_runs_lacking_test_predictions_counts_a_bundle_like_study(store):
    study = write_synthetic_study(
        store,
        n_seeds=1,
        configs={"nominal": 1, "binomial": 2, "beta": 3},
        keep_unselected_test=False,
    )
    assert store_analysis.runs_lacking_test_predictions(study, path=store) == 2 * 3
    assert isinstance(store_analysis.all_run_test_counts(study, path=store), pd.DataFrame)
