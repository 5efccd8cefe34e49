"""Time the search explorer's, learning curves' and probability metrics' reads + transforms.

Usage:
    .venv/bin/python bench/explorer_bench.py                  # build the store once, measure
    .venv/bin/python bench/explorer_bench.py --rebuild        # rebuild it first
    .venv/bin/python bench/explorer_bench.py --home DIR       # keep the store in DIR

The store is synthetic and shaped like the paper's experiment (as ``bench/pages_bench.py``
fakes one): one study of 20 seeds × {KL, CPPD} × 5 methods with budget 15, i.e. per seed
and task 3 + 6 + 6 + 15 + 15 runs drawn from the real Table 3 grids
(`engine.soft_labels.search_grid`): 1,800 runs. Each run has an early-stopped curve
(best epoch uniform in 30..100, patience 40, at most 100 epochs: ~94 epochs a run,
~170,000 epoch rows) and softmax-like probabilities for its validation and test films
(970 jointly graded + 1,200 CPPD-only images per seed split 49/21/30: ~1.6 M prediction
rows). Runs, epochs and predictions are bulk-inserted with SQL.

Each step is timed in this process: once cold (first call after the imports, empty OS
caches aside) and then 5 times warm (median and max). "Warm" is what a page pays on a
rerun whose store read has expired from ``st.cache_data`` (the pages cache reads for 10 s).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.methods import paper_methods, search_grid
from engine.vocab import TASK_CLASSES, run_id
from store import jobs as store_jobs
from store.db import connect, init_schema

METHODS = paper_methods()

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_HOME = Path("/tmp/softgrade_explorer_bench")
SEEDS, BUDGET, MAX_EPOCHS, PATIENCE = 20, 15, 100, 40
N_JOINT, N_CPPD_ONLY = 970, 1200


def _split(rng: np.random.Generator, n: int) -> np.ndarray:
    u = rng.random(n)
    return np.where(u < 0.30, "test", np.where(u < 0.51, "val", "train"))


def seed_films(seed: int) -> dict[str, pd.DataFrame]:
    """Validation and test films of one seed per task, with recorded grades."""
    rng = np.random.default_rng(1000 + seed)
    joint = pd.DataFrame(
        {
            "image_id": [f"j{i:04d}" for i in range(N_JOINT)],
            "split": _split(rng, N_JOINT),
            "KL": rng.choice(5, N_JOINT, p=[0.15, 0.3, 0.21, 0.2, 0.14]),
            "CPPD": rng.choice(4, N_JOINT, p=[0.5, 0.18, 0.15, 0.17]),
        }
    )
    only = pd.DataFrame(
        {
            "image_id": [f"c{i:04d}" for i in range(N_CPPD_ONLY)],
            "split": _split(rng, N_CPPD_ONLY),
            "CPPD": rng.choice(4, N_CPPD_ONLY, p=[0.40, 0.16, 0.21, 0.23]),
        }
    )
    kl = joint.loc[joint["split"] != "train", ["image_id", "split", "KL"]]
    cppd = pd.concat([joint[["image_id", "split", "CPPD"]], only])
    cppd = cppd[cppd["split"] != "train"]
    return {
        "KL": kl.rename(columns={"KL": "y_true"}).reset_index(drop=True),
        "CPPD": cppd.rename(columns={"CPPD": "y_true"}).reset_index(drop=True),
    }


def build_store(home: Path) -> Path:
    """Write the paper-scale study into ``home/softgrade.duckdb`` (replacing it)."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "softgrade.duckdb"
    for stale in (path, path.with_suffix(".duckdb.wal")):
        stale.unlink(missing_ok=True)
    init_schema(path)
    t0 = time.perf_counter()
    spec = {"name": "paper", "tasks": ["KL", "CPPD"], "methods": list(METHODS)}
    job_id = store_jobs.enqueue_job(
        {**spec, "seeds": list(range(SEEDS)), "budget": BUDGET}, path=path
    )
    job = store_jobs.claim_next_job("bench-worker", path=path)
    assert job is not None and job.job_id == job_id
    rng = np.random.default_rng(0)
    runs, epochs, preds = [], [], []
    for seed in range(SEEDS):
        films = seed_films(seed)
        for task in ("KL", "CPPD"):
            for method in METHODS:
                grid = search_grid(method)
                picks = rng.choice(len(grid), size=min(BUDGET, len(grid)), replace=False)
                for index, pick in enumerate(picks):
                    rid = run_id(job.study_id, task, method, seed, index)
                    best = int(rng.integers(30, MAX_EPOCHS + 1))
                    n_epochs = min(MAX_EPOCHS, best + PATIENCE)
                    val_amae = float(rng.uniform(0.3, 0.9))
                    config = {"task": task, "method": method, "seed": seed}
                    config.update({"eta": None, "alpha2": None, "p": None})
                    config.update(grid[pick].as_dict())
                    runs.append(
                        {
                            "run_id": rid,
                            "study_id": job.study_id,
                            "job_id": job_id,
                            "task": task,
                            "method": method,
                            "seed": seed,
                            "config_index": index,
                            "config": json.dumps(config),
                            "best_epoch": best,
                            "epochs_run": n_epochs,
                            "val_amae": val_amae,
                            "duration_s": float(rng.uniform(5, 12)),
                        }
                    )
                    epoch = np.arange(1, n_epochs + 1)
                    epochs.append(
                        pd.DataFrame(
                            {
                                "run_id": rid,
                                "epoch": epoch,
                                "train_loss": 1.6 * np.exp(-epoch / 30) + 0.1,
                                "val_loss": 1.2 + 0.002 * (epoch - best) ** 2 / 40,
                                "val_amae": val_amae + 0.3 * np.exp(-epoch / 20),
                                "duration_s": 0.09,
                            }
                        )
                    )
                    frame = films[task]
                    y_true = frame["y_true"].to_numpy()
                    near = np.clip(
                        y_true + rng.integers(-1, 2, y_true.size), 0, TASK_CLASSES[task] - 1
                    )
                    preds.append(
                        pd.DataFrame(
                            {
                                "run_id": rid,
                                "image_id": frame["image_id"].to_numpy(),
                                "split": frame["split"].to_numpy(),
                                "y_true": y_true.astype(np.int8),
                                "centre": near.astype(np.int8),
                                "sharpness": rng.uniform(0.3, 3.0, y_true.size),
                                "n_grades": TASK_CLASSES[task],
                            }
                        )
                    )
    run_frame, epoch_frame = pd.DataFrame(runs), pd.concat(epochs, ignore_index=True)
    pred_frame = pd.concat(preds, ignore_index=True)
    with connect(path) as con:
        con.register("bench_runs", run_frame)
        con.execute(
            "INSERT INTO runs (run_id, study_id, job_id, task, method, seed, config_index, config, "
            "status, best_epoch, epochs_run, val_amae, device, duration_s, weights_init) "
            "SELECT run_id, study_id, job_id, task, method, seed, config_index, config, "
            "'succeeded', best_epoch, epochs_run, val_amae, 'cuda', duration_s, 'random' "
            "FROM bench_runs"
        )
        con.register("bench_epochs", epoch_frame)
        con.execute("INSERT INTO epoch_metrics SELECT * FROM bench_epochs")
        con.register("bench_preds", pred_frame)
        # Probabilities decaying with the distance to a grade near the truth; argmax = centre.
        con.execute(
            """
            INSERT INTO predictions
            SELECT run_id, image_id, split, y_true, centre,
                   list_transform(w, lambda x: x / list_sum(w))::FLOAT[]
            FROM (SELECT *, list_transform(range(n_grades),
                                           lambda g: exp(-abs(g - centre) * sharpness)) AS w
                  FROM bench_preds)
            """
        )
        # Selection as store.runs.select_best_runs does it.
        con.execute(
            """
            UPDATE runs SET selected = (r.rank = 1)
            FROM (SELECT run_id, row_number() OVER (
                      PARTITION BY task, method, seed ORDER BY val_amae, config_index) AS rank
                  FROM runs) r
            WHERE runs.run_id = r.run_id
            """
        )
    store_jobs.finish_job(job_id, store_jobs.JobStatus.SUCCEEDED, path=path)
    print(
        f"store: {len(run_frame):,} runs, {len(epoch_frame):,} epoch rows, "
        f"{len(pred_frame):,} prediction rows in {time.perf_counter() - t0:.0f} s"
    )
    return path


