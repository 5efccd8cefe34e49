"""A method whose step cannot be captured as a CUDA graph is refused with a clear message
(issue 37), never trained eagerly beside lanes that compile and capture.

On its own file: a refused capture may leave the process's CUDA state unusable for what
follows, as it would a slot process (which the worker then replaces). CUDA only.
"""

from __future__ import annotations

import pytest
import torch

import engine.train as train
from engine.config import TrainConfig
from engine.datasets import TaskSplit
from engine.train import StepNotCapturable, Trainer

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.slow,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU here"),
]


def test_a_loss_that_needs_the_host_mid_step_is_refused_saying_why(monkeypatch):
    class AsksTheHost(torch.nn.Module):
        def forward(self, outputs: torch.Tensor, grades: torch.Tensor) -> torch.Tensor:
            loss = torch.nn.functional.cross_entropy(outputs, grades)
            if loss.item() > 1e9:  # a host synchronisation: no graph can capture it
                return loss * 0
            return loss

    monkeypatch.setattr(train, "make_loss", lambda *args: AsksTheHost())
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (40, 1, 32, 32), dtype=torch.uint8, generator=gen)
    y = torch.randint(0, 4, (40,), generator=gen)
    ids = [str(i) for i in range(40)]
    data = TaskSplit(x[:24], y[:24], x[24:32], y[24:32], x[32:], y[32:], ids[24:32], ids[32:], 4)
    config = TrainConfig(
        task="CPPD",
        method="cdw_ce",
        lr=1e-3,
        hparams={"alpha": 1.0},
        max_epochs=1,
        patience=1,
        batch_size=8,
        image_size=32,
        device="cuda",
        fast=True,
        seed=0,
    )
    trainer = Trainer(num_classes=4, device=torch.device("cuda"), fast=True)
    with pytest.raises(StepNotCapturable, match="cannot be captured as a CUDA graph"):
        trainer.fit(config, data.to(torch.device("cuda")))
