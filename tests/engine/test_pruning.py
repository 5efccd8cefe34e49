"""A study's search setting: the pruners a study file may name, and bad values refused."""

from __future__ import annotations

import pytest

from engine.config import SpecError, StudySpec
from engine.pruning import PRUNERS, SearchSpec, make_pruner, rung_epochs
from tests.helpers.studies import tiny_study


@pytest.mark.parametrize("pruner", ["asha", "successive_halving", "median", "hyperband"])
def test_each_pruner_is_read_from_a_study_file(tmp_path, pruner):
    path = tmp_path / "study.yaml"
    path.write_text(
        "name: pruned\ndataset: phantom\ntasks: [KL]\nmethods: [beta]\nseeds: 2\nbudget: 6\n"
        f"max_epochs: 100\nsearch: {{pruner: {pruner}}}\n"
    )
    spec = StudySpec.from_file(path)
    assert spec.search.pruner == pruner and spec.search.pruned
    assert spec.to_dict()["search"] == {"pruner": pruner}
    assert StudySpec.from_dict(spec.to_dict()) == spec
    assert make_pruner(spec.search, spec.max_epochs) is not None


def test_asha_and_successive_halving_build_optunas_asynchronous_halving():
    import optuna

    for name in ("asha", "successive_halving"):
        pruner = make_pruner(SearchSpec(name), 100)
        assert isinstance(pruner, optuna.pruners.SuccessiveHalvingPruner)
    assert isinstance(make_pruner(SearchSpec("median"), 100), optuna.pruners.MedianPruner)
    assert isinstance(make_pruner(SearchSpec("hyperband"), 100), optuna.pruners.HyperbandPruner)


def test_no_search_setting_is_the_full_search_and_its_spec_is_as_before():
    spec = StudySpec.from_dict(tiny_study())
    assert not spec.search.pruned and spec.search.pruner == "none"
    assert "search" not in spec.to_dict()
    explicit = StudySpec.from_dict(tiny_study(search={"pruner": "none"}))
    assert explicit.to_dict() == spec.to_dict()


@pytest.mark.parametrize(
    ("search", "message"),
    [
        ({"pruner": "halving"}, "search.pruner: unknown pruner 'halving'; allowed: none, asha"),
        ("bogus", "unknown pruner 'bogus'; allowed: none, asha, successive_halving, median"),
        ({"pruner": "asha", "eta": 3}, "search.eta: unknown setting; allowed: pruner"),
        ({"pruner": "asha", "min_epochs": 0}, "search.min_epochs: 0 must be a whole number"),
        ({"pruner": "asha", "reduction_factor": 1}, "search.reduction_factor: 1 must be"),
        (["asha"], "search: expected a mapping such as {pruner: asha}"),
    ],
)
def test_a_bad_search_setting_is_one_message_naming_what_is_allowed(search, message):
    with pytest.raises(SpecError) as caught:
        StudySpec.from_dict(tiny_study(search=search))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_every_pruner_name_appears_in_the_message_of_a_bad_one():
    with pytest.raises(SpecError) as caught:
        StudySpec.from_dict(tiny_study(search={"pruner": "fast"}))
    for name in PRUNERS:
        assert name in str(caught.value)


def test_the_rungs_follow_the_study_epochs():
    assert SearchSpec("asha").first_rung(100) == 10
    assert rung_epochs(10, 3, 100) == [10, 30, 90]
    assert SearchSpec("asha", min_epochs=5).first_rung(3) == 3
    assert "rungs at epochs 10, 30, 90" in SearchSpec("asha").describe(100)
    assert SearchSpec().describe(100).startswith("full")
