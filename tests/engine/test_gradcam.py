"""Grad-CAM maps of grade models, their lift on lesion masks, and the stress-test films."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from pytorch_grad_cam import GradCAM
from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget

from engine import gradcam
from engine.datasets import load_masks, make_splits, open_prepared
from engine.methods.heads import corn_probabilities
from engine.phantom import MASK_BITS, PhantomSpec
from engine.train import build_model
from tests.helpers.films import meta_frame


@pytest.fixture
def model() -> torch.nn.Module:
    torch.manual_seed(0)
    net, _ = build_model(5)
    return net.eval()


@pytest.fixture
def crops() -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (5, 64, 64), dtype=np.uint8)


def test_maps_equal_a_full_backward_and_leave_the_model_trainable(model, crops):
    batch = gradcam.grad_cam(model, crops, chunk=2)

    assert batch.block == "layer3"  # 64 px: layer4's map would be 2x2
    full = GradCAM(model, [model.backbone.layer3[-1]])(torch.from_numpy(crops).unsqueeze(1), None)
    np.testing.assert_allclose(batch.cams, full, atol=1e-6)
    assert all(p.requires_grad for p in model.parameters())
    assert batch.cams.shape == crops.shape and batch.cams.dtype == np.float32
    assert batch.cams.min() >= 0.0 and batch.cams.max() <= 1.0


def test_maps_explain_the_predicted_grade_unless_told_otherwise(model, crops):
    predicted = gradcam.grad_cam(model, crops)
    with torch.no_grad():
        logits = model(torch.from_numpy(crops).unsqueeze(1))
    np.testing.assert_array_equal(predicted.predicted, logits.argmax(1).numpy())
    np.testing.assert_array_equal(predicted.targets, predicted.predicted)
    np.testing.assert_allclose(predicted.probs.sum(axis=1), 1.0, rtol=1e-5)

    asked = [(int(p) + 2) % 5 for p in predicted.predicted]
    other = gradcam.grad_cam(model, crops, targets=asked)
    np.testing.assert_array_equal(other.targets, asked)
    assert not np.allclose(other.cams, predicted.cams)


def test_grad_cam_refuses_images_it_cannot_read(model, crops):
    with pytest.raises(ValueError, match=r"must be \(N, S, S\) uint8"):
        gradcam.grad_cam(model, crops.astype(np.float32))
    with pytest.raises(ValueError, match="2 targets for 5 images"):
        gradcam.grad_cam(model, crops, targets=[0, 1])


@pytest.mark.parametrize(
    ("size", "block"),
    [(224, "layer4"), (128, "layer4"), (96, "layer3"), (64, "layer3"), (32, "layer2")],
)
def test_maps_come_from_the_deepest_block_with_four_cells_a_side(size, block):
    assert gradcam.target_block(size) == block


def test_lift_is_heat_on_a_sign_over_heat_overall():
    cams = np.zeros((1, 4, 4), np.float32)
    cams[0, :, :2] = 1.0  # all heat in the left half
    masks = np.zeros((1, 4, 4), np.uint8)
    masks[0, 0, 0] = MASK_BITS["osteophytes"]  # left: lift 1 / 0.5 = 2
    masks[0, 0, 3] = MASK_BITS["calcifications"]  # right: no heat
    masks[0, 1, 1] = MASK_BITS["joint_space"] | MASK_BITS["calcifications"]  # left, both

    lift = gradcam.sign_lift(cams, masks)

    assert lift.loc[0, "osteophytes"] == 2.0
    assert lift.loc[0, "calcifications"] == 1.0  # one hot pixel, one cold
    assert lift.loc[0, "joint_space"] == 2.0
    assert np.isnan(lift.loc[0, "sclerosis"])  # no such sign on this film
    assert gradcam.task_lift(lift, "KL")[0] == 2.0  # sclerosis absent, others 2
    with pytest.raises(ValueError, match="differ in shape"):
        gradcam.sign_lift(cams, masks[:, :2])


def test_overlay_is_an_rgb_picture_of_the_crop(crops):
    cam = np.zeros(crops.shape[1:], np.float32)
    picture = gradcam.overlay(crops[0], cam)
    assert picture.shape == (*crops.shape[1:], 3) and picture.dtype == np.uint8


def test_stress_films_redraw_one_knee_framed_as_in_the_cache(tiny_phantom: Path):
    prepared = open_prepared(tiny_phantom)
    meta = prepared.meta
    params = json.loads((tiny_phantom / "manifest.json").read_text())["spec"]
    spec = PhantomSpec(**{k: tuple(v) if k == "film_size" else v for k, v in params.items()})
    row = meta[meta["kl_true"] == 4].iloc[0]

    films = gradcam.stress_films(spec, row, "KL", 32)

    assert (films.fixed, films.varied) == ("KL", "CPPD")
    np.testing.assert_array_equal(films.levels, [0, 1, 2, 3])
    assert films.images.shape == (4, 32, 32) and films.masks.shape == (4, 32, 32)
    calc = (films.masks & MASK_BITS["calcifications"]) > 0
    assert not calc[0].any() and calc[3].any()
    assert films.original_grade == 4
    # The knee redrawn at its own grades is close to the cached crop of the film.
    own = int(row["cppd_true"])
    cached = prepared.images[row.name].astype(int)
    assert np.abs(films.images[own].astype(int) - cached).mean() < 6


def test_stress_knees_are_test_films_top_grade_first(tiny_phantom: Path):
    meta = open_prepared(tiny_phantom).meta
    splits = make_splits(meta, 1)
    knees = gradcam.stress_knees(meta, splits, "KL")
    assert (splits.reindex(knees["image_id"]) == "test").all()
    assert len(knees) == (splits == "test").sum()  # every phantom film has a true KL
    grades = knees["kl_true"].to_numpy(dtype=int)
    assert list(grades) == sorted(grades, reverse=True)


def test_grade_examples_are_test_films_graded_truly(tiny_phantom: Path):
    meta = open_prepared(tiny_phantom).meta
    splits = make_splits(meta, 0)
    rows = gradcam.grade_examples(meta, splits, "CPPD", 2)
    assert len(rows) > 0
    assert (splits.reindex(rows["image_id"]) == "test").all()
    assert (rows["cppd"] == 2).all() and (rows["cppd_true"] == 2).all()
    assert load_masks(tiny_phantom).shape[0] == len(meta)


def test_stress_table_reports_prediction_and_lift_per_level(model, tiny_phantom: Path):
    meta = open_prepared(tiny_phantom).meta
    params = json.loads((tiny_phantom / "manifest.json").read_text())["spec"]
    spec = PhantomSpec(**{k: tuple(v) if k == "film_size" else v for k, v in params.items()})
    films = gradcam.stress_films(spec, meta[meta["kl_true"] == 4].iloc[0], "KL", 32)
    batch = gradcam.grad_cam(model, films.images)

    table = gradcam.stress_table(films, batch, "beta")

    assert list(table["level"]) == [0, 1, 2, 3]
    assert set(table["method"]) == {"beta"}
    np.testing.assert_array_equal(table["predicted"], batch.predicted)
    assert np.isnan(table.loc[0, "lift_other"])  # CPPD 0: no deposits to look at
    assert table.loc[1:, "lift_other"].notna().all()
    assert isinstance(table, pd.DataFrame)


def test_cooccurrence_films_group_top_grade_test_films_by_the_other_grade():

    meta = meta_frame(n_patients=200, seed=3)
    splits = make_splits(meta, 0)
    groups = gradcam.cooccurrence_films(meta, splits, "KL")

    assert list(groups) == [0, 1, 2, 3]
    for level, rows in groups.items():
        assert (rows["kl"] == 4).all() and (rows["cppd"] == level).all()
        assert (splits.reindex(rows["image_id"]) == "test").all()
    every = meta[
        (meta["kl"] == 4).fillna(False) & (splits.reindex(meta["image_id"]) == "test").to_numpy()
    ]
    assert sum(len(rows) for rows in groups.values()) == len(every)


def test_predict_gives_the_models_probabilities(model, crops):
    probs = gradcam.predict(model, crops, chunk=2)
    with torch.no_grad():
        expected = torch.softmax(model(torch.from_numpy(crops).unsqueeze(1)), 1).numpy()
    np.testing.assert_allclose(probs, expected, rtol=1e-5, atol=1e-6)


@pytest.fixture
def corn_model() -> torch.nn.Module:
    """A model whose head's outputs are not logits: CORN's J - 1 conditional logits."""
    torch.manual_seed(0)
    net, _ = build_model(5, head="corn")
    return net.eval()


def test_a_logit_heads_maps_explain_the_grades_logit_as_the_papers_do(model, crops):
    asked = [0, 1, 2, 3, 4]
    batch = gradcam.grad_cam(model, crops, targets=asked)
    logit = [ClassifierOutputTarget(t) for t in asked]
    full = GradCAM(model, [model.backbone.layer3[-1]])(torch.from_numpy(crops).unsqueeze(1), logit)
    np.testing.assert_array_equal(batch.cams, full.astype(np.float32))


def test_other_heads_maps_explain_the_log_probability_of_the_grade(corn_model, crops):
    asked = [0, 1, 2, 3, 4]
    batch = gradcam.grad_cam(corn_model, crops, targets=asked)

    def log_probability(grade: int):
        return lambda outputs: torch.log(corn_probabilities(outputs[None])[0, grade])

    reference = GradCAM(corn_model, [corn_model.backbone.layer3[-1]])(
        torch.from_numpy(crops).unsqueeze(1), [log_probability(t) for t in asked]
    )
    np.testing.assert_allclose(batch.cams, reference, atol=1e-5)
    np.testing.assert_allclose(batch.probs, gradcam.predict(corn_model, crops), atol=1e-6)
    assert all(p.requires_grad for p in corn_model.parameters())


def test_predict_gives_probabilities_by_the_models_head(corn_model, crops):
    probs = gradcam.predict(corn_model, crops, chunk=2)
    with torch.no_grad():
        expected = corn_probabilities(corn_model(torch.from_numpy(crops).unsqueeze(1))).numpy()
    np.testing.assert_allclose(probs, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-5)
