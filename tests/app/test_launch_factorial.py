"""The Launch page asks for independent seeds or a factorial design of splits × inits
(issue 29, item 1); a bad number gets one message naming what is allowed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.config import StudySpec
from pages.present.study_form import (
    FACTORIAL,
    INDEPENDENT,
    preset_values,
    seed_widget_values,
    seeds_text,
)
from store import jobs as store_jobs
from tests.helpers.studies import tiny_study

PAGE = Path(__file__).parents[2] / "pages" / "launch.py"


def _page() -> AppTest:
    return AppTest.from_file(str(PAGE), default_timeout=60)


def _texts(elements) -> str:
    return re.sub(r"\\(.)", r"\1", "\n".join(e.value for e in elements))


def _jobs(path: Path) -> list[store_jobs.Job]:
    return [store_jobs.get_job(j, path=path) for j in store_jobs.list_jobs(path=path)["job_id"]]


def _factorial(at: AppTest, splits: int, inits: int) -> AppTest:
    at.radio(key="launch_seed_design").set_value(FACTORIAL).run()
    at.number_input(key="launch_splits").set_value(splits)
    at.number_input(key="launch_inits").set_value(inits)
    return at.run()


def test_a_factorial_study_is_queued_with_its_design_and_splits_times_inits_runs(path):
    at = _page().run()
    assert at.radio(key="launch_seed_design").value == INDEPENDENT
    _factorial(at, 3, 2)
    assert not at.exception
    # quick preset: 2 tasks x 5 methods x budget 1, now 3 x 2 = 6 seeds
    assert "**60 runs**" in _texts(at.markdown)
    assert "3 splits × 2 inits (6 seeds)" in _texts(at.markdown)
    at.button(key="launch_submit").click().run()
    (job,) = _jobs(path)
    assert job.spec["seed_design"] == {"splits": 3, "inits": 2}
    assert job.spec["seeds"] == list(range(6))
    spec = StudySpec.from_dict(job.spec)
    assert {spec.split_and_init(s) for s in spec.seeds} == {
        (s, i) for s in range(3) for i in (0, 1)
    }


@pytest.mark.parametrize(
    ("splits", "inits", "message"),
    [(1, 2, "seeds.splits: 1 must be a whole number >= 2"), (4, 0, "seeds.inits: 0 must be")],
)
def test_too_few_splits_or_inits_say_what_is_allowed_and_queue_nothing(
    path, splits, inits, message
):
    at = _factorial(_page().run(), splits, inits)
    assert not at.exception
    errors = _texts(at.error)
    assert message in errors and "seeds: {splits: 10, inits: 2}" in errors
    assert at.button(key="launch_submit").disabled
    assert _jobs(path) == []


def test_a_stored_factorial_spec_fills_the_form_back():
    spec = StudySpec.from_dict(tiny_study(seeds={"splits": 5, "inits": 3}))
    values = preset_values(spec.to_dict())
    assert values["launch_seed_design"] == FACTORIAL
    assert (values["launch_splits"], values["launch_inits"]) == (5, 3)
    assert seeds_text(spec) == "5 splits × 3 inits (15 seeds)"


def test_independent_seeds_fill_the_count_as_before():
    spec = StudySpec.from_dict(tiny_study(seeds=4))
    values = seed_widget_values(spec.to_dict())
    assert values["launch_seed_design"] == INDEPENDENT and values["launch_seeds"] == 4
    assert seeds_text(spec) == "4 seed(s)"


def test_switching_to_splits_x_inits_keeps_the_study_size(path):
    """Issue 39: 2 independent seeds became 20 (10 x 2) silently."""
    at = _page().run()
    at.number_input(key="launch_seeds").set_value(2).run()
    at.radio(key="launch_seed_design").set_value(FACTORIAL).run()
    assert not at.exception
    assert (
        at.number_input(key="launch_splits").value,
        at.number_input(key="launch_inits").value,
    ) == (2, 2)
    assert "4 seeds: every split trained from every init." in _texts(at.caption)
    at.radio(key="launch_seed_design").set_value(INDEPENDENT).run()
    at.number_input(key="launch_seeds").set_value(20).run()
    at.radio(key="launch_seed_design").set_value(FACTORIAL).run()
    assert (
        at.number_input(key="launch_splits").value * at.number_input(key="launch_inits").value == 20
    )
