"""The Launch form's logic without widgets: presets, checking, request ids, size and time."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from engine.config import SpecError, StudySpec
from engine.methods import (
    FAMILIES,
    OUTPUT_LAYER,
    REGULARISED_LOSS,
    TARGET_DISTRIBUTION,
    method_names,
    order_methods,
)
from pages.present.study_form import (
    check_study,
    chosen_methods,
    configurations_text,
    family_key,
    method_widget_values,
    preset_gpu_seconds,
    preset_gpu_text,
    preset_values,
    request_id_for,
    rough_time_text,
    study_size,
)
from tests.helpers.films import meta_frame
from tests.helpers.studies import tiny_study


def test_a_preset_fills_every_widget_of_a_phantom_study():
    values = preset_values(StudySpec.from_dict(tiny_study(seeds=3)).to_dict())
    assert values["launch_seeds"] == 3
    assert chosen_methods(values) == ["nominal", "beta"]
    assert values["launch_dataset"] == "phantom"
    assert values["launch_n_images"] == tiny_study()["dataset"]["n_images"]


def test_a_device_the_form_does_not_offer_shows_as_auto():
    study = StudySpec.from_dict(tiny_study(device="cuda:1")).to_dict()
    assert preset_values(study)["launch_device"] == "auto"


def test_request_id_is_the_same_for_the_same_form_and_study_only():
    study = tiny_study()
    first = request_id_for("form1", study)
    assert first == request_id_for("form1", dict(reversed(list(study.items()))))
    assert first != request_id_for("form2", study)
    assert first != request_id_for("form1", tiny_study(seeds=[0, 1]))


def test_a_phantom_it_cannot_draw_is_refused_naming_the_phantom():
    study = tiny_study(dataset={"kind": "phantom", "n_images": 10, "n_joint": 20})
    with pytest.raises(SpecError, match=r"dataset \(phantom\)"):
        check_study(study)


def test_an_import_without_a_folder_says_which_path_is_missing():
    study = tiny_study(dataset={"kind": "folder", "path": " ", "labels_csv": "x.csv"})
    with pytest.raises(SpecError, match="dataset.path: give the path of the folder of films"):
        check_study(study, importing=True)


def test_an_import_checks_the_folder_labels_and_split_sizes(tmp_path):
    study = tiny_study(dataset={"kind": "folder", "path": str(tmp_path), "labels_csv": "l.csv"})

    def unreadable(folder: str, labels_csv: str) -> pd.DataFrame:
        raise ValueError("dataset.labels_csv: row 3 has no patient_id")

    with pytest.raises(SpecError, match="row 3 has no patient_id"):
        check_study(study, importing=True, read_folder=unreadable)

    few = meta_frame(n_patients=2)
    with pytest.raises(SpecError, match="split leaves no"):
        check_study(study, importing=True, read_folder=lambda folder, csv: few)
    enough = meta_frame(n_patients=40)
    spec = check_study(study, importing=True, read_folder=lambda folder, csv: enough)
    assert spec.dataset.kind == "folder"


def test_study_size_counts_runs_per_task():
    spec = StudySpec.from_dict(tiny_study(seeds=[0, 1], budget=2, methods=["beta"]))
    total, per_task = study_size(spec)
    assert per_task == {"KL": 4, "CPPD": 4}
    assert total == 8


@pytest.mark.parametrize(
    ("device", "parts"),
    [("cpu", ["on one CPU slot"]), ("cuda", ["on one GPU"]), ("auto", ["on a GPU", "on a CPU"])],
)
def test_rough_time_names_the_study_device(device, parts):
    spec = StudySpec.from_dict(tiny_study(device=device))
    _, per_task = study_size(spec)
    text = rough_time_text(spec, per_task, {"KL": 100, "CPPD": 200})
    assert text.startswith("about ")
    assert all(part in text for part in parts)


STUDIES = Path(__file__).parents[2] / "engine" / "studies"


def test_methods_fill_one_picker_per_family_and_read_back_in_registry_order():
    values = method_widget_values(["corn", "cdw_ce", "beta", "nominal", "unknown_loss"])
    assert set(values) == {family_key(f) for f in FAMILIES}
    assert values[family_key(TARGET_DISTRIBUTION)] == ["nominal", "beta"]
    assert values[family_key(REGULARISED_LOSS)] == ["cdw_ce"]
    assert values[family_key(OUTPUT_LAYER)] == ["corn"]
    assert chosen_methods(values) == order_methods(["nominal", "beta", "cdw_ce", "corn"])


def test_the_survey_preset_is_every_registered_method_on_the_paper_protocol():
    survey = StudySpec.from_file(STUDIES / "ordinal-survey.yaml")
    paper = StudySpec.from_file(STUDIES / "paper.yaml")
    assert survey.methods == method_names()
    assert replace(survey, name=paper.name, methods=paper.methods) == paper


def test_the_run_count_text_gives_each_method_its_grid_or_the_budget():
    spec = StudySpec.from_dict(tiny_study(methods=["nominal", "beta", "triangular"], budget=10))
    text = configurations_text(spec)
    assert "10 for Triangular" in text and "6 for Beta" in text and "3 for Nominal" in text
    assert configurations_text(StudySpec.from_dict(tiny_study(budget=1))) == (
        "1 configuration each"
    )


def test_a_gpu_preset_says_its_time_on_one_gpu_and_the_survey_takes_longer():
    def study(name: str) -> dict:
        return StudySpec.from_file(STUDIES / f"{name}.yaml").to_dict()

    assert preset_gpu_text(study("quick")) is None  # a CPU preset
    assert preset_gpu_text(study("ordinal-survey")).endswith("on one GPU")
    paper, survey = preset_gpu_seconds(study("paper")), preset_gpu_seconds(study("ordinal-survey"))
    # More methods, more runs: every method at the captured graphs' speed (issue 37).
    assert survey > paper
