"""Every registered method through one set of tests, as scikit-learn's ``test_common`` checks
every metric: the registry's records are well formed; every method's probabilities are a
distribution over the grades and its gradients reach the backbone and the head; every method
trains an epoch on a tiny phantom split (plain and fast path), reloads from its checkpoint
with the same probabilities, and is explained by Grad-CAM.

A method added to the registry (docs/add-a-method.md) is checked here without a line of its
own. That its target matrix is the one its loss trains against is tests/engine/test_train.py's
``test_graph_loss_equals_dlordinal_loss``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from engine import gradcam
from engine.config import SpecError, TrainConfig
from engine.datasets import TaskSplit, make_splits, open_prepared, task_split
from engine.methods import (
    FAMILIES,
    PLUGIN_VARIABLE,
    get_method,
    is_registered,
    make_loss,
    method_names,
    methods_by_family,
    paper_methods,
    registry,
    sample_configs,
    search_grid,
    target_matrix,
)
from engine.methods.heads import HEADS
from engine.train import (
    Trainer,
    build_model,
    load_checkpoint,
    load_model,
    save_checkpoint,
)
from tests.helpers.method_plugins import (
    LAB_METHOD,
    LAB_METHOD_LABEL,
    LAB_METHOD_SOURCE,
    write_method_package,
)

METHODS = method_names()
# Films are 32 px in the tiny phantom; batches of 16 give the training sets a tail batch.
BATCH = 16


def _rows_are_distributions(probs: np.ndarray, n: int, num_classes: int) -> None:
    assert probs.shape == (n, num_classes)
    assert np.isfinite(probs).all() and (probs >= 0).all()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-5)


# -- the registry's records ----------------------------------------------------------------


def test_method_names_are_keys_and_labels_are_distinct():
    labels = [m.label.casefold() for m in registry().values()]
    assert len(set(labels)) == len(labels), labels  # method_sort_key matches labels too
    for name, method in registry().items():
        assert method.name == name and name.isidentifier() and name == name.lower()


def test_every_method_has_a_family_a_description_and_a_source():
    for method in registry().values():
        assert method.family in FAMILIES
        assert method.description.strip() and method.source.strip(), method.name
    assert list(methods_by_family()) == list(FAMILIES)  # every family has a method


def test_hyperparameters_start_with_the_learning_rate_and_say_what_they_mean():
    for method in registry().values():
        assert method.parameter_names[0] == "lr", method.name
        assert len(set(method.parameter_names)) == len(method.parameter_names)
        for param in method.hyperparameters:
            assert param.label.strip() and param.meaning.strip(), (method.name, param.name)
            assert all(math.isfinite(v) for v in param.values)
            assert len(set(param.values)) == len(param.values), (method.name, param.name)
        assert all(lr > 0 for lr in method.hyperparameters[0].values)


def test_a_hyperparameter_name_shared_by_methods_has_one_label():
    """The explorer shows a run's parameters as columns by name under one label; what a
    parameter means stays each method's own (SORD's and CDW-CE's alpha differ)."""
    seen: dict[str, str] = {}
    for method in registry().values():
        for param in method.hyperparameters:
            assert seen.setdefault(param.name, param.label) == param.label, method.name


def test_every_method_draws_its_search_from_a_seed_of_its_own():
    keys = [m.seed_key for m in registry().values()]
    assert len(set(keys)) == len(keys)


def test_search_draws_come_from_the_grid_without_repeats():
    for method in METHODS:
        grid = search_grid(method)
        drawn = sample_configs(method, 15, seed=0)
        assert len(drawn) == len(set(drawn)) == min(15, len(grid))
        assert set(drawn) <= set(grid)


def test_the_papers_five_come_first_in_the_papers_order():
    assert METHODS[:5] == paper_methods()
    assert sum(m.in_paper for m in registry().values()) == 5


def test_every_head_is_known_and_only_softmax_heads_have_target_matrices():
    for method in registry().values():
        assert method.head in HEADS, method.name
        if method.target_matrix is not None:
            assert HEADS[method.head].logits, method.name


@pytest.mark.parametrize("num_classes", [4, 5])
def test_target_matrices_are_distributions_over_the_grades(num_classes):
    with_matrix = [m.name for m in registry().values() if m.target_matrix is not None]
    assert set(paper_methods()) <= set(with_matrix)
    for method in with_matrix:
        for params in search_grid(method):
            matrix = target_matrix(method, num_classes, params)
            assert matrix is not None
            _rows_are_distributions(np.asarray(matrix), num_classes, num_classes)


