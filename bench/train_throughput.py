"""Training throughput on one GPU: (a) plain baseline, (b) SoftGrade's fast path for one
run, and K runs side by side as lanes (threads with a CUDA stream each) of one process,
(c) SoftGrade's worker running many runs in long-lived slots (aggregate, start-up and
validation included). Prints a table; writes JSON to --out.

    python bench/train_throughput.py --out /tmp/throughput.json

Images/s counts training images stepped through (N_train × epochs) over wall time: every
film, every epoch, on every path (the tail batch included). ``--skip`` letters: a, b, l, c,
and t for the tail-batch A/B (the cost of training on the last partial batch).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import statistics
import tempfile
import threading
import time
from pathlib import Path

import torch
import torchvision
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset
from torchvision.transforms import v2

from engine.config import TrainConfig
from engine.datasets import TaskSplit
from engine.train import (
    GREY_MEAN,
    GREY_STD,
    INDUCTOR_OPTIONS,
    FastPathOptions,
    Trainer,
    epoch_batches,
)

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


class HostTransformed(Dataset):
    """The usual recipe: each grey film made RGB, scaled, normalised and flipped on the host."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.x, self.y = x, y
        self.transform = v2.Compose(
            [
                v2.ToDtype(torch.float32, scale=True),
                v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
                v2.RandomHorizontalFlip(),
            ]
        )

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.transform(self.x[i].expand(3, -1, -1)), self.y[i]


def plain_baseline(data: TaskSplit, epochs: int, batch: int, *, feed: str) -> dict:
    """fp32, host DataLoader with 4 workers, eager, 3-channel torchvision ResNet18.

    ``feed`` is what the loader hands over:
    - 'float32': RGB float32 tensors normalised once up front;
    - 'grey32': grey float32 tensors normalised once up front, made RGB on the GPU;
    - 'transform': uint8 films made RGB, scaled, normalised and flipped per sample by the
      loader's workers (torchvision transforms, as many training scripts do);
    - 'uint8': uint8 batches, normalised on the GPU (the issue's "data on GPU as uint8" row).
    """
    model = torchvision.models.resnet18(weights=None, num_classes=data.num_classes).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    if feed == "float32":
        rgb = ((data.x_train.float() / 255 - GREY_MEAN) / GREY_STD).expand(-1, 3, -1, -1)
        dataset: Dataset = TensorDataset(rgb.contiguous(), data.y_train)
    elif feed == "grey32":
        grey = (data.x_train.float() / 255 - GREY_MEAN) / GREY_STD
        dataset = TensorDataset(grey, data.y_train)
    elif feed == "transform":
        dataset = HostTransformed(data.x_train, data.y_train)
    else:
        dataset = TensorDataset(data.x_train, data.y_train)
    host_float = feed != "uint8"
    loader = DataLoader(
        dataset,
        batch_size=batch,
        shuffle=True,
        num_workers=4,
        pin_memory=True,
        persistent_workers=True,
    )

    def epoch() -> None:
        model.train()
        for xb, yb in loader:
            xb = xb.cuda(non_blocking=True)
            if not host_float:
                xb = xb.float().div_(255).sub_(GREY_MEAN).div_(GREY_STD)
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


def bench_config(epochs: int, batch: int, seed: int = 0) -> TrainConfig:
    """A triangular-target CPPD run that never stops early (patience = epochs)."""
    return TrainConfig(
        task="CPPD",
        method="triangular",
        lr=1e-3,
        hparams={"eta": 0.8, "alpha2": 0.05},
        max_epochs=epochs,
        patience=epochs,
        batch_size=batch,
        device="cuda",
        seed=seed,
    )


def fast_single_run(data: TaskSplit, epochs: int, batch: int, variant: str) -> dict:
    """SoftGrade's Trainer: one run, timed after a warm-up epoch (compile excluded, reported).

    ``variant`` names what is on: ``graph`` (CUDA graphs), ``compile`` (torch.compile), and
    ``plaininductor`` compiles without `engine.train.INDUCTOR_OPTIONS` (for an A/B of them).
    """
    torch.cuda.reset_peak_memory_stats()
    t_build = time.perf_counter()
    options = FastPathOptions(
        compile_model="compile" in variant,
        cuda_graphs="graph" in variant,
        inductor_options={} if "plaininductor" in variant else dict(INDUCTOR_OPTIONS),
    )
    trainer = Trainer(
        num_classes=data.num_classes, device=torch.device("cuda"), fast=True, options=options
    )
    trainer.fit(bench_config(1, batch), data)
    torch.cuda.synchronize()
    warmup_s = time.perf_counter() - t_build
    cfg = bench_config(epochs, batch)
    t0 = time.perf_counter()
    result = trainer.fit(cfg, data)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    steps = len(data.y_train)  # every film, every epoch
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


