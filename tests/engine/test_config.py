"""Study and run settings: parsing and one clear message per bad value."""

from __future__ import annotations

import pytest
import yaml

from engine.config import SpecError, StudySpec, TrainConfig
from tests.helpers.studies import tiny_study


def test_tiny_study_parses_and_round_trips():
    spec = StudySpec.from_dict(tiny_study())
    assert spec.tasks == ("KL", "CPPD") and spec.seeds == (0,)
    assert StudySpec.from_dict(spec.to_dict()) == spec


def test_seed_count_means_seeds_zero_to_n_minus_one():
    assert StudySpec.from_dict(tiny_study(seeds=3)).seeds == (0, 1, 2)


@pytest.mark.parametrize(
    ("override", "field", "allowed"),
    [
        (
            {"methods": ["nominal", "gaussian"]},
            "methods",
            "nominal, binomial, beta, triangular, exponential",
        ),
        ({"budget": 16, "methods": ["nominal", "triangular"]}, "budget", "from 1 to 15"),
        ({"methods": ["nominal"], "budget": 4}, "budget", "from 1 to 3"),
        ({"max_epochs": -1}, "max_epochs", ">= 1"),
        ({"dataset": None}, "dataset", "dataset: phantom"),
        ({"tasks": []}, "tasks", "required"),
        ({"tasks": ["KL", "hip"]}, "tasks", "KL, CPPD"),
        ({"device": "tpu"}, "device", "auto, cpu, cuda or cuda:N"),
        ({"dataset": {"kind": "dicom"}}, "dataset.kind", "phantom, folder"),
        ({"epochs": 3}, "epochs", "allowed:"),
        ({"image_size": 8}, "image_size", "from 16 to 1024"),
    ],
)
def test_bad_study_values_name_field_and_allowed_values(override, field, allowed):
    study = tiny_study(**override)
    if override.get("dataset", "x") is None:
        study.pop("dataset")
    with pytest.raises(SpecError) as err:
        StudySpec.from_dict(study)
    message = str(err.value)
    assert message.startswith(f"{field}:") and allowed in message


@pytest.mark.parametrize("value", ["all", "All", " all "])
def test_methods_all_expands_to_every_registered_method_in_registry_order(value):
    from engine.methods import method_names

    spec = StudySpec.from_dict(tiny_study(methods=value))
    assert spec.methods == method_names() and len(spec.methods) >= 14
    # What is stored is the expanded list, so the study reads the same after more methods come.
    assert spec.to_dict()["methods"] == list(method_names())


def test_methods_all_follows_the_registry_when_a_method_is_added(monkeypatch, tmp_path):
    from engine.methods import PLUGIN_VARIABLE

    package = tmp_path / "extra_methods"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "ranked.py").write_text(
        "from engine.methods.base import LEARNING_RATE, REGULARISED_LOSS, Method\n"
        "METHOD = Method(name='ranked_probe', label='Ranked probe', family=REGULARISED_LOSS,\n"
        "    description='a test method', hyperparameters=(LEARNING_RATE,), source='test',\n"
        "    loss=lambda j, p: None)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(PLUGIN_VARIABLE, "extra_methods")
    assert "ranked_probe" in StudySpec.from_dict(tiny_study(methods="all")).methods


def test_methods_all_inside_a_list_is_refused_with_how_to_write_it():
    with pytest.raises(SpecError, match="methods: 'all' stands alone"):
        StudySpec.from_dict(tiny_study(methods=["nominal", "all"]))


def test_train_config_rejects_eta_outside_unit_interval():
    with pytest.raises(SpecError, match="eta"):
        TrainConfig(task="KL", method="beta", lr=1e-3, hparams={"eta": 1.5})


def test_folder_dataset_that_does_not_exist_is_refused(tmp_path):
    study = tiny_study(dataset={"kind": "folder", "path": str(tmp_path / "nowhere")})
    with pytest.raises(SpecError, match="dataset.path: .* is not a folder"):
        StudySpec.from_dict(study)


def test_missing_weights_file_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(SpecError, match="weights_path: no file"):
        StudySpec.from_dict(tiny_study(weights_path=str(tmp_path / "resnet18.pth")))


def test_study_file_is_read_and_validated(tmp_path):
    study = tmp_path / "study.yaml"
    study.write_text(yaml.safe_dump(tiny_study()))
    assert StudySpec.from_file(study) == StudySpec.from_dict(tiny_study())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "does not exist"),
        ("tasks: [KL\n", "is not valid YAML"),
        ("- KL\n", "expected a mapping"),
    ],
)
def test_bad_study_file_gets_one_message(tmp_path, text, message):
    study = tmp_path / "study.yaml"
    if text is not None:
        study.write_text(text)
    with pytest.raises(SpecError, match=message):
        StudySpec.from_file(study)
