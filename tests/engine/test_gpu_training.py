"""Every registered method on a CUDA GPU: trained on captured graphs only, alone or mixed with
other methods in one trainer and beside a sibling lane that compiles (issue 37).

These run only where CUDA is (`bench/gpu_check.sh` runs them on a lent GPU before training
code lands); on a CPU machine they skip, saying so.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import engine.train as train
from engine.config import TrainConfig
from engine.datasets import TaskSplit
from engine.methods import registry
from engine.train import Trainer

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.slow,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU here"),
]

CLASSES = 4


def _brightness_split(n: int = 150, seed: int = 0) -> TaskSplit:
    """Four grades the mean brightness gives away (any working trainer learns them), with
    validation and test splits whose sizes leave remainders (odd-sized graphs)."""
    gen = torch.Generator().manual_seed(seed)
    y = torch.arange(CLASSES).repeat(n // CLASSES + 1)[:n]
    y = y[torch.randperm(n, generator=gen)]
    noise = torch.randint(0, 40, (n, 1, 32, 32), generator=gen)
    x = (y.view(-1, 1, 1, 1) * 60 + noise).to(torch.uint8)
    a, b = 90, 120
    ids = [str(i) for i in range(n)]
    return TaskSplit(x[:a], y[:a], x[a:b], y[a:b], x[b:], y[b:], ids[a:b], ids[b:], CLASSES).to(
        torch.device("cuda")
    )


def _config(method: str, *, epochs: int = 4, lr: float | None = None) -> TrainConfig:
    params = registry()[method].search_grid()[0]
    return TrainConfig(
        task="CPPD",
        method=method,
        lr=params.lr if lr is None else lr,
        hparams={k: v for k, v in params.items() if k != "lr"},
        max_epochs=epochs,
        patience=epochs,
        batch_size=16,  # 90 training films: five full batches and a tail of 10
        image_size=32,
        device="cuda",
        fast=True,
        seed=0,
    )


def _trainer(head: str = "softmax") -> Trainer:
    return Trainer(num_classes=CLASSES, device=torch.device("cuda"), fast=True, head=head)


def _no_eager_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the eager paths fail loudly: on a GPU nothing may train or evaluate eagerly."""

    def eager(*args: object, **kwargs: object) -> None:
        raise AssertionError("an eager training or evaluation pass ran on the GPU")

    monkeypatch.setattr(train, "train_one_epoch", eager)
    monkeypatch.setattr(train, "evaluate", eager)


def test_every_registered_method_trains_on_captured_graphs(monkeypatch):
    _no_eager_training(monkeypatch)
    data = _brightness_split()
    trainers: dict[str, Trainer] = {}
    for method in registry().values():
        if method.head not in trainers:  # one per head, as a slot keeps them
            trainers[method.head] = Trainer(
                num_classes=CLASSES, device=torch.device("cuda"), fast=True, head=method.head
            )
        result = trainers[method.head].fit(_config(method.name, epochs=2), data)
        assert all(np.isfinite(h.train_loss) for h in result.history), method.name
        assert result.diverged_epoch is None, method.name
        np.testing.assert_allclose(result.test_probs.sum(axis=1), 1.0, atol=1e-4)
        assert (result.test_probs >= 0).all(), method.name


def test_a_target_method_after_other_losses_learns_as_in_a_fresh_trainer():
    """The landed bug: an eager run set the gradients to None and its optimiser replaced
    them, so the graphs a later graphed run replayed wrote into freed memory and learned
    nothing (chance AMAE). Here a nominal run after three other losses on one trainer must
    match a fresh trainer's nominal run."""
    data = _brightness_split()
    shared = Trainer(num_classes=CLASSES, device=torch.device("cuda"), fast=True)
    for method in ("cdw_ce", "qwk", "emd"):
        shared.fit(_config(method, epochs=2), data)
    after = shared.fit(_config("nominal", lr=1e-3), data)
    fresh = Trainer(num_classes=CLASSES, device=torch.device("cuda"), fast=True)
    alone = fresh.fit(_config("nominal", lr=1e-3), data)

    assert alone.val_amae <= 0.25, f"the problem is learnable: fresh AMAE {alone.val_amae}"
    assert abs(after.val_amae - alone.val_amae) <= 0.15, (after.val_amae, alone.val_amae)
    first_after, first_alone = after.history[0].train_loss, alone.history[0].train_loss
    assert first_after == pytest.approx(first_alone, rel=0.05)


def test_a_lane_trains_a_regularised_loss_while_a_sibling_compiles(monkeypatch):
    """Two lanes of one process (threads, own streams): one trains CDW-CE, CORN and CLM
    while the other builds and compiles fresh trainers. Before, the eager forward died
    inside torch.fx's tracing (`module is not installed as a submodule`)."""
    data = _brightness_split()
    errors: list[BaseException] = []

    def lane(work) -> None:
        try:
            with torch.cuda.stream(torch.cuda.Stream()):
                work()
        except BaseException as exc:
            errors.append(exc)

    def trains() -> None:
        for method in ("cdw_ce", "corn", "clm"):
            head = registry()[method].head
            trainer = Trainer(
                num_classes=CLASSES, device=torch.device("cuda"), fast=True, head=head
            )
            trainer.fit(_config(method, epochs=3), data)

    def compiles() -> None:
        for head in ("softmax", "binomial_layer", "corn"):
            trainer = Trainer(
                num_classes=CLASSES, device=torch.device("cuda"), fast=True, head=head
            )
            method = next(m.name for m in registry().values() if m.head == head)
            trainer.warm_up(_config(method))

    lanes = [threading.Thread(target=lane, args=(w,)) for w in (trains, compiles)]
    for thread in lanes:
        thread.start()
    for thread in lanes:
        thread.join(timeout=600)
    assert not any(t.is_alive() for t in lanes), "a lane did not finish in 10 minutes"
    assert not errors, errors


def test_corn_predicts_by_its_rank_rule_on_the_gpu():
    data = _brightness_split()
    trainer = Trainer(num_classes=CLASSES, device=torch.device("cuda"), fast=True, head="corn")
    result = trainer.fit(_config("corn", epochs=2), data)
    survival = 1.0 - np.cumsum(result.test_probs[:, :-1], axis=1)
    np.testing.assert_array_equal(result.test_pred, (survival > 0.5).sum(axis=1))
