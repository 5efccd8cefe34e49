"""The domain vocabulary: one task table, run ids built and read back."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.methods import order_methods
from engine.vocab import (
    LABEL_COLUMNS,
    TASK_CLASSES,
    TOP_GRADE,
    TRAIN_FRACTION,
    RunKey,
    parse_run_id,
    run_id,
    seed_ranges,
    task_info,
)


def test_task_table_gives_grades_columns_and_top_grade():
    assert dict(TASK_CLASSES) == {"KL": 5, "CPPD": 4}
    assert dict(TOP_GRADE) == {"KL": 4, "CPPD": 3}
    assert dict(LABEL_COLUMNS) == {"KL": "kl", "CPPD": "cppd"}
    assert task_info("CPPD").true_column == "cppd_true"
    assert list(task_info("KL").grades) == [0, 1, 2, 3, 4]


def test_unknown_task_names_the_allowed_ones():
    with pytest.raises(ValueError, match="allowed: KL, CPPD"):
        task_info("OA")


def test_train_fraction_is_what_the_two_holdouts_leave():
    assert pytest.approx(0.49) == TRAIN_FRACTION


@pytest.mark.parametrize("study_id", ["study-ab12", "plain", "a-b-c-d"])
def test_run_id_is_read_back_whatever_dashes_the_study_id_has(study_id):
    built = run_id(study_id, "CPPD", "triangular", 12, 3)
    assert parse_run_id(built) == RunKey(study_id, "CPPD", "triangular", 12, 3)


@pytest.mark.parametrize("value", ["something-else", "s-KL-beta-3-c1", "s-KL-beta-s3-cx", ""])
def test_ids_of_another_shape_are_not_read_as_runs(value):
    assert parse_run_id(value) is None


def test_methods_sort_in_the_papers_order_whatever_their_case_or_label():
    assert order_methods(["Triangular", "Nominal"]) == ["Nominal", "Triangular"]
    labels = pd.Series(["beta · b", "exponential", "beta · a", "nominal", "beta · a"])
    assert order_methods(labels) == ["nominal", "beta · a", "beta · b", "exponential"]
    assert order_methods(["other", "beta"]) == ["beta", "other"]  # unknown names come last


def test_seed_ranges_collapse_runs_of_seeds() -> None:
    assert seed_ranges([3]) == "seed 3"
    assert seed_ranges([2, 0, 1]) == "seeds 0–2"
    assert seed_ranges([0, 2, 5, 6, 7]) == "seeds 0, 2, 5–7"
