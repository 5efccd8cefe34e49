"""Training images/s of every registered method on the fast path, as the worker trains them.

    python bench/methods_throughput.py            # one CUDA GPU: 224 px, batch 128
    python bench/methods_throughput.py --tiny     # a CPU smoke run: 32 px, batch 8

Every method replays captured CUDA graphs of whole training steps (forward, its loss,
backward, fused Adam): the target-distribution methods share one graph, each other loss gets
its own (issue 37). One `Trainer` per head, as a slot keeps them
(`jobs.worker.slots.SlotState`), so each head's compile and each loss's capture happen in its
first method's warm-up, and are not timed.

Each method: ``--warmup`` training steps, then ``--steps`` timed steps over full batches of
synthetic films (training steps only: no validation pass). Prints a markdown table: method,
family, path, images/s and the ratio to the first method in the registry (nominal, on the
graphs); ``--out`` also writes the rows as JSON. No store, no detector: it needs neither
duckdb nor ultralytics.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from engine.config import TrainConfig
from engine.datasets import TaskSplit
from engine.methods import method_names, registry
from engine.train import Trainer

TASK = "CPPD"  # four grades, as the paper's CPPD runs
CLASSES = 4


def synthetic_split(n_train: int, size: int, seed: int = 0) -> TaskSplit:
    """Random grey films and grades; ``n_train`` training films, a token val/test split."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 256, (n_train, 1, size, size), dtype=torch.uint8, generator=g)
    y = torch.randint(0, CLASSES, (n_train,), generator=g)
    ids = [str(i) for i in range(4)]
    return TaskSplit(x, y, x[:4], y[:4], x[:4], y[:4], ids, ids, CLASSES)


def bench_config(method: str, size: int, batch: int, device: str) -> TrainConfig:
    """The method's first search configuration (its smallest learning rate), one epoch."""
    params = registry()[method].search_grid()[0]
    return TrainConfig(
        task=TASK,
        method=method,
        lr=params.lr,
        hparams={k: v for k, v in params.items() if k != "lr"},
        max_epochs=1,
        patience=1,
        batch_size=batch,
        image_size=size,
        device=device,
        fast=True,
    )


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_method(
    trainer: Trainer,
    method: str,
    *,
    warmup: TaskSplit,
    timed: TaskSplit,
    size: int,
    batch: int,
) -> dict:
    """Warm-up steps (compile, capture, cuDNN's choice), then timed steps; images/s."""
    device = trainer.device
    config = bench_config(method, size, batch, str(device))
    criterion, optimizer = trainer._begin_run(config)
    generator = torch.Generator().manual_seed(0)
    t0 = time.perf_counter()
    trainer._train_epoch(criterion, optimizer, warmup, config, generator)
    _sync(device)
    warmup_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    loss = trainer._train_epoch(criterion, optimizer, timed, config, generator)
    _sync(device)
    wall = time.perf_counter() - t0
    spec = registry()[method]
    return {
        "method": method,
        "family": spec.family,
        "head": spec.head,
        "path": _path_name(trainer),
        "images_per_s": len(timed.y_train) / wall,
        "timed_s": wall,
        "warmup_s": warmup_s,
        "loss": loss,
    }


def _path_name(trainer: Trainer) -> str:
    if trainer.graphs is not None:
        return "CUDA graphs"
    return f"{trainer.device.type} fast path (bf16)"


def markdown(rows: list[dict]) -> str:
    """The table, with each method's images/s relative to the first row's."""
    nominal = rows[0]["images_per_s"]
    lines = [
        f"| method | family | path | images/s | × {rows[0]['method']} |",
        "|---|---|---|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['method']} | {r['family']} | {r['path']} | {r['images_per_s']:,.0f} "
            f"| {r['images_per_s'] / nominal:.2f} |"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> list[dict]:
    device = torch.device(args.device)
    methods = args.methods.split(",") if args.methods else list(method_names())
    warmup = synthetic_split(args.batch * args.warmup, args.size, seed=1).to(device)
    timed = synthetic_split(args.batch * args.steps, args.size, seed=2).to(device)
    trainers: dict[str, Trainer] = {}
    rows = []
    for method in methods:
        head = registry()[method].head
        if head not in trainers:  # one per head, as a slot keeps them
            trainers[head] = Trainer(num_classes=CLASSES, device=device, fast=True, head=head)
        row = time_method(
            trainers[head], method, warmup=warmup, timed=timed, size=args.size, batch=args.batch
        )
        rows.append(row)
        print(
            f"{method:>16}  {row['path']:<24} {row['images_per_s']:>9,.0f} images/s "
            f"(warm-up {row['warmup_s']:.1f} s)",
            flush=True,
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="CPU smoke run: 32 px, batch 8")
    parser.add_argument("--size", type=int, default=None, help="film side (default 224)")
    parser.add_argument("--batch", type=int, default=None, help="batch size (default 128)")
    parser.add_argument("--warmup", type=int, default=None, help="warm-up steps (default 3)")
    parser.add_argument("--steps", type=int, default=None, help="timed steps (default 20)")
    parser.add_argument("--methods", default="", help="comma-separated (default: all)")
    parser.add_argument("--out", default=None, help="also write the rows as JSON here")
    args = parser.parse_args()
    tiny = {"size": 32, "batch": 8, "warmup": 1, "steps": 2, "device": "cpu"}
    paper = {"size": 224, "batch": 128, "warmup": 3, "steps": 20, "device": "cuda"}
    for key, value in (tiny if args.tiny else paper).items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("no CUDA GPU here; --tiny runs a CPU smoke test")
    started = time.perf_counter()
    rows = run(args)
    device = torch.cuda.get_device_name() if args.device == "cuda" else platform.processor()
    print(
        f"\n{args.size} px, batch {args.batch}, {args.steps} timed steps per method after "
        f"{args.warmup} warm-up steps, on {device or args.device}; "
        f"{time.perf_counter() - started:.0f} s in all\n"
    )
    print(markdown(rows))
    if args.out:
        Path(args.out).write_text(json.dumps({"settings": vars(args), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
