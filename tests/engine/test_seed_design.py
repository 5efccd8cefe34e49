"""Seeds that separate the sources of variance: a run's split seed and init seed apart, and
the factorial design ``seeds: {splits: S, inits: I}`` (issue 29, item 1)."""

from __future__ import annotations

import json

import pytest
import yaml

from engine.config import SpecError, StudySpec, TrainConfig
from engine.seeds import SeedDesign
from engine.study import plan_runs
from tests.helpers.studies import tiny_study


def _factorial(splits: int = 3, inits: int = 2, **overrides: object) -> StudySpec:
    return StudySpec.from_dict(tiny_study(seeds={"splits": splits, "inits": inits}, **overrides))


def test_factorial_study_has_splits_times_inits_runs_per_task_and_method():
    spec = _factorial(3, 2, methods=["nominal", "beta"], tasks=["KL"])
    plan = plan_runs(spec, "study", "cpu")
    per_group = {(r.task, r.method): set() for r in plan}
    for r in plan:
        per_group[(r.task, r.method)].add((r.split_seed, r.init_seed))
    every_cell = {(s, i) for s in range(3) for i in range(2)}
    assert all(cells == every_cell for cells in per_group.values())
    assert len(plan) == 2 * 3 * 2  # methods x splits x inits at budget 1


def test_pairs_across_methods_share_both_split_and_init():
    plan = plan_runs(_factorial(4, 3), "study", "cpu")
    by_seed: dict[int, set[tuple[int, int]]] = {}
    for r in plan:
        by_seed.setdefault(r.seed, set()).add((r.split_seed, r.init_seed))
    assert all(len(cells) == 1 for cells in by_seed.values())  # one cell per pairing key
    assert len({next(iter(c)) for c in by_seed.values()}) == len(by_seed) == 12


def test_independent_seeds_draw_split_and_init_from_the_seed_itself():
    plan = plan_runs(StudySpec.from_dict(tiny_study(seeds=[0, 5])), "study", "cpu")
    assert {(r.seed, r.split_seed, r.init_seed) for r in plan} == {(0, 0, 0), (5, 5, 5)}


def test_the_search_sample_follows_the_init_seed_not_the_split():
    """Two splits trained from one init seed search the same configurations."""
    spec = _factorial(2, 2, budget=3, methods=["beta"], tasks=["KL"])
    plan = plan_runs(spec, "study", "cpu")
    lrs: dict[tuple[int, int], list] = {}
    for r in plan:
        lrs.setdefault((r.split_seed, r.init_seed), []).append(r.config.params)
    assert lrs[(0, 0)] == lrs[(1, 0)] and lrs[(0, 1)] == lrs[(1, 1)]
    assert lrs[(0, 0)] != lrs[(0, 1)]


def test_factorial_spec_round_trips_through_its_stored_form():
    spec = _factorial(10, 2)
    stored = json.loads(json.dumps(spec.to_dict()))
    assert stored["seeds"] == list(range(20))
    assert stored["seed_design"] == {"splits": 10, "inits": 2}
    assert StudySpec.from_dict(stored) == spec


def test_an_independent_spec_is_stored_as_before_without_a_design_key():
    assert "seed_design" not in StudySpec.from_dict(tiny_study(seeds=20)).to_dict()


def test_a_stored_design_holds_some_or_all_of_its_pairing_keys():
    stored = _factorial(3, 2).to_dict()
    stored["seeds"] = [0, 1, 2]  # a bundle of the complete seeds
    assert StudySpec.from_dict(stored).seeds == (0, 1, 2)
    stored["seeds"] = [0, 6]
    with pytest.raises(SpecError, match="not the pairing keys of 3 splits × 2 inits"):
        StudySpec.from_dict(stored)


def test_factorial_seeds_parse_from_yaml_text():
    raw = yaml.safe_load("seeds: {splits: 10, inits: 2}")
    spec = StudySpec.from_dict(tiny_study(**raw))
    assert spec.seed_design == SeedDesign(10, 2) and len(spec.seeds) == 20
    assert spec.split_seeds == tuple(range(10))


@pytest.mark.parametrize(
    ("seeds", "names"),
    [
        ({"splits": 0, "inits": 2}, "seeds.splits: 0 must be a whole number >= 2"),
        ({"splits": 3, "inits": -1}, "seeds.inits: -1 must be a whole number >= 2"),
        ({"splits": 2.5, "inits": 2}, "seeds.splits: 2.5 must be a whole number"),
        ({"splits": "ten", "inits": 2}, "seeds.splits: 'ten' must be a whole number"),
        ({"splits": 3}, "'inits' is missing"),
        ({"splits": 3, "inits": 2, "tasks": 1}, "unknown key 'tasks'"),
        ({}, "'splits' is missing"),
        (0, "seeds: 0 must be a whole number >= 1"),
        (-4, "seeds: -4 must be a whole number >= 1"),
        (2.5, "seeds: 2.5 is not allowed"),
        ("x", "seeds: 'x' is not allowed"),
        ([0, 0], "must be distinct non-negative integers"),
    ],
)
def test_bad_seeds_get_one_message_naming_what_is_allowed(seeds, names):
    with pytest.raises(SpecError) as caught:
        StudySpec.from_dict(tiny_study(seeds=seeds))
    message = str(caught.value)
    assert names in message
    assert "seeds: {splits: 10, inits: 2}" in message and "seeds: 20" in message


def test_a_config_stored_before_the_seeds_were_apart_reads_split_and_init_as_its_seed():
    old = {"task": "KL", "method": "nominal", "lr": 0.001, "seed": 7, "max_epochs": 3}
    config = TrainConfig.from_dict(old)
    assert (config.seed, config.split_seed, config.init_seed) == (7, 7, 7)
    again = TrainConfig.from_dict(config.to_dict())
    assert again == config and again.to_dict()["split_seed"] == 7


def test_a_config_keeps_split_and_init_seeds_apart_through_json():
    config = TrainConfig(task="KL", method="nominal", lr=0.001, seed=5, split_seed=2, init_seed=1)
    back = TrainConfig.from_dict(json.loads(json.dumps(config.to_dict())))
    assert (back.seed, back.split_seed, back.init_seed) == (5, 2, 1)


def test_a_negative_split_seed_is_refused():
    with pytest.raises(SpecError, match="split_seed: -3 must be a whole number >= 0"):
        TrainConfig(task="KL", method="nominal", lr=0.001, split_seed=-3)
