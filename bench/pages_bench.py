"""Server time of the Compare and KL × CPPD pages on a store of ~2,000 runs / ~1.5 M predictions.

Usage:
    .venv/bin/python bench/pages_bench.py                  # build the store once, measure
    .venv/bin/python bench/pages_bench.py --home DIR --rebuild  # rebuild it in DIR
    .venv/bin/python bench/pages_bench.py --generate-only  # just build the store
    .venv/bin/python bench/pages_bench.py --reference  # Compare → Probabilities, reference study

``--reference`` imports ``store/examples/reference-study.zip`` (20 seeds × 2 tasks × 5 methods, the
paper protocol on the phantom) into a fresh temporary store, as ``python -m jobs import-study``
does, and times the Compare page's Probabilities tab there: the page with the tab closed (it
is computed only when opened), opening it cold and warm, its widgets, the read TTL and a
cleared cache; then, in a second fresh process, a first load with the tab already open (what
every first load of Compare cost before the tab became lazy).

The store is synthetic but shaped like the paper's experiment, written through the public
store API (``enqueue_job``, ``claim_next_job``, ``finish_job``, ``select_best_runs``) plus a
bulk insert of runs and predictions (one transaction, SQL, for speed):

* study "paper": 20 seeds × {KL, CPPD} × 5 methods, budget 15 as in the paper (nominal,
  binomial and beta grids are smaller, so 3 + 6 + 6 + 15 + 15 runs per seed and task):
  1,800 runs, succeeded;
* study "quick": 6 seeds × 2 tasks × 5 methods, budget 3: 180 runs, succeeded;
* study "running": 4 planned seeds × 2 tasks × 3 methods, budget 5: seeds 0-1 complete and
  seed 2 half done (57 runs), job still running;

about 2,040 runs and 1.6 M prediction rows. Each seed has its own split of 970 jointly
graded images (KL × CPPD drawn from ``../shared/reference/kl_cppd_contingency.csv`` when
present) and 1,200 CPPD-only images: 291 + 360 test and 204 + 456 validation images.

Each page is measured in a fresh Python process with Streamlit's AppTest (server-side
script time, no browser): the imports (torch apart), the first run (empty caches), 5 reruns
(warm caches), a run once the 10 s read TTL has expired, a run after
``st.cache_data.clear()``, then widget changes. A fresh server's first load is the imports
plus the first run. Figures are printed as a Markdown table with the machine they ran on.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from engine.methods import METHODS, grid_size
from store import jobs as store_jobs
from store import runs as store_runs
from store.db import connect, init_schema

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_HOME = Path("/tmp/softgrade_bench")
DEFAULT_REFERENCE_HOME = Path("/tmp/softgrade_reference_bench")
REFERENCE = ROOT.parent / "shared" / "reference" / "kl_cppd_contingency.csv"
N_JOINT, N_CPPD_ONLY = 970, 1200
TEST_SHARE, VAL_SHARE = 0.30, 0.30
# Chance a method's prediction is exact / one grade off (the rest: anywhere).
QUALITY = {
    "nominal": (0.45, 0.30),
    "binomial": (0.52, 0.38),
    "beta": (0.57, 0.37),
    "triangular": (0.56, 0.37),
    "exponential": (0.55, 0.37),
}
STUDIES = [  # created in this order, so "paper" is the newest (the pages' default)
    {"name": "quick", "seeds": list(range(6)), "methods": list(METHODS), "budget": 3},
    {
        "name": "running",
        "seeds": [0, 1, 2, 3],
        "methods": ["nominal", "beta", "triangular"],
        "budget": 5,
        "finished_seeds": 2,
    },
    {"name": "paper", "seeds": list(range(20)), "methods": list(METHODS), "budget": 15},
]


def joint_distribution() -> np.ndarray:
    """(5, 4) KL × CPPD probabilities of a jointly graded image."""
    if REFERENCE.is_file():
        table = pd.read_csv(REFERENCE, index_col=0).to_numpy(dtype=float)
    else:
        table = np.array(
            [
                [111, 13, 8, 14],
                [201, 52, 34, 23],
                [98, 45, 36, 28],
                [70, 42, 40, 43],
                [29, 21, 30, 32],
            ],
            dtype=float,
        )
    return table / table.sum()


def seed_images(seed: int) -> dict[str, pd.DataFrame]:
    """The seed's val/test images per task with their recorded grades."""
    rng = np.random.default_rng(1000 + seed)
    cells = rng.choice(20, size=N_JOINT, p=joint_distribution().ravel())
    kl, cppd_joint = cells // 4, cells % 4
    cppd_only = rng.choice(4, size=N_CPPD_ONLY, p=[0.40, 0.16, 0.21, 0.23])
    joint = pd.DataFrame(
        {"image_id": [f"j{i:04d}" for i in range(N_JOINT)], "kl": kl, "cppd": cppd_joint}
    )
    only = pd.DataFrame({"image_id": [f"c{i:04d}" for i in range(N_CPPD_ONLY)], "cppd": cppd_only})

    def split(frame: pd.DataFrame) -> pd.Series:
        u = rng.random(len(frame))
        return pd.Series(
            np.where(
                u < TEST_SHARE,
                "test",
                np.where(u < TEST_SHARE + (1 - TEST_SHARE) * VAL_SHARE, "val", "train"),
            ),
            index=frame.index,
        )

    joint["split"], only["split"] = split(joint), split(only)
    kl_images = joint.loc[joint["split"] != "train", ["image_id", "split", "kl"]]
    cppd_images = pd.concat(
        [
            joint.loc[joint["split"] != "train", ["image_id", "split", "cppd"]],
            only.loc[only["split"] != "train"],
        ]
    )
    return {
        "KL": kl_images.rename(columns={"kl": "y_true"}).reset_index(drop=True),
        "CPPD": cppd_images.rename(columns={"cppd": "y_true"})[
            ["image_id", "split", "y_true"]
        ].reset_index(drop=True),
    }