# -- methods from a package outside the checkout --------------------------------------------


@pytest.fixture
def plugin_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A fresh folder on ``sys.path`` for method packages; their modules are forgotten after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("labpkg_"):
            del sys.modules[name]


def test_a_method_package_adds_its_method_to_the_registry(plugin_folder, monkeypatch):
    package = f"labpkg_{plugin_folder.name}"
    write_method_package(plugin_folder, package, {"mce_wk": LAB_METHOD_SOURCE})
    assert not is_registered(LAB_METHOD)
    monkeypatch.setenv(PLUGIN_VARIABLE, package)
    method = get_method(LAB_METHOD)
    assert [m for m in method_names() if m != LAB_METHOD] == list(METHODS)
    assert method.label == LAB_METHOD_LABEL and len(search_grid(LAB_METHOD)) == 6
    logits = torch.randn(8, 5, requires_grad=True)
    make_loss(LAB_METHOD, 5, search_grid(LAB_METHOD)[0])(logits, torch.arange(8) % 5).backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0
    monkeypatch.delenv(PLUGIN_VARIABLE)
    assert not is_registered(LAB_METHOD)


def test_a_method_defined_twice_is_refused_naming_it(plugin_folder, monkeypatch):
    package = f"labpkg_{plugin_folder.name}"
    twin = LAB_METHOD_SOURCE.replace(f'name="{LAB_METHOD}"', f'name="{METHODS[0]}"')
    write_method_package(plugin_folder, package, {"twin": twin})
    monkeypatch.setenv(PLUGIN_VARIABLE, package)
    with pytest.raises(ValueError, match=f"method '{METHODS[0]}' is defined twice"):
        registry()


# -- every method's outputs and gradients -------------------------------------------------


def _images(n: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n, 1, 32, 32), dtype=torch.uint8, generator=generator)


@pytest.mark.parametrize("num_classes", [4, 5])
@pytest.mark.parametrize("method", METHODS)
def test_probabilities_are_a_distribution_over_the_grades(method, num_classes):
    torch.manual_seed(0)
    model, _ = build_model(num_classes, head=get_method(method).head)
    with torch.no_grad():
        probs = model.probabilities(model.eval()(_images(6)))
    _rows_are_distributions(probs.numpy(), 6, num_classes)


@pytest.mark.parametrize("method", METHODS)
def test_gradients_reach_the_first_convolution_and_the_head(method):
    torch.manual_seed(0)
    model, _ = build_model(5, head=get_method(method).head)
    criterion = make_loss(method, 5, search_grid(method)[0])
    loss = criterion(model.train()(_images(8)), torch.arange(8) % 5)
    assert torch.isfinite(loss)
    loss.backward()
    first = model.backbone.conv1.weight.grad
    assert first is not None and torch.isfinite(first).all() and first.abs().sum() > 0
    head = dict(model.backbone.fc.named_parameters())
    assert head, f"{method}'s head has no parameters"
    for name, param in head.items():
        grad = param.grad
        assert grad is not None and torch.isfinite(grad).all(), (method, name)
        assert grad.abs().sum() > 0, (method, name)


# -- every method trained on a tiny phantom split --------------------------------------------


@pytest.fixture(scope="module")
def phantom_splits(tiny_phantom: Path) -> dict[str, TaskSplit]:
    """Both tasks' train/val/test tensors of the 60-film, 32 px phantom (seed 0's split)."""
    prepared = open_prepared(tiny_phantom)
    splits = make_splits(prepared.meta, 0)
    return {task: task_split(prepared, splits, task) for task in ("KL", "CPPD")}


def _config(method: str, task: str, *, fast: bool) -> TrainConfig:
    params = search_grid(method)[0]
    hparams = {k: v for k, v in params.items() if k != "lr"}
    return TrainConfig(
        task=task,
        method=method,
        lr=params.lr,
        hparams=hparams,
        max_epochs=1,
        patience=1,
        batch_size=BATCH,
        image_size=32,
        device="cpu",
        fast=fast,
    )


def _train(method: str, task: str, data: TaskSplit, *, fast: bool):
    config = _config(method, task, fast=fast)
    trainer = Trainer(
        num_classes=config.num_classes,
        device=torch.device("cpu"),
        fast=fast,
        head=get_method(method).head,
    )
    return config, trainer.fit(config, data)