def fast_lanes(
    data: TaskSplit, lanes: int, runs: int, epochs: int, batch: int, compile_mode: str = "default"
) -> dict:
    """K trainers in K threads of this process, a CUDA stream each (a slot process's lanes),
    each fitting ``runs`` whole runs (validation every epoch); aggregate images/s.

    Timed from the moment every lane has compiled and captured (one warm-up run each, also
    reported), so it shows what lanes add over one run, not start-up.
    """
    torch.cuda.reset_peak_memory_stats()
    ready = threading.Barrier(lanes + 1)
    errors: list[BaseException] = []

    def lane(k: int) -> None:
        try:
            with torch.cuda.stream(torch.cuda.Stream()):
                trainer = Trainer(
                    num_classes=data.num_classes,
                    device=torch.device("cuda"),
                    fast=True,
                    options=FastPathOptions(compile_mode=compile_mode),
                )
                trainer.fit(bench_config(1, batch), data)
                torch.cuda.current_stream().synchronize()
                ready.wait()
                for r in range(runs):
                    trainer.fit(bench_config(epochs, batch, seed=k * runs + r), data)
                torch.cuda.current_stream().synchronize()
        except BaseException as exc:  # re-raised by the main thread
            errors.append(exc)
            ready.abort()

    t_start = time.perf_counter()
    threads = [threading.Thread(target=lane, args=(k,)) for k in range(lanes)]
    for thread in threads:
        thread.start()
    with contextlib.suppress(threading.BrokenBarrierError):  # a lane failed: raised below
        ready.wait()
    t0 = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - t0
    if errors:
        raise errors[0]
    images = len(data.y_train) * epochs * runs * lanes
    return {
        "lanes": lanes,
        "compile_mode": compile_mode,
        "runs": runs * lanes,
        "images_per_s": images / wall,
        "wall_s": wall,
        "warmup_and_compile_s": t0 - t_start,
        "per_run_wall_s": wall / runs,
        "peak_gpu_mib": torch.cuda.max_memory_allocated() / 2**20,
    }