def predict(
    y_true: np.ndarray, n_classes: int, method: str, rng: np.random.Generator
) -> np.ndarray:
    """Synthetic predictions: exact, one grade off, or anywhere, by the method's quality."""
    exact, near = QUALITY[method]
    exact += rng.normal(0, 0.03)  # configurations and seeds differ a little
    u = rng.random(y_true.size)
    step = np.where(rng.random(y_true.size) < 0.5, -1, 1)
    off_by_one = np.clip(y_true + step, 0, n_classes - 1)
    anywhere = rng.integers(0, n_classes, y_true.size)
    return np.where(u < exact, y_true, np.where(u < exact + near, off_by_one, anywhere)).astype(
        np.int8
    )


def build_store(home: Path) -> Path:
    """Write the three studies into ``home/softgrade.duckdb`` (replacing it)."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "softgrade.duckdb"
    for stale in (path, path.with_suffix(".duckdb.wal")):
        stale.unlink(missing_ok=True)
    init_schema(path)
    images = {seed: seed_images(seed) for seed in range(20)}
    total_runs = total_rows = 0
    t0 = time.perf_counter()
    for study in STUDIES:
        spec = {
            "name": study["name"],
            "dataset": {"kind": "phantom", "bench": True},
            "tasks": ["KL", "CPPD"],
            "methods": study["methods"],
            "seeds": study["seeds"],
            "budget": study["budget"],
        }
        job_id = store_jobs.enqueue_job(spec, path=path)
        job = store_jobs.claim_next_job("bench-worker", path=path)
        assert job is not None and job.job_id == job_id
        runs, preds = [], []
        rng = np.random.default_rng(len(study["name"]))
        n_finished = study.get("finished_seeds", len(study["seeds"]))
        for position, seed in enumerate(study["seeds"]):
            if position > n_finished:
                break
            for task in ("KL", "CPPD"):
                n_classes = 5 if task == "KL" else 4
                for method in study["methods"]:
                    n_configs = min(study["budget"], grid_size(method))
                    if position == n_finished:  # the seed in progress: half of its runs
                        n_configs = n_configs // 2 if task == "KL" else 0
                    for config in range(n_configs):
                        run_id = f"{job.study_id}-{task}-{method}-s{seed}-c{config}"
                        frame = images[seed][task]
                        y_pred = predict(frame["y_true"].to_numpy(), n_classes, method, rng)
                        runs.append(
                            {
                                "run_id": run_id,
                                "study_id": job.study_id,
                                "job_id": job_id,
                                "task": task,
                                "method": method,
                                "seed": seed,
                                "config_index": config,
                                "config": json.dumps({"lr": 1e-3, "config": config}),
                                "status": "succeeded",
                                "val_amae": float(rng.random()),
                            }
                        )
                        preds.append(
                            pd.DataFrame(
                                {
                                    "run_id": run_id,
                                    "image_id": frame["image_id"].to_numpy(),
                                    "split": frame["split"].to_numpy(),
                                    "y_true": frame["y_true"].to_numpy(dtype=np.int8),
                                    "y_pred": y_pred,
                                }
                            )
                        )
        run_frame = pd.DataFrame(runs)
        pred_frame = pd.concat(preds, ignore_index=True)
        with connect(path) as con:
            con.register("bench_runs", run_frame)
            con.execute(
                "INSERT INTO runs (run_id, study_id, job_id, task, method, seed, config_index, "
                "config, status, val_amae, weights_init) SELECT run_id, study_id, job_id, task, "
                "method, seed, config_index, config, status, val_amae, 'random' FROM bench_runs"
            )
            con.register("bench_preds", pred_frame)
            # A one-hot-ish probability vector of the task's length per row.
            con.execute(
                """
                INSERT INTO predictions
                SELECT run_id, image_id, split, y_true, y_pred,
                       list_transform(
                           range(CASE WHEN run_id LIKE '%-KL-%' THEN 5 ELSE 4 END),
                           lambda g: CASE WHEN g = y_pred THEN 0.7 ELSE 0.075 END
                       )::FLOAT[]
                FROM bench_preds
                """
            )
            con.execute(
                "UPDATE studies SET dataset_id = 'ds-bench' WHERE study_id = ?", [job.study_id]
            )
        store_runs.select_best_runs(job.study_id, path=path)
        if "finished_seeds" not in study:
            store_jobs.finish_job(job_id, store_jobs.JobStatus.SUCCEEDED, path=path)
        total_runs += len(run_frame)
        total_rows += len(pred_frame)
        print(f"  study {study['name']}: {len(run_frame)} runs, {len(pred_frame):,} predictions")
    seconds = time.perf_counter() - t0
    print(f"store: {total_runs} runs, {total_rows:,} prediction rows in {seconds:.0f} s")
    return path


# ------------------------------------------------------------------------------------------
# Measuring (each page in its own process: the first load pays the imports, as a fresh server)
# ------------------------------------------------------------------------------------------

CHILD = r"""
import json, os, sys, time
out = {{}}
t = time.perf_counter()
import engine.soft_labels  # torch and dlordinal, pulled in by engine.config
out["imports: torch + dlordinal (engine.soft_labels)"] = [time.perf_counter() - t]
t = time.perf_counter()
import streamlit as st
from streamlit.testing.v1 import AppTest
import pages.present.charts, store.runs
import engine.analysis.compare, engine.analysis.relationship, engine.analysis.stats
out["imports: streamlit, statsmodels, scipy, altair, duckdb, the page's modules"] = [
    time.perf_counter() - t
]
page, actions = {page!r}, {actions!r}
at = AppTest.from_file(os.path.join({root!r}, "pages", page + ".py"), default_timeout=300)
def timed(label, fn):
    t = time.perf_counter(); fn(); out.setdefault(label, []).append(time.perf_counter() - t)
    if at.exception:
        raise SystemExit(f"{{page}}: {{at.exception[0].value}}")