def timed(fn: Callable[[], Any], repeats: int = 5) -> tuple[float, float, float, float]:
    """(cold wall, warm wall median, warm wall max, warm CPU median) seconds of ``fn``.

    CPU time (all threads of this process, DuckDB's included) is what the step costs
    whatever else the machine runs; wall time is what a reader waits on this machine now.
    """
    t = time.perf_counter()
    fn()
    cold = time.perf_counter() - t
    wall, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return cold, statistics.median(wall), max(wall), statistics.median(cpu)


def machine_info() -> str:
    versions = []
    for pkg in ("duckdb", "pandas", "numpy", "scipy", "scikit-posthocs"):
        try:
            versions.append(f"{pkg} {importlib.metadata.version(pkg)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    cpu = platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}, " + ", ".join(
        versions
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME)
    parser.add_argument("--rebuild", action="store_true", help="rebuild the store even if present")
    args = parser.parse_args()
    path = args.home / "softgrade.duckdb"
    if args.rebuild or not path.exists():
        build_store(args.home)

    t = time.perf_counter()
    from engine.analysis import compare, explorer, ranking
    from engine.analysis import probability_metrics as pm
    from store import runs as store_runs

    imports = time.perf_counter() - t
    with connect(path, read_only=True) as con:
        study = con.execute("SELECT study_id FROM studies").fetchone()[0]
        n_runs, n_epochs = con.execute(
            "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM epoch_metrics)"
        ).fetchone()
    ids = [study]

    def search() -> None:
        table = explorer.search_table(store_runs.list_runs(ids, path=path))
        explorer.search_overview(table)
        explorer.parameter_summary(explorer.parameter_effects(table))

    def selected_curves() -> None:
        curves = explorer.learning_curves(
            store_runs.study_epoch_metrics(ids, selected_only=True, path=path)
        )
        explorer.overlay(curves, "method", task="KL")
        explorer.overlay(curves, "seed", task="CPPD", method="beta")
        explorer.mean_curves(curves)

    listed = store_runs.list_runs(ids, path=path)  # a page has it from the search table
    chosen = listed[
        (listed["task"] == "KL") & (listed["method"] == "exponential") & (listed["seed"] == 3)
    ]

    def one_search_curves() -> None:
        explorer.learning_curves(
            store_runs.study_epoch_metrics(ids, run_ids=list(chosen["run_id"]), path=path)
        )

    def every_curve() -> None:
        explorer.learning_curves(store_runs.study_epoch_metrics(ids, path=path))

    def probabilities() -> None:
        frame = store_runs.selected_probabilities(ids, path=path)
        per_run = pm.per_run_probability_metrics(frame)
        pm.probability_summary(per_run)
        pm.reliability_table(frame)

    per_run = pm.per_run_probability_metrics(store_runs.selected_probabilities(ids, path=path))

    def cd_ranking() -> None:
        for task in ("KL", "CPPD"):
            scores = compare.score_frame(per_run, "rps", [task])
            ranking.critical_difference(scores, lower_is_better=True)

    steps = {
        "search table + overview + hyper-parameter effects (list_runs, 1,800 runs)": search,
        "learning curves of the 200 selected runs, two overlays, mean curves": selected_curves,
        "learning curves of one search (15 runs, by run id)": one_search_curves,
        "= explorer total (the three above)": None,
        "every run's learning curves (all epoch rows, long)": every_curve,
        "probability metrics + reliability bins (selected test films)": probabilities,
        "critical-difference ranking of RPS, both tasks (first call imports scikit-posthocs)": (
            cd_ranking
        ),
    }
    print(f"Store: {n_runs:,} runs, {n_epochs:,} epoch rows, {path.stat().st_size / 2**20:.0f} MiB")
    print(f"Machine: {machine_info()}")
    print(
        "Imports (engine.analysis.explorer, probability_metrics, ranking, store.runs): "
        f"{imports:.2f} s\n"
    )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"Load average (1 min) at the start: {load:.1f}\n")
    print("| step | cold wall s | warm wall median s | warm wall max s | warm CPU median s |")
    print("|---|---:|---:|---:|---:|")
    total = [0.0, 0.0, 0.0, 0.0]
    for label, fn in steps.items():
        if fn is None:
            print(f"| {label} | " + " | ".join(f"{v:.3f}" for v in total) + " |")
            continue
        result = timed(fn)
        if label.startswith(("search table", "learning curves")):
            total = [a + b for a, b in zip(total, result, strict=True)]
        print(f"| {label} | " + " | ".join(f"{v:.3f}" for v in result) + " |")
    print(f"\nLoad average (1 min) at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
