"""A demo bundle's size and a laptop's time to first grade (2 CPU cores).

1. A study to export: ``--home DIR --study ID`` names a trained one; without them a tiny CPU
   study is trained into a temporary home at the real image size (224 px ResNet18: the
   checkpoints weigh what real ones do) for 1 epoch, 2 seeds, one method, KL and CPPD.
2. ``export-demo`` writes its bundle twice: the best seed (the default) and ``--seeds all``.
3. Time to first grade, each in a fresh Python process pinned to 2 cores, from the moment the
   process is started:
   - ``apptest``: unpack the bundle into a fresh temporary home (`fresh_demo_home`), then
     run the kiosk app (``app.py`` with the kiosk's environment) in Streamlit's AppTest until
     the page shows the KL and CPPD grades of the first test film. This is what a browser's
     first visit makes the server do, without the server and the browser.
   - ``http``: ``python -m jobs up --demo BUNDLE`` until Streamlit's health endpoint answers
     (unpacking, imports and the server's start; the page itself runs when a browser
     connects, so first grade ≈ this + the page's own run, measured by ``apptest``).

    python bench/demo_bench.py [--home DIR --study ID] [--repeats 3]
    python bench/demo_bench.py --home DIR --train-only    # the tiny study alone, kept in DIR
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CORES = "0,1"  # taskset: the laptop's 2 cores

TINY_224 = {
    "name": "demo bench (224 px, 1 epoch, CPU)",
    "dataset": {"kind": "phantom", "n_images": 160, "n_joint": 100, "seed": 0},
    "tasks": ["KL", "CPPD"],
    "methods": ["beta"],
    "seeds": [0, 1],
    "budget": 1,
    "max_epochs": 1,
    "patience": 1,
    "image_size": 224,
    "batch_size": 16,
    "device": "cpu",
}


def train_tiny_study(home: Path) -> str:
    """Train `TINY_224` into ``home``; return its study id."""
    from engine.config import StudySpec
    from jobs.worker.executors import InlineExecutor
    from jobs.worker.runner import Worker
    from store import jobs as store_jobs
    from store.db import init_schema

    store = home / "softgrade.duckdb"
    init_schema(store)
    job_id = store_jobs.enqueue_job(StudySpec.from_dict(TINY_224).to_dict(), path=store)
    started = time.perf_counter()
    Worker(InlineExecutor("cpu"), store_path=store, home=home).serve(stop_when_idle=True)
    job = store_jobs.get_job(job_id, path=store)
    if job.status != "succeeded":
        raise SystemExit(f"the tiny study did not finish: {job}")
    print(f"trained the tiny 224 px study in {time.perf_counter() - started:.0f} s")
    return job.study_id


def first_grade_apptest(bundle: str) -> None:
    """Child process: unpack, run the kiosk page, print seconds since the parent's start,
    and how long each phase took (imports, unpacking, the page's first run, a second film)."""
    t0 = time.perf_counter()
    from streamlit.testing.v1 import AppTest

    from jobs.services.demo_bundle import fresh_demo_home
    from jobs.services.kiosk import KioskSettings

    t1 = time.perf_counter()
    home, unpacked = fresh_demo_home(bundle)
    t2 = time.perf_counter()
    try:
        os.environ["SOFTGRADE_HOME"] = str(home)
        os.environ.update(KioskSettings(demo_dir=unpacked.folder).env())
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600).run()
        labels = [m.label for m in at.metric]
        if at.exception or labels != ["KL grade", "CPPD grade"]:
            raise SystemExit(f"no grade shown: {labels} {[e.value for e in at.exception]}")
        print(f"FIRST_GRADE_AT {time.time():.3f}")
        t3 = time.perf_counter()
        at.number_input(key="demo_film").set_value(2).run()
        t4 = time.perf_counter()
        print(
            f"PHASES imports {t1 - t0:.1f} s, unpack {t2 - t1:.1f} s, "
            f"page {t3 - t2:.1f} s, next film {t4 - t3:.1f} s"
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _pinned(cmd: list[str]) -> list[str]:
    return ["taskset", "-c", CORES, *cmd] if shutil.which("taskset") else cmd


def time_apptest(bundle: Path) -> float:
    """Seconds from starting a fresh process to the first grade on the page."""
    start = time.time()
    done = subprocess.run(
        _pinned([sys.executable, __file__, "--child-apptest", str(bundle)]),
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "OMP_NUM_THREADS": "2"},
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("FIRST_GRADE_AT")), None)
    if line is None:
        raise SystemExit(f"apptest child failed:\n{done.stdout}\n{done.stderr}")
    print("    " + next((x for x in done.stdout.splitlines() if x.startswith("PHASES")), ""))
    return float(line.split()[1]) - start


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def time_http(bundle: Path, timeout_s: float = 300) -> float:
    """Seconds from ``up --demo`` to Streamlit's health endpoint answering."""
    port = _free_port()
    start = time.time()
    proc = subprocess.Popen(
        _pinned([sys.executable, "-m", "jobs", "up", "--demo", str(bundle), "--port", str(port)]),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "OMP_NUM_THREADS": "2"},
    )
    try:
        while time.time() - start < timeout_s:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/_stcore/health", timeout=1
                ) as r:
                    if r.status == 200:
                        return time.time() - start
            except OSError:
                time.sleep(0.1)
        raise SystemExit("the kiosk did not answer in time")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def versions() -> str:
    import streamlit
    import torch

    from jobs.services.provenance import code_version

    code = code_version()
    return (
        f"Python {platform.python_version()}, torch {torch.__version__}, streamlit "
        f"{streamlit.__version__}, SoftGrade {code['code_version']} "
        f"({(code['git_commit'] or '?')[:8]}{' dirty' if code['git_dirty'] else ''})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=None, help="SOFTGRADE_HOME of --study")
    parser.add_argument("--study", default=None, help="a trained study to export")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--train-only", action="store_true", help="train the tiny study into --home and stop"
    )
    parser.add_argument("--child-apptest", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_apptest:
        first_grade_apptest(args.child_apptest)
        return
    from jobs.services.demo_bundle import export_demo

    work = Path(tempfile.mkdtemp(prefix="demo-bench-"))
    try:
        home = args.home or work / "home"
        home.mkdir(parents=True, exist_ok=True)
        os.environ["SOFTGRADE_HOME"] = str(home)
        study = args.study or train_tiny_study(home)
        if args.train_only:
            print(f"study {study} in {home}")
            return
        store = home / "softgrade.duckdb"
        print(f"{versions()}; {os.cpu_count()} CPUs; load average {os.getloadavg()}")
        for label, every in (("best seed", False), ("every seed", True)):
            t0 = time.perf_counter()
            out = export_demo(
                study, work / f"demo-{every}.zip", all_seeds=every, home=home, path=store
            )
            print(
                f"bundle ({label}): {out.size_bytes / 2**20:.1f} MiB, {len(out.seeds)} seed(s), "
                f"{out.n_films} films, exported in {time.perf_counter() - t0:.1f} s"
            )
            apptest = [time_apptest(out.path) for _ in range(args.repeats)]
            http = [time_http(out.path) for _ in range(args.repeats)]
            print(
                f"  first grade (AppTest, fresh process): "
                f"{', '.join(f'{t:.1f}' for t in apptest)} s; "
                f"up --demo to HTTP health: {', '.join(f'{t:.1f}' for t in http)} s; "
                f"load average now {os.getloadavg()[0]:.1f}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