def profile_steps(data: TaskSplit, batch: int, steps: int = 10) -> str:
    """Where a compiled training step spends GPU time: the top kernels of ``steps`` steps
    (eager replay of the compiled step; a CUDA graph runs the same kernels)."""
    from torch.profiler import ProfilerActivity, profile

    trainer = Trainer(
        num_classes=data.num_classes,
        device=torch.device("cuda"),
        fast=True,
        options=FastPathOptions(cuda_graphs=False),
    )
    trainer.fit(bench_config(1, batch), data)
    cfg = bench_config(1, batch)
    gen = torch.Generator().manual_seed(0)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(trainer.model.parameters(), lr=1e-3, fused=True)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(max(1, steps * batch // len(data.y_train))):
            trainer._train_epoch(criterion, optimizer, data, cfg, gen)
        torch.cuda.synchronize()
    return prof.key_averages().table(sort_by="cuda_time_total", row_limit=25)


def _time_reset(trainer: Trainer) -> float:
    t0 = time.perf_counter()
    for _ in range(5):
        trainer.reset(1)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / 5 * 1000


def worker_many_runs(
    slots: int,
    processes: int,
    runs_per_slot: int,
    epochs: int,
    size: int,
    home: Path,
    device: str,
    n_images: int,
) -> dict:
    """The real worker: a phantom study of many runs over K slots in P long-lived processes.

    Wall time runs from the worker's start (slot processes spawned, compiled, captured) to the
    job's end. "Steady" leaves out the first K runs to finish, which carry that start-up.
    """
    from engine.config import StudySpec
    from engine.datasets import prepare_dataset
    from jobs.worker.executors import LocalExecutor, plan_slots
    from jobs.worker.runner import Worker, WorkerOptions
    from store import jobs as store_jobs
    from store import runs as store_runs
    from store.db import init_schema

    n_runs = slots * runs_per_slot
    # 5 methods x seeds, budget 1 each: CPPD on the default phantom (N_train ~ 1,060).
    seeds = max(1, -(-n_runs // 5))
    raw = {
        "name": f"bench-{slots}-{processes}",
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
    store = home / f"bench-{slots}-{processes}.duckdb"
    init_schema(store)
    job_id = store_jobs.enqueue_job(spec.to_dict(), path=store)
    t0 = time.perf_counter()
    worker = Worker(
        LocalExecutor(plan_slots(device, slots, processes_per_gpu=processes)),
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
    from engine.datasets import make_splits, task_split

    n_train = {
        s: len(task_split(prepared, make_splits(meta, s), "CPPD").y_train) for s in spec.seeds
    }
    runs["images"] = [n_train[r.seed] * r.epochs_run for r in runs.itertuples()]
    images = int(runs["images"].sum())
    ended = runs.sort_values("created_at")
    later = ended.iloc[slots:]
    span = (ended.created_at.iloc[-1] - ended.created_at.iloc[slots - 1]).total_seconds()
    return {
        "slots": slots,
        "processes": min(processes, slots),
        "runs": len(runs),
        "steady_images_per_s": float(later["images"].sum()) / span if span > 0 else None,
        "status": str(job.status),
        "wall_s": wall,
        "images_per_s": images / wall,
        "per_run_wall_s": wall * slots / max(len(runs), 1),
        "mean_run_duration_s": float(runs.duration_s.mean()),
        "dataset_prepare_s": data_s,
    }


def tail_cost(size: int, batch: int, epochs: int, pairs: list[tuple[int, int]]) -> list[dict]:
    """What training on the tail batch costs: training steps of one trainer (the fast path, as
    shipped) over a set of whole batches only and over the same plus a tail, interleaved
    A, B, A, B, ... for ``epochs`` epochs each after a warm-up epoch (the tail graph's
    capture is in the warm-up). Each pair is (films in whole batches, films with the tail).
    """
    trainer = Trainer(num_classes=4, device=torch.device("cuda"), fast=True)
    trainer.fit(bench_config(1, batch), synthetic_split(pairs[0][0], size, classes=4))
    gen = torch.Generator().manual_seed(0)
    rows = []
    for full, with_tail in pairs:
        sets = {
            n: synthetic_split(n, size, classes=4, seed=n).to("cuda") for n in (full, with_tail)
        }
        cfg = bench_config(1, batch)
        trainer.graphs.reset(1e-3, torch.eye(4, device="cuda"))
        times: dict[int, list[float]] = {n: [] for n in sets}
        for data in sets.values():  # warm-up: captures the tail graph of this size
            trainer._train_epoch(None, trainer.graphs.optimizer, data, cfg, gen)
        for _ in range(epochs):
            for n, data in sets.items():
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                trainer._train_epoch(None, trainer.graphs.optimizer, data, cfg, gen)
                torch.cuda.synchronize()
                times[n].append(time.perf_counter() - t0)
        a, b = (statistics.median(times[n]) * 1000 for n in (full, with_tail))
        rows.append(
            {
                "films_whole_batches": full,
                "films_with_tail": with_tail,
                "batches": [stop - start for start, stop in epoch_batches(with_tail, batch)],
                "epoch_ms_whole_batches": a,
                "epoch_ms_with_tail": b,
                "tail_ms": b - a,
                "tail_share_of_epoch": (b - a) / b,
                "images_per_s_whole_batches": full / a * 1000,
                "images_per_s_with_tail": with_tail / b * 1000,
                "tail_images_per_s": (with_tail - full) / (b - a) * 1000,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--modes", default="eager,graph,graph+compile")
    parser.add_argument("--lanes", default="2,4", help="(b) K runs side by side in one process")
    parser.add_argument("--lane-runs", type=int, default=2, help="(b) runs per lane")
    parser.add_argument("--lane-epochs", type=int, default=30)
    parser.add_argument("--lane-modes", default="default", help="(b) torch.compile modes")
    parser.add_argument(
        "--workers", default="1/1,4/1", help="(c) slots/processes on the GPU, comma-separated"
    )
    parser.add_argument("--runs-per-slot", type=int, default=4)
    parser.add_argument("--worker-epochs", type=int, default=30)
    parser.add_argument(
        "--tail-pairs",
        default="384/476,1024/1070",
        help="(t) films in whole batches / with a tail: the phantom's KL and CPPD sets",
    )
    parser.add_argument(
        "--tail-epochs", type=int, default=30, help="(t) epochs of each, interleaved"
    )
    parser.add_argument("--profile", action="store_true", help="print the top GPU kernels")
    parser.add_argument("--skip", default="", help="letters of parts to skip: a, b, l, c, t")
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
    rows: list[tuple[str, float | None]] = []
    if "a" not in args.skip:
        host = synthetic_split(N_TRAIN, args.size)
        for key, feed, name in (
            ("a_plain", "float32", "(a) plain: float32 RGB tensors, DataLoader"),
            ("a_grey", "grey32", "(a) with grey float32, made RGB on the GPU"),
            ("a_transform", "transform", "(a) with per-sample host transforms"),
            ("a_uint8", "uint8", "(a2) uint8 batches, normalised on the GPU"),
        ):
            out[key] = plain_baseline(host, args.epochs, args.batch, feed=feed)
            print(key, out[key], flush=True)
            rows.append((name, out[key]["images_per_s"]))
    out["b_fast"] = {}
    if "b" not in args.skip:
        for mode in args.modes.split(","):
            res = fast_single_run(data, args.epochs, args.batch, mode)
            out["b_fast"][mode] = res
            print("b", mode, res, flush=True)
            rows.append((f"(b) one run, {mode}, whole run", res["images_per_s"]))
            if res["train_only_images_per_s"]:
                rows.append((f"(b) one run, {mode}, steps only", res["train_only_images_per_s"]))
    out["b_lanes"] = []
    if "l" not in args.skip:
        for mode in args.lane_modes.split(","):
            for k in [int(v) for v in args.lanes.split(",") if v]:
                res = fast_lanes(data, k, args.lane_runs, args.lane_epochs, args.batch, mode)
                out["b_lanes"].append(res)
                print("lanes", res, flush=True)
                rows.append((f"(b) {k} runs as lanes of one process, {mode}", res["images_per_s"]))
    out["c_worker"] = []
    if "c" not in args.skip:
        home = Path(tempfile.mkdtemp(prefix="sg-bench-"))
        for item in [v for v in args.workers.split(",") if v]:
            slots, procs = (int(v) for v in item.split("/"))
            res = worker_many_runs(
                slots,
                procs,
                args.runs_per_slot,
                args.worker_epochs,
                args.size,
                home,
                args.device,
                args.n_images,
            )
            out["c_worker"].append(res)
            print("c", res, flush=True)
            name = f"(c) worker {slots} slots / {procs} proc, {res['runs']} runs"
            rows.append((name + ", all", res["images_per_s"]))
            rows.append((name + ", steady", res["steady_images_per_s"]))
    out["tail"] = []
    if "t" not in args.skip:
        pairs = [tuple(int(v) for v in item.split("/")) for item in args.tail_pairs.split(",")]
        out["tail"] = tail_cost(args.size, args.batch, args.tail_epochs, pairs)
        for res in out["tail"]:
            print("tail", res, flush=True)
            name = f"(t) {res['films_with_tail']} films ({res['batches']})"
            rows.append((name, res["images_per_s_with_tail"]))
            rows.append(
                (
                    f"(t) {res['films_whole_batches']} films, whole batches only",
                    res["images_per_s_whole_batches"],
                )
            )
    if args.profile:
        out["profile"] = profile_steps(data, args.batch)
        print(out["profile"], flush=True)
    out["host_max_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    Path(args.out).write_text(json.dumps(out, indent=2))
    base = out.get("a_plain", {}).get("images_per_s")
    alt = out.get("a_uint8", {}).get("images_per_s")
    print(f"\n{'variant':<52}{'images/s':>10}{'x (a)':>8}{'x (a2)':>8}")
    for name, ips in rows:
        ratio = f"{ips / base:.2f}" if base and ips else "-"
        ratio2 = f"{ips / alt:.2f}" if alt and ips else "-"
        print(f"{name:<52}{ips or 0:>10.0f}{ratio:>8}{ratio2:>8}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
