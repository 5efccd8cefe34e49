"""The whole-protocol clock: the Jobs page's GPU table and time left, the Launch page's
estimate from measured run costs."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from engine.config import StudySpec
from jobs.services.gpu_probe import GpuReading, read_gpus
from jobs.services.run_costs import TimeLeft
from pages.present.gpu_view import (
    NO_GPU_TEXT,
    gpu_table,
    idle_gpus,
    idle_text,
    rates_by_index,
)
from pages.present.job_view import parallel_units, running_numbers, time_left_basis
from pages.present.study_form import measured_time_text
from pages.widgets.reads import cached_run_costs
from store.costs import RunCost, insert_run_cost
from store.db import connect
from tests.app.test_job_view import _job
from tests.helpers.studies import tiny_study

PAGES = Path(__file__).parents[2] / "pages"
GIB = 2**30
READINGS = [
    GpuReading(0, "NVIDIA H200", 97.0, int(12.3 * GIB), int(139.8 * GIB)),
    GpuReading(1, "NVIDIA H200", 3.0, int(0.5 * GIB), int(139.8 * GIB)),
]


def test_gpu_table_shows_use_memory_and_live_images_per_second():
    table = gpu_table(READINGS, {0: 15823.4})
    assert table.to_dict("records") == [
        {
            "GPU": "0 · NVIDIA H200",
            "Use": "97 %",
            "Memory": "12.3 / 139.8 GiB",
            "Training images/s": "15,823",
        },
        {
            "GPU": "1 · NVIDIA H200",
            "Use": "3 %",
            "Memory": "0.5 / 139.8 GiB",
            "Training images/s": "—",
        },
    ]


def test_a_gpu_below_half_is_idle_only_while_a_job_runs():
    assert idle_gpus(READINGS, job_running=True) == [1]
    assert idle_gpus(READINGS, job_running=False) == []
    assert "GPU 1 (3 %)" in idle_text([1], READINGS)


def test_rates_of_this_hosts_gpus_add_up_per_index():
    rates = pd.DataFrame(
        [
            {"hostname": "here", "device": "cuda:0", "images_per_s": 9000.0},
            {"hostname": "here", "device": "cuda:0", "images_per_s": 1000.0},  # 2nd worker
            {"hostname": "here", "device": "cpu", "images_per_s": 50.0},
            {"hostname": "elsewhere", "device": "cuda:1", "images_per_s": 7000.0},
        ]
    )
    assert rates_by_index(rates, "here") == {0: 10000.0}
    assert rates_by_index(rates.iloc[:0], "here") == {}


@pytest.mark.skipif(bool(read_gpus()), reason="this machine has a GPU")
def test_the_jobs_page_says_in_one_sentence_that_there_is_no_gpu(path):
    at = AppTest.from_file(str(PAGES / "queue.py"), default_timeout=30).run()
    assert not at.exception
    assert NO_GPU_TEXT in [c.value for c in at.caption]


def test_time_left_from_measured_costs_says_so():
    measured = TimeLeft(seconds=400.0, device_name="NVIDIA H200", measured_runs=12)
    job = _job(runs_done=2, runs_total=10, elapsed_s=100.0)
    assert "Time left: **6 min 40 s**" in running_numbers(job, measured)
    assert "Time left: **6 min 40 s**" in running_numbers(job)  # the pace gives the same here
    assert "12 runs measured on NVIDIA H200" in time_left_basis(measured, 2)
    assert "2 GPUs" in time_left_basis(measured, 2)
    assert "no run of this study has a measured cost" in time_left_basis(None, 1)
    assert parallel_units('["cuda:0", "cuda:0", "cuda:1", "cuda:1"]') == 2
    assert parallel_units('["cpu", "cpu"]') == 2


def _cost(**fields) -> RunCost:
    base = dict(
        device_name="CPU Test 9000 (1 thread(s))",
        slots_sharing=1,
        task="KL",
        method="nominal",
        image_size=32,
        batch_size=16,
        max_epochs=10,
        n_train=100,
        epochs_run=5,
        wall_s=10.0,
    )
    return RunCost(**{**base, **fields})


def test_the_launch_estimate_comes_from_runs_measured_on_the_device():
    spec = StudySpec.from_dict(tiny_study(max_epochs=10, image_size=32, batch_size=16))
    costs = [_cost(), _cost(task="CPPD", wall_s=20.0)]
    measured = pd.DataFrame(
        [
            {
                **c.__dict__,
                "run_id": f"r{i}",
                "images_per_s": c.images_per_s,
                "recorded_at": pd.Timestamp("2026-11-01"),
            }
            for i, c in enumerate(costs)
        ]
    )
    text = measured_time_text(spec, {"KL": 40, "CPPD": 60}, measured)
    assert text is not None
    assert "on one CPU Test 9000 (1 thread(s))" in text and "from 2 runs measured" in text
    assert measured_time_text(spec, {"KL": 40, "CPPD": 60}, measured.iloc[:0]) is None
    other_size = StudySpec.from_dict(tiny_study(image_size=64, batch_size=16))
    assert measured_time_text(other_size, {"KL": 40, "CPPD": 60}, measured) is None


def test_the_launch_page_uses_measured_costs_once_a_run_was_measured(path):
    launch = AppTest.from_file(str(PAGES / "launch.py"), default_timeout=60)
    before = launch.run()
    captions = "\n".join(c.value for c in before.caption)
    assert "Rough time" in captions and "no run has been measured" in captions
    with connect(path) as con:  # the quick preset: CPU, 32 px, batch 16, 10 epochs
        insert_run_cost(con, "run-1", _cost())
        insert_run_cost(con, "run-2", _cost(task="CPPD"))
    cached_run_costs.clear()  # the page caches them for a minute
    after = AppTest.from_file(str(PAGES / "launch.py"), default_timeout=60).run()
    assert not after.exception
    captions = re.sub(r"\\(.)", r"\1", "\n".join(c.value for c in after.caption))
    assert "Expected time, from the runs measured" in captions
    assert "on one CPU Test 9000 (1 thread(s))" in captions
