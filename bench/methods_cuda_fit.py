"""A whole run of every registered method on CUDA, as a slot runs it: `Trainer.fit` (train,
validate every epoch, restore the best epoch, predict validation and test films), one trainer
per head as `jobs.worker.slots.SlotState` keeps them.

    python bench/methods_cuda_fit.py [--epochs 3] [--size 224]

Checks, per method, that the fast path (CUDA graphs for target-matrix methods, the eager fast
path for the others) gives finite losses and test probabilities that are non-negative and sum
to one, and prints each run's wall time. Synthetic films: no store, no phantom, no detector.
"""

from __future__ import annotations

import argparse
import time

import torch

from engine.config import TrainConfig
from engine.datasets import TaskSplit
from engine.methods import registry
from engine.train import Trainer

TASK, CLASSES = "CPPD", 4


def split(n: int, size: int) -> TaskSplit:
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (n, 1, size, size), dtype=torch.uint8, generator=g)
    y = torch.randint(0, CLASSES, (n,), generator=g)
    a, b = int(n * 0.6), int(n * 0.8)
    val_ids = [str(i) for i in range(a, b)]
    test_ids = [str(i) for i in range(b, n)]
    return TaskSplit(x[:a], y[:a], x[a:b], y[a:b], x[b:], y[b:], val_ids, test_ids, CLASSES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--films", type=int, default=1000)
    args = parser.parse_args()
    device = torch.device("cuda")
    data = split(args.films, args.size).to(device)
    trainers: dict[str, Trainer] = {}
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("| method | head | epochs | wall s | test probs min | max row-sum error |")
    print("|---|---|---:|---:|---:|---:|")
    for method in registry().values():
        head = method.head
        if head not in trainers:
            trainers[head] = Trainer(num_classes=CLASSES, device=device, fast=True, head=head)
        params = method.search_grid()[0]
        config = TrainConfig(
            task=TASK,
            method=method.name,
            lr=params.lr,
            hparams={k: v for k, v in params.items() if k != "lr"},
            max_epochs=args.epochs,
            patience=args.epochs,
            image_size=args.size,
            device="cuda",
            fast=True,
        )
        t0 = time.perf_counter()
        result = trainers[head].fit(config, data)
        wall = time.perf_counter() - t0
        probs = torch.as_tensor(result.test_probs)
        error = float((probs.sum(1) - 1).abs().max())
        losses = [h.train_loss for h in result.history] + [h.val_loss for h in result.history]
        ok = all(torch.isfinite(torch.tensor(losses))) and float(probs.min()) >= 0 and error < 1e-4
        print(
            f"| {method.name} | {head} | {result.epochs_run} | {wall:.1f} | "
            f"{float(probs.min()):.2e} | {error:.1e} |{'' if ok else ' **FAILED**'}"
        )
        assert ok, method.name


if __name__ == "__main__":
    main()
