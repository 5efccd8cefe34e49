"""Metrics on recorded and on true grades, and each method's gain over nominal's."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.analysis import compare, paired, truth
from store import analysis as store_analysis
from store import runs as store_runs
from tests.helpers.synthetic_study import write_synthetic_study


def _frame(values: dict[tuple[str, int], float]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"task": "KL", "method": m, "seed": s, "amae": v} for (m, s), v in values.items()]
    )


def test_shift_and_shift_vs_nominal_match_a_hand_computation():
    recorded = _frame(
        {("nominal", 0): 0.6, ("nominal", 1): 0.7, ("beta", 0): 0.5, ("beta", 1): 0.6}
    )
    true = _frame({("nominal", 0): 0.55, ("nominal", 1): 0.66, ("beta", 0): 0.4, ("beta", 1): 0.48})
    table = truth.recorded_vs_true(recorded, true, {"KL": 0.4}, metrics=("amae",))
    assert table["method"].tolist() == ["nominal", "beta"]
    beta = table.set_index("method").loc["beta"]
    assert beta["shift"] == pytest.approx((-0.1 - 0.12) / 2)
    # beta's shifts −0.10, −0.12 against nominal's −0.05, −0.04: −0.05 and −0.08.
    assert beta["shift_vs_nominal"] == pytest.approx(-0.065)
    expected = paired.corrected_resampled_t([-0.05, -0.08], 0.4)
    assert beta["p_corrected"] == pytest.approx(expected.p)
    assert bool(beta["better_on_truth"])
    assert pd.isna(table.set_index("method").loc["nominal", "shift_vs_nominal"])


def test_real_data_without_true_grades_gives_an_empty_table():
    recorded = _frame({("nominal", 0): 0.6})
    empty = recorded.iloc[0:0]
    assert truth.recorded_vs_true(recorded, empty, {"KL": 0.4}, metrics=("amae",)).empty


def test_scoring_a_noisy_phantom_study_against_its_true_grades(store):
    study = write_synthetic_study(store, n_seeds=3, n_patients=30)
    recorded = compare.per_run_metrics(store_runs.confusion_counts([study], path=store))
    true = compare.per_run_metrics(store_analysis.true_grade_counts([study], path=store))
    ratios = paired.test_train_ratios(store_analysis.split_sizes(study, path=store))
    table = truth.recorded_vs_true(recorded, true, ratios)
    assert len(table) == 2 * 3 * 6
    assert (table["mean_true"] != table["mean_recorded"]).any()  # the annotation noise shows
    assert table.loc[table["method"] != "nominal", "p_corrected"].notna().all()
