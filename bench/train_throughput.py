"""Training throughput on one GPU: (a) plain baseline, (b) SoftGrade's fast path for one
run, (c) SoftGrade's worker running many runs in long-lived slots (aggregate, start-up and
validation included). Prints a table; writes JSON to --out.

    python bench/train_throughput.py --out /tmp/throughput.json

Images/s counts training images stepped through (N_train × epochs) over wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

import torch
import torchvision
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.config import TrainConfig  # noqa: E402
from engine.data import TaskSplit  # noqa: E402
from engine.train import GREY_MEAN, GREY_STD, Trainer  # noqa: E402

N_TRAIN = 1519  # the paper's CPPD training set


def synthetic_split(n: int, size: int, classes: int = 4, seed: int = 0) -> TaskSplit:
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 256, (n, 1, size, size), dtype=torch.uint8, generator=g)
    y = torch.randint(0, classes, (n,), generator=g)
    nv = n * 3 // 7
    xv = torch.randint(0, 256, (nv, 1, size, size), dtype=torch.uint8, generator=g)
    yv = torch.randint(0, classes, (nv,), generator=g)
    ids = [str(i) for i in range(nv)]
    return TaskSplit(x, y, xv, yv, xv, yv, ids, ids, classes)


def plain_baseline(data: TaskSplit, epochs: int, batch: int) -> dict:
    """fp32, host DataLoader with 4 workers, eager, 3-channel torchvision ResNet18."""
    model = torchvision.models.resnet18(weights=None, num_classes=data.num_classes).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    loader = DataLoader(
        TensorDataset(data.x_train, data.y_train),
        batch_size=batch,
        shuffle=True,
        num_workers=4,
        pin_memory=True,
        persistent_workers=True,
    )

    def epoch() -> None:
        model.train()
        for xb, yb in loader:
            xb = xb.cuda(non_blocking=True).float().div_(255).sub_(GREY_MEAN).div_(GREY_STD)
            xb = xb.expand(-1, 3, -1, -1)
            loss = loss_fn(model(xb), yb.cuda(non_blocking=True))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    epoch()  # warm-up
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(epochs):
        epoch()
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    return {"images_per_s": len(data.y_train) * epochs / wall, "wall_s": wall}


def fast_single_run(data: TaskSplit, epochs: int, batch: int, variant: str) -> dict:
    """SoftGrade's Trainer: one run, timed after a warm-up epoch (compile excluded, reported)."""
    torch.cuda.reset_peak_memory_stats()
    t_build = time.perf_counter()
    trainer = Trainer(
        num_classes=data.num_classes,
        device=torch.device("cuda"),
        fast=True,
        compile_model="compile" in variant,
        cuda_graphs="graph" in variant,
    )
    warm = TrainConfig(
        task="CPPD",
        method="triangular",
        lr=1e-3,
        eta=0.8,
        alpha2=0.05,
        max_epochs=1,
        patience=1,
        batch_size=batch,
        device="cuda",
    )
    trainer.fit(warm, data)
    torch.cuda.synchronize()
    warmup_s = time.perf_counter() - t_build
    cfg = TrainConfig(
        task="CPPD",
        method="triangular",
        lr=1e-3,
        eta=0.8,
        alpha2=0.05,
        max_epochs=epochs,
        patience=epochs,
        batch_size=batch,
        device="cuda",
    )
    t0 = time.perf_counter()
    result = trainer.fit(cfg, data)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    steps = (len(data.y_train) // batch) * batch
    # Training steps alone (no validation pass, no per-epoch metrics), as the table.
    train_only = None
    if trainer.graphs is not None:
        gen = torch.Generator().manual_seed(0)
        t1 = time.perf_counter()
        for _ in range(epochs):
            trainer._train_epoch(None, trainer.graphs.optimizer, data, cfg, gen)
        torch.cuda.synchronize()
        train_only = steps * epochs / (time.perf_counter() - t1)
    return {
        "images_per_s": steps * epochs / wall,
        "train_only_images_per_s": train_only,
        "wall_s": wall,
        "warmup_and_compile_s": warmup_s,
        "per_epoch_s": wall / epochs,
        "epochs": result.epochs_run,
        "peak_gpu_mib": torch.cuda.max_memory_allocated() / 2**20,
        "reset_ms": _time_reset(trainer),
    }


def _time_reset(trainer: Trainer) -> float:
    t0 = time.perf_counter()
    for _ in range(5):
        trainer.reset(1)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / 5 * 1000


def worker_many_runs(
    slots: int, runs_per_slot: int, epochs: int, size: int, home: Path, device: str, n_images: int
) -> dict:
    """The real worker: a phantom study of many runs over K long-lived slot processes."""
    from engine.config import StudySpec
    from engine.data import prepare_dataset
    from jobs.executors import LocalExecutor, plan_slots
    from jobs.runner import Worker, WorkerOptions
    from store import jobs as store_jobs
    from store import runs as store_runs
    from store.db import init_schema

    n_runs = slots * runs_per_slot
    # 5 methods x seeds, budget 1 each: CPPD on the default phantom (N_train ~ 1,060).
    seeds = max(1, -(-n_runs // 5))
    raw = {
        "name": f"bench-{slots}",
        "dataset": {"kind": "phantom", "n_images": n_images, "n_joint": n_images * 970 // 2170},
        "tasks": ["CPPD"],
        "methods": ["nominal", "binomial", "beta", "triangular", "exponential"],
        "seeds": seeds,
        "budget": 1,
        "max_epochs": epochs,
        "patience": epochs,
        "image_size": size,
        "batch_size": 128,
        "device": device,
    }
    spec = StudySpec.from_dict(raw)
    t_data = time.perf_counter()
    prepared = prepare_dataset(spec.dataset, size, home / "cache")
    data_s = time.perf_counter() - t_data
    store = home / f"bench-{slots}.duckdb"
    init_schema(store)
    job_id = store_jobs.enqueue_job(spec.to_dict(), path=store)
    t0 = time.perf_counter()
    worker = Worker(
        LocalExecutor(plan_slots(device, slots)),
        store_path=store,
        home=home,
        options=WorkerOptions(beat_s=5, progress_every_s=2),
    )
    worker.run_once()
    wall = time.perf_counter() - t0
    worker.close()
    job = store_jobs.get_job(job_id, path=store)
    runs = store_runs.list_runs([job.study_id], path=store)
    meta = prepared.meta
    from engine.data import make_splits, task_split

    n_train = {
        s: len(task_split(prepared, make_splits(meta, s), "CPPD").y_train) for s in spec.seeds
    }
    images = sum((n_train[r.seed] // 128) * 128 * r.epochs_run for r in runs.itertuples())
    return {
        "slots": slots,
        "runs": len(runs),
        "status": str(job.status),
        "wall_s": wall,
        "images_per_s": images / wall,
        "per_run_wall_s": wall * slots / max(len(runs), 1),
        "mean_run_duration_s": float(runs.duration_s.mean()),
        "dataset_prepare_s": data_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--modes", default="eager,graph,graph+compile")
    parser.add_argument("--slots", default="1,2,4")
    parser.add_argument("--runs-per-slot", type=int, default=4)
    parser.add_argument("--worker-epochs", type=int, default=30)
    parser.add_argument("--skip", default="")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--n-images", type=int, default=2170)
    parser.add_argument("--out", default="throughput.json")
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    out: dict = {
        "card": torch.cuda.get_device_name(0)
        if torch.cuda.is_available()
        else platform.processor(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d"),
        "size": args.size,
        "batch": args.batch,
    }
    data = synthetic_split(N_TRAIN, args.size).to(args.device)
    if "a" not in args.skip:
        out["a_plain"] = plain_baseline(
            synthetic_split(N_TRAIN, args.size), args.epochs, args.batch
        )
        print("a", out["a_plain"], flush=True)
    out["b_fast"] = {}
    if "b" not in args.skip:
        for mode in args.modes.split(","):
            out["b_fast"][mode] = fast_single_run(data, args.epochs, args.batch, mode)
            print("b", mode, out["b_fast"][mode], flush=True)
    out["c_worker"] = []
    if "c" not in args.skip:
        home = Path(tempfile.mkdtemp(prefix="sg-bench-"))
        for k in [int(s) for s in args.slots.split(",")]:
            res = worker_many_runs(
                k,
                args.runs_per_slot,
                args.worker_epochs,
                args.size,
                home,
                args.device,
                args.n_images,
            )
            out["c_worker"].append(res)
            print("c", res, flush=True)
    out["host_max_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    Path(args.out).write_text(json.dumps(out, indent=2))
    base = out.get("a_plain", {}).get("images_per_s")
    print(f"\n{'variant':<40}{'images/s':>12}{'x plain':>10}")
    rows = [("a plain fp32 + DataLoader", base)]
    rows += [(f"b fast ({m})", r["images_per_s"]) for m, r in out["b_fast"].items()]
    rows += [
        (f"c worker {r['slots']} slot(s), {r['runs']} runs", r["images_per_s"])
        for r in out["c_worker"]
    ]
    for name, ips in rows:
        ratio = f"{ips / base:.2f}" if base and ips else "-"
        print(f"{name:<40}{ips or 0:>12.0f}{ratio:>10}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
