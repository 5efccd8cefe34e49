"""Display helpers: grade tables, gallery picks, overlays, job times."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine import plots
from engine.vocab import TRAIN_FRACTION


def _labels() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "kl": pd.array([0, 0, 2, None, 4], dtype="Int64"),
            "kl_true": pd.array([1, 0, 2, 3, 4], dtype="Int64"),
            "cppd": [0, 1, 1, 3, 0],
            "cppd_true": [0, 1, 1, 3, 0],
        }
    )


def test_grade_counts_per_task_with_a_total():
    counts = plots.grade_counts(_labels())
    assert counts["KL"].tolist()[:5] == [2, 0, 1, 0, 1]
    assert counts["CPPD"].tolist()[:4] == [2, 2, 0, 1]
    assert pd.isna(counts.loc[4, "CPPD"])  # CPPD has no grade 4
    assert counts.loc["total"].tolist() == [4, 5]


def test_joint_table_counts_only_images_graded_for_both():
    table = plots.joint_table(_labels())
    assert table.shape == (5, 4)
    assert table.to_numpy().sum() == 4
    assert table.loc[0, 1] == 1 and table.loc[4, 0] == 1


def test_pick_examples_prefers_films_whose_recorded_grade_is_true():
    picks = plots.pick_examples(_labels(), "kl")
    assert picks["kl"].tolist() == [0, 2, 4]
    assert picks.index.tolist() == [1, 2, 4]  # row 0 is a noisy KL 0 (truly 1)


def test_overlay_mask_colours_only_the_chosen_layers():
    film = np.full((4, 4), 100, dtype=np.uint8)
    mask = np.zeros((4, 4), dtype=np.uint8)
    mask[0, 0] = 1 | 8
    mask[1, 1] = 8
    bits = {"joint_space": 1, "calcifications": 8}
    out = plots.overlay_mask(film, mask, bits, layers=("calcifications",), alpha=1.0)
    assert out.shape == (4, 4, 3) and out.dtype == np.uint8
    assert out[1, 1].tolist() == list(plots.MASK_COLOURS["calcifications"])
    assert out[0, 0].tolist() == list(plots.MASK_COLOURS["calcifications"])
    assert out[2, 2].tolist() == [100, 100, 100]


def test_crop_to_box_adds_a_margin_and_stays_inside_the_image():
    image = np.arange(100 * 80).reshape(100, 80)
    assert plots.crop_to_box(image, (10, 20, 50, 60), margin=0.1).shape == (48, 48)
    assert plots.crop_to_box(image, (0, 0, 80, 100), margin=0.2).shape == (100, 80)
    with pytest.raises(ValueError, match="empty"):
        plots.crop_to_box(image, (5, 5, 5, 9))
    rgb = np.zeros((100, 80, 3), dtype=np.uint8)
    assert plots.crop_to_box(rgb, (10, 20, 50, 70), size=64).shape == (64, 64, 3)


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
    assert plots.eta_seconds(elapsed, done, total) == expected


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "—"),
        (float("nan"), "—"),
        (4.4, "4 s"),
        (185, "3 min 05 s"),
        (2 * 3600 + 7 * 60, "2 h 07 min"),
        (3 * 86400, "3.0 days"),
    ],
)
def test_format_duration(seconds, text):
    assert plots.format_duration(seconds) == text


def test_rough_study_time_grows_with_work_and_is_lower_on_a_gpu():
    args = {"train_images": {"KL": 500, "CPPD": 1000}, "runs_per_task": {"KL": 10, "CPPD": 10}}
    short = plots.rough_study_seconds(**args, max_epochs=10, image_size=224, device="cpu")
    long = plots.rough_study_seconds(**args, max_epochs=100, image_size=224, device="cpu")
    gpu = plots.rough_study_seconds(**args, max_epochs=100, image_size=224, device="cuda:0")
    small = plots.rough_study_seconds(**args, max_epochs=100, image_size=32, device="cpu")
    assert short < long and gpu < long and small < long


def test_rough_paper_protocol_on_one_gpu_takes_a_few_hours_at_most():
    # Measured on an H200 (bench/RESULTS.md): one seed, 90 runs stopping early at ~78 of 100
    # epochs, in ~5 min, so ~1.7 h for 20 seeds; every run to 100 epochs bounds it above.
    seconds = plots.rough_study_seconds(
        {"KL": round(970 * TRAIN_FRACTION), "CPPD": round(2170 * TRAIN_FRACTION)},
        {"KL": 900, "CPPD": 900},
        max_epochs=100,
        image_size=224,
        device="cuda",
    )
    assert 2 * 3600 < seconds < 4 * 3600


@pytest.mark.parametrize(
    ("run_id", "label"),
    [
        ("study-ab12-KL-beta-s3-c1", "KL · beta · seed 3 · config 1"),
        ("study-ab12-CPPD-nominal-s10-c0", "CPPD · nominal · seed 10 · config 0"),
        (None, "—"),
        ("something-else", "something-else"),
    ],
)
def test_run_label_reads_a_run_id_in_words(run_id, label):
    assert plots.run_label(run_id) == label


def test_worker_devices_are_counted_not_repeated():
    assert plots.format_devices(["cuda:0"] * 4) == "cuda:0 ×4"
    assert plots.format_devices(["cuda:0", "cuda:0", "cuda:1"]) == "cuda:0 ×2, cuda:1"
    assert plots.format_devices(["cpu"]) == "cpu"