timed("first load (empty caches)", at.run)
for _ in range(5):
    timed("later loads (warm caches)", at.run)
time.sleep(11)  # the pages re-read the store after READ_TTL_S = 10 s; derived caches stay
timed("load after the 10 s read TTL expired", at.run)
st.cache_data.clear()
timed("load after clearing every cache", at.run)
for label, kind, key, value in actions:
    def act():
        getattr(at, kind)(key=key).set_value(value).run()
    timed(label, act)
    for _ in range(3):
        timed(label + ", again (warm caches)", at.run)
print("RESULT " + json.dumps(out))
"""


def measure(
    home: Path, page: str, actions: list[tuple[str, str, str, object]]
) -> dict[str, list[float]]:
    """Run the AppTest timing script for ``page`` in a fresh interpreter."""
    code = CHILD.format(root=str(ROOT), page=page, actions=actions)
    env = {**os.environ, "SOFTGRADE_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode or not lines:
        raise SystemExit(f"{page} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


def machine_info() -> str:
    versions = []
    packages = ("streamlit", "duckdb", "pandas", "numpy", "altair", "scipy", "statsmodels")
    for pkg in (*packages, "scikit-posthocs"):
        try:
            versions.append(f"{pkg} {importlib.metadata.version(pkg)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    cpu = platform.processor() or platform.machine()
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


def store_size(path: Path) -> str:
    with connect(path, read_only=True) as con:
        runs, preds = con.execute(
            "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM predictions)"
        ).fetchone()
    return f"{runs:,} runs, {preds:,} prediction rows, {path.stat().st_size / 2**20:.0f} MiB"


# ------------------------------------------------------------------------------------------
# Compare → Probabilities on the bundled reference study (--reference)
# ------------------------------------------------------------------------------------------

PROBABILITY_CHILD = r"""
import json, os, sys, time
out = {{}}
t = time.perf_counter()
import streamlit as st
from streamlit.testing.v1 import AppTest
import engine.analysis.compare, engine.analysis.stats, store.runs
import pages.widgets.compare_views, pages.widgets.probability_view
out["imports: streamlit, scipy, statsmodels, altair, duckdb, the page's modules"] = [
    (time.perf_counter() - t, None)
]
at = AppTest.from_file(os.path.join({root!r}, "pages", "compare.py"), default_timeout=300)
def timed(label, fn):
    t, c = time.perf_counter(), time.process_time(); fn()
    out.setdefault(label, []).append((time.perf_counter() - t, time.process_time() - c))
    if at.exception:
        raise SystemExit(f"compare: {{at.exception[0].value}}")
