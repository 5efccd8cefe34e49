"""What one more seed costs is priced on the device the study asks for (issue 39: a CPU
study was priced in GPU hours on Launch's "How many seeds?")."""

from __future__ import annotations

import pytest

from engine.config import StudySpec
from pages.present import power_tables
from pages.present.study_form import hours_per_seed, study_size
from tests.helpers.studies import tiny_study

IMAGES = {"KL": 400, "CPPD": 400}


@pytest.mark.parametrize(
    ("device", "unit"), [("cpu", "CPU-slot hours"), ("cuda", "GPU hours"), ("auto", "GPU hours")]
)
def test_a_seed_is_priced_in_the_hours_of_the_device_the_study_asks_for(device, unit):
    spec = StudySpec.from_dict(tiny_study(device=device, seeds=[0, 1]))
    cost = hours_per_seed(spec, study_size(spec)[1], IMAGES)
    assert cost.unit == unit and cost.hours > 0


def test_the_seed_plan_names_the_unit_it_was_given():
    text = power_tables.seeds_plan_text(12, 2.5, 0.9, 0.1, unit="CPU-slot hours")
    assert "about 30 CPU-slot hours" in text and "GPU" not in text
