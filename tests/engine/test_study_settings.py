"""The study's whole-number settings, declared once (`engine.study_settings`): the study
file's checks and the Launch form both read these records."""

from __future__ import annotations

from dataclasses import fields

import pytest

from engine.config import SpecError, StudySpec, TrainConfig
from engine.methods import grid_size, method_names
from engine.phantom import PhantomSpec
from engine.seeds import SeedDesign
from engine.study_settings import (
    FACTORIAL_SIZE,
    PHANTOM_DEFAULTS,
    PHANTOM_SIZE,
    SEED_COUNT,
    TRAINING_NUMBERS,
    WholeSetting,
)
from tests.helpers.studies import tiny_study

# Every whole-number setting whose values a study's top level takes as they are.
STUDY_LEVEL = (SEED_COUNT, *TRAINING_NUMBERS)
# The method with the largest search grid, so that the budget's own limit is its bound.
WIDEST = max(method_names(), key=grid_size)


def _out_of_range(setting: WholeSetting) -> list[int]:
    """The nearest refused values on each side of what ``setting`` allows."""
    return [setting.low - 1] + ([setting.high + 1] if setting.high is not None else [])


def test_each_setting_names_a_field_of_what_it_sets() -> None:
    study_fields = {f.name for f in fields(StudySpec)}
    run_fields = {f.name for f in fields(TrainConfig)}
    assert {s.key for s in STUDY_LEVEL} <= study_fields
    assert {s.key for s in TRAINING_NUMBERS} - run_fields == {"budget"}
    assert {s.key for s in PHANTOM_SIZE} <= {f.name for f in fields(PhantomSpec)}
    assert {s.key for s in FACTORIAL_SIZE} == {f.name for f in fields(SeedDesign)}
    assert set(PHANTOM_DEFAULTS) == {s.key for s in PHANTOM_SIZE}
    every = (*PHANTOM_SIZE, SEED_COUNT, *FACTORIAL_SIZE, *TRAINING_NUMBERS)
    assert len({s.field for s in every}) == len(every), "a form widget per field, none shared"


@pytest.mark.parametrize("setting", STUDY_LEVEL, ids=lambda s: s.key)
def test_a_study_file_refuses_each_out_of_range_number_with_its_records_words(
    setting: WholeSetting,
) -> None:
    for value in _out_of_range(setting):
        problem = setting.problem(value)
        assert problem is not None and problem.startswith(f"{setting.key}: {value} must be")
        with pytest.raises(SpecError) as refused:
            StudySpec.from_dict(tiny_study(methods=[WIDEST], **{setting.key: value}))
        assert problem in str(refused.value)


@pytest.mark.parametrize("setting", STUDY_LEVEL, ids=lambda s: s.key)
def test_a_study_file_takes_each_settings_limits(setting: WholeSetting) -> None:
    limits = [setting.low] + ([setting.high] if setting.high is not None else [])
    for value in limits:
        assert setting.problem(value) is None
        spec = StudySpec.from_dict(tiny_study(methods=[WIDEST], **{setting.key: value}))
        taken = len(spec.seeds) if setting is SEED_COUNT else getattr(spec, setting.key)
        assert taken == value


def test_the_budget_is_also_held_to_the_chosen_methods_grid() -> None:
    with pytest.raises(SpecError, match=r"budget: 4 must be a whole number from 1 to 3 \(the"):
        StudySpec.from_dict(tiny_study(methods=["nominal"], budget=4))


def test_a_run_refuses_a_number_its_record_refuses() -> None:
    image_size = next(s for s in TRAINING_NUMBERS if s.key == "image_size")
    with pytest.raises(SpecError, match="image_size: 8 must be a whole number from 16 to 1024"):
        TrainConfig(task="KL", method="nominal", lr=1e-3, image_size=image_size.low // 2)


@pytest.mark.parametrize("value", [True, 2.5, "3"])
def test_a_setting_refuses_what_is_not_a_whole_number(value: object) -> None:
    assert SEED_COUNT.problem(value) == f"seeds: {value!r} must be a whole number >= 1"