def tab(name):
    def open_it():
        at.session_state["compare_tab"] = name  # what a click on the tab sets
        at.run()
    return open_it
def widget(kind, key, value):
    return lambda: getattr(at, kind)(key=key).set_value(value).run()
def warm(label, n=5):
    for _ in range(n):
        timed(label, at.run)
if {open_first!r}:
    timed("first load with the Probabilities tab open (empty caches)", tab("Probabilities"))
    warm("rerun with the tab open (warm caches)")
else:
    timed("first load, Probabilities tab closed (empty caches)", at.run)
    warm("reload, tab closed (warm caches)")
    timed("open the Probabilities tab, first time (cold)", tab("Probabilities"))
    warm("rerun with the tab open (warm caches)")
    timed("metric → ECE (top label), first view", widget("selectbox", "prob_metric", "ece"))
    warm("the same, again (warm caches)", 3)
    timed("correction → none (as in the paper), first view",
          widget("selectbox", "prob_correction", "none"))
    timed("task → CPPD, first view", widget("selectbox", "prob_task", "CPPD"))
    time.sleep(11)  # the store reads expire after RESULTS_TTL_S = 10 s; derived caches stay
    timed("rerun with the tab open after the 10 s read TTL expired", at.run)
    st.cache_data.clear()
    timed("rerun with the tab open after clearing every cache", at.run)
    timed("back to the Metrics table tab (warm)", tab("Metrics table"))
