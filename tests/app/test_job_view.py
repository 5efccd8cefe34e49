"""What the Jobs page says about one job: progress, live numbers, run time, cancel outcome."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from pages.present.job_view import (
    cancel_text,
    ended_caption,
    progress,
    running_numbers,
    runs_note,
)
from store.bundle import REFERENCE_STUDY, read_card


def _job(**fields: Any) -> Any:
    """One row of ``store.jobs.list_jobs`` as the page iterates it (a named tuple)."""
    row = {
        "job_id": "job-1",
        "status": "running",
        "runs_done": 0,
        "runs_total": np.nan,  # pandas' marker for "no plan yet"
        "current_run": None,
        "current_epoch": np.nan,
        "latest_val_amae": np.nan,
        "elapsed_s": np.nan,
        "finished_at": pd.NaT,
    }
    row.update(fields)
    return next(pd.DataFrame([row]).itertuples())


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"runs_done": 3, "runs_total": 12}, (0.25, "3 / 12 runs finished")),
        ({"status": "queued"}, (0.0, "waiting for a worker to pick it up")),
        ({"status": "running"}, (0.0, "preparing the dataset and planning runs…")),
        ({"status": "failed"}, None),
    ],
)
def test_progress_bar_by_plan_and_status(fields, expected):
    assert progress(_job(**fields)) == expected


def test_running_numbers_read_the_latest_epoch_and_the_time_left():
    job = _job(
        runs_done=2,
        runs_total=10,
        current_run="study-ab12-KL-beta-s3-c1",
        current_epoch=7.0,
        latest_val_amae=0.41234,
        elapsed_s=100.0,
    )
    text = running_numbers(job)
    assert "Latest run: **KL · beta · seed 3 · config 1**" in text
    assert "Epoch: **7**" in text
    assert "Latest val AMAE: **0.412**" in text
    assert "Elapsed: **1 min 40 s**" in text
    assert "Time left: **6 min 40 s**" in text


def test_running_numbers_before_any_run_ends_say_estimating():
    text = running_numbers(_job(runs_total=10, elapsed_s=5.0))
    assert "Epoch: **—**" in text and "Latest val AMAE: **—**" in text
    assert "Time left: **estimating…**" in text


def test_ended_caption_says_how_long_it_ran_and_when_it_finished():
    job = _job(status="succeeded", elapsed_s=185.0, finished_at=pd.Timestamp("2026-03-04 05:06"))
    assert ended_caption(job) == "Ran 3 min 05 s · finished 2026-03-04 05:06"
    assert ended_caption(_job(status="cancelled")) == "Never started"


@pytest.mark.parametrize(
    ("status", "says"),
    [
        ("cancelled", "was cancelled before it started"),
        ("running", "stops at the next epoch boundary"),
        ("succeeded", "had already finished (succeeded)"),
    ],
)
def test_cancel_text_follows_the_status_the_store_returned(status, says):
    assert says in cancel_text("job-1", status)


def test_a_study_run_in_parts_says_its_compute_time_apart_from_its_span():
    bundle = read_card(REFERENCE_STUDY)["card"]  # the reference: two sessions 12 h apart
    job = _job(status="succeeded", elapsed_s=45138.0, finished_at=pd.Timestamp("2026-11-27 00:10"))
    caption = ended_caption(job, bundle)
    assert caption.startswith("Ran 30 min 49 s of compute in 2 parts (seeds 0")
    assert "spanning 12 h 32 min from the first start to the last finish" in caption
    assert ended_caption(job, None).startswith("Ran 12 h 32 min")  # a study run here


def test_the_reference_card_explains_why_its_parts_stored_1868_runs_for_1800():
    bundle = read_card(REFERENCE_STUDY)["card"]
    note = runs_note(bundle, 1800)
    assert note is not None
    assert "1,238 (seeds 0" in note and "630 (seeds 13" in note and "= 1,868 runs" in note
    assert "1,800 are kept" in note and "The other 68 belong to a seed" in note
    assert runs_note(bundle, 1868) is None
    assert runs_note(None, 1800) is None
