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