print("RESULT " + json.dumps(out))
"""


def import_reference(home: Path) -> Path:
    """A fresh store in ``home`` holding only the bundled reference study."""
    from store.bundle import REFERENCE_STUDY, import_study

    home.mkdir(parents=True, exist_ok=True)
    path = home / "softgrade.duckdb"
    for stale in (path, path.with_suffix(".duckdb.wal")):
        stale.unlink(missing_ok=True)
    init_schema(path)
    done = import_study(REFERENCE_STUDY, path=path)
    print(f"imported {done.name}: {REFERENCE_STUDY.relative_to(ROOT)} into {path}")
    return path


def measure_probabilities(home: Path, *, open_first: bool) -> dict[str, list[list[float]]]:
    """The Compare page's Probabilities tab timed through AppTest in a fresh interpreter."""
    code = PROBABILITY_CHILD.format(root=str(ROOT), open_first=open_first)
    env = {**os.environ, "SOFTGRADE_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode or not lines:
        raise SystemExit(f"compare failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


def reference_main(home: Path) -> None:
    """Time Compare → Probabilities on the imported reference study; print a Markdown table."""
    path = import_reference(home)
    load_start = os.getloadavg()
    results = measure_probabilities(home, open_first=False)
    results |= measure_probabilities(home, open_first=True)
    load_end = os.getloadavg()
    print(f"Store: {store_size(path)}")
    print(f"Machine: {machine_info()}")
    print(f"Date: {time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(
        "Load average (1, 5, 15 min) at the start: "
        + ", ".join(f"{v:.1f}" for v in load_start)
        + "; at the end: "
        + ", ".join(f"{v:.1f}" for v in load_end)
        + "\n"
    )
    print("| step | runs | wall median s | wall max s | CPU median s |")
    print("|---|---:|---:|---:|---:|")
    for label, pairs in results.items():
        wall = [w for w, _ in pairs]
        cpu = [c for _, c in pairs if c is not None]
        cpu_text = f"{statistics.median(cpu):.2f}" if cpu else "–"
        print(
            f"| {label} | {len(pairs)} | {statistics.median(wall):.2f} | {max(wall):.2f} | "
            f"{cpu_text} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--home", type=Path, default=DEFAULT_HOME, help="SOFTGRADE_HOME of the bench store"
    )
    parser.add_argument("--rebuild", action="store_true", help="rebuild the store even if present")
    parser.add_argument("--generate-only", action="store_true")
    parser.add_argument(
        "--reference",
        action="store_true",
        help="time Compare → Probabilities on the bundled reference study instead "
        "(imported into --home, default /tmp/softgrade_reference_bench)",
    )
    args = parser.parse_args()
    if args.reference:
        home = DEFAULT_REFERENCE_HOME if args.home == DEFAULT_HOME else args.home
        reference_main(home)
        return
    path = args.home / "softgrade.duckdb"
    if args.rebuild or not path.exists():
        build_store(args.home)
    if args.generate_only:
        return
    with connect(path, read_only=True) as con:
        study_ids = dict(con.execute("SELECT name, study_id FROM studies").fetchall())
    every = [study_ids["paper"], study_ids["quick"], study_ids["running"]]
    pages = {
        "compare": [
            ("change the metric (Fig. 5)", "selectbox", "compare_metric", "qwk"),
            ("change the statistics metric", "selectbox", "compare_stats_metric", "mae"),
            ("select all three studies", "multiselect", "compare_studies", every),
        ],
        "relationship": [
            ("change the detailed method", "selectbox", "rel_method", "beta"),
            ("select all three studies", "multiselect", "rel_studies", every),
        ],
    }
    print(f"Store: {store_size(path)}")
    print(f"Machine: {machine_info()}\n")
    print("| page | step | runs | median s | max s |")
    print("|---|---|---:|---:|---:|")
    for page, actions in pages.items():
        result = measure(args.home, page, actions)
        first = sum(result[k][0] for k in result if k.startswith(("imports", "first load")))
        result["= first load in a fresh server (imports + first load)"] = [first]
        for label, times in result.items():
            median, worst = statistics.median(times), max(times)
            print(f"| {page} | {label} | {len(times)} | {median:.2f} | {worst:.2f} |")


if __name__ == "__main__":
    main()
