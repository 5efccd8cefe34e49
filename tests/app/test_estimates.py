"""A job's time left and a study's rough training time."""

from __future__ import annotations

import pytest

from engine.vocab import TRAIN_FRACTION
from pages.present import estimates


@pytest.mark.parametrize(
    ("elapsed", "done", "total", "expected"),
    [
        (100.0, 2, 10, 400.0),
        (100.0, 0, 10, None),  # no run finished yet: no estimate
        (None, 1, 10, None),
        (float("nan"), 1, 10, None),
        (50.0, 5, 5, 0.0),
        (50.0, 1, None, None),
    ],
)
def test_eta_seconds_is_elapsed_per_run_times_runs_left(elapsed, done, total, expected):
    assert estimates.eta_seconds(elapsed, done, total) == expected


def test_rough_study_time_grows_with_work_and_is_lower_on_a_gpu():
    args = {"train_images": {"KL": 500, "CPPD": 1000}, "runs_per_task": {"KL": 10, "CPPD": 10}}
    short = estimates.rough_study_seconds(**args, max_epochs=10, image_size=224, device="cpu")
    long = estimates.rough_study_seconds(**args, max_epochs=100, image_size=224, device="cpu")
    gpu = estimates.rough_study_seconds(**args, max_epochs=100, image_size=224, device="cuda:0")
    small = estimates.rough_study_seconds(**args, max_epochs=100, image_size=32, device="cpu")
    assert short < long and gpu < long and small < long


def test_rough_paper_protocol_on_one_gpu_takes_a_few_hours_at_most():
    # Measured on an H200 (bench/RESULTS.md): one seed, 90 runs stopping early at ~78 of 100
    # epochs, in ~5 min, so ~1.7 h for 20 seeds; every run to 100 epochs bounds it above.
    seconds = estimates.rough_study_seconds(
        {"KL": round(970 * TRAIN_FRACTION), "CPPD": round(2170 * TRAIN_FRACTION)},
        {"KL": 900, "CPPD": 900},
        max_epochs=100,
        image_size=224,
        device="cuda",
    )
    assert 2 * 3600 < seconds < 4 * 3600


def test_every_method_costs_the_same_per_image_on_a_gpu():
    """Every method trains on captured graphs on a GPU (issue 37): runs of any method cost
    alike, so the guess grows with runs, not with which methods they are."""
    args = {
        "train_images": {"KL": 500, "CPPD": 1000},
        "max_epochs": 50,
        "image_size": 224,
        "device": "cuda",
    }
    ten = estimates.rough_study_seconds(**args, runs_per_task={"KL": 10, "CPPD": 10})
    twenty = estimates.rough_study_seconds(**args, runs_per_task={"KL": 20, "CPPD": 20})
    assert twenty > ten