@pytest.fixture(scope="module", params=METHODS)
def trained(request, phantom_splits, tmp_path_factory):
    """One method trained one epoch on KL on the plain path, and its saved checkpoint."""
    method = request.param
    data = phantom_splits["KL"]
    config, result = _train(method, "KL", data, fast=False)
    path = tmp_path_factory.mktemp("checkpoints") / f"{method}.pt"
    save_checkpoint(path, result.state_dict, config)
    return method, data, result, path


@pytest.mark.slow
def test_every_method_trains_an_epoch_on_the_plain_path(trained):
    method, data, result, _ = trained
    assert result.epochs_run == 1 and math.isfinite(result.history[0].train_loss), method
    assert math.isfinite(result.history[0].val_loss)
    _rows_are_distributions(result.val_probs, len(data.y_val), 5)
    _rows_are_distributions(result.test_probs, len(data.y_test), 5)


@pytest.mark.slow
def test_a_saved_model_reloads_with_the_same_probabilities(trained):
    method, data, result, path = trained
    model, config = load_checkpoint(path)
    assert config.method == method and model.head == get_method(method).head
    probs = gradcam.predict(load_model(path), data.x_test[:, 0].numpy())
    np.testing.assert_allclose(probs, result.test_probs, atol=1e-5)


@pytest.mark.slow
def test_grad_cam_explains_every_method(trained):
    method, data, _, path = trained
    model = load_model(path)
    crops = data.x_test[:3, 0].numpy()
    batch = gradcam.grad_cam(model, crops)
    assert batch.cams.shape == crops.shape and np.isfinite(batch.cams).all()
    assert batch.cams.min() >= 0.0 and batch.cams.max() <= 1.0
    np.testing.assert_allclose(batch.probs, gradcam.predict(model, crops), atol=1e-5)
    np.testing.assert_array_equal(batch.targets, batch.predicted)
    # A one-value head (CLM, the binomial layer) moves every grade's log-probability along
    # one direction, so its maps differ between grades by sign at most: only the targets
    # asked for are checked here.
    asked = [int(g) for g in (batch.predicted + 1) % 5]
    np.testing.assert_array_equal(gradcam.grad_cam(model, crops, targets=asked).targets, asked)


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_every_method_trains_an_epoch_on_the_fast_path(method, phantom_splits):
    """bf16, channels-last and the fast stem on the CPU (the CUDA graphs need a GPU)."""
    data = phantom_splits["CPPD"]
    _, result = _train(method, "CPPD", data, fast=True)
    assert result.epochs_run == 1 and math.isfinite(result.history[0].train_loss), method
    _rows_are_distributions(result.val_probs, len(data.y_val), 4)
    _rows_are_distributions(result.test_probs, len(data.y_test), 4)


# -- checkpoints of any head, where the method is not registered ----------------------------


def _head_method(logits: bool) -> str:
    """A registered method whose head has (or has not) logits as outputs."""
    return next(m.name for m in registry().values() if HEADS[m.head].logits == logits)


def test_a_model_whose_method_is_not_registered_here_loads_with_its_head(tmp_path):
    method = _head_method(logits=False)
    torch.manual_seed(0)
    model, _ = build_model(4, head=get_method(method).head)
    path = tmp_path / "model.pt"
    save_checkpoint(path, model.state_dict(), TrainConfig(task="CPPD", method=method, lr=1e-3))
    blob = torch.load(path, weights_only=True)
    blob["config"]["method"] = "a_lab_method_not_here"  # a demo bundle opened elsewhere
    torch.save(blob, path)

    loaded = load_model(path)

    assert loaded.head == get_method(method).head
    x = _images(3)
    with torch.no_grad():
        expected = model.eval().probabilities(model(x))
    np.testing.assert_allclose(gradcam.predict(loaded, x[:, 0].numpy()), expected.numpy())
    with pytest.raises(SpecError, match="a_lab_method_not_here"):
        load_checkpoint(path)  # a run's config needs its method; the model does not


def test_a_checkpoint_from_before_heads_were_saved_takes_its_methods_head(tmp_path):
    method = _head_method(logits=True)
    model, _ = build_model(5)
    path = tmp_path / "old.pt"
    config = TrainConfig(task="KL", method=method, lr=1e-3)
    torch.save({"state_dict": model.state_dict(), "config": config.to_dict()}, path)
    assert load_model(path).head == get_method(method).head

    unknown = {**config.to_dict(), "method": "a_lab_method_not_here"}
    torch.save({"state_dict": model.state_dict(), "config": unknown}, path)
    with pytest.raises(ValueError, match=PLUGIN_VARIABLE):
        load_model(path)
