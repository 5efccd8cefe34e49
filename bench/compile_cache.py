"""A compile paid once per machine (issue 30, item 2): first vs second study's start-up.

Runs two studies one after the other, each in a fresh `python -m jobs run` process on the
same SOFTGRADE_HOME (each with a store of its own, so nothing but the data folder is shared:
the phantom's image cache and the compile cache under ``compile-cache/``), and times each
from the process start to its first finished run (a row in ``runs``); then stops it. The
first pays the phantom, the imports and the compile; the second should find the phantom and
the compiled steps on disk. Goal: the second <= 30 s on a GPU.

    python bench/compile_cache.py                      # engine/studies/paper.yaml, seed 0, a GPU
    python bench/compile_cache.py --no-cache           # before: each study compiles afresh
    python bench/compile_cache.py --study engine/studies/quick.yaml --home /tmp/cc   # CPU, tiny

``--no-cache`` sets SOFTGRADE_COMPILE_CACHE=off and gives each process an empty inductor
and Triton folder of its own, as a fresh machine would have.

``--corrupt`` (issue 39) overwrites every file the first study left in the compile cache with
garbage of the same size before the second study starts, as a disk fault or a half-written
entry would: the second study must still finish its runs (compiling afresh), and the lines its
log says about the cache are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jobs.worker.compile_cache import CACHE_FOLDER, SWITCH_ENV, list_compile_caches  # noqa: E402
from store.db import StoreError, connect  # noqa: E402

TARGET_SECOND_S = 30.0


def study_file(base: Path, home: Path, index: int, max_epochs: int | None) -> Path:
    """The base study with one seed and its own name, written into ``home``."""
    spec = yaml.safe_load(base.read_text())
    spec["name"] = f"compile cache bench {index}"
    spec["seeds"] = [0]
    if max_epochs is not None:
        spec["max_epochs"] = max_epochs
        spec["patience"] = min(int(spec.get("patience", max_epochs)), max_epochs)
    path = home / f"bench-study-{index}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def first_run(store: Path) -> dict[str, Any] | None:
    """The first finished run of the store (None while there is none or it cannot be read)."""
    if not store.exists():
        return None
    try:
        with connect(store, read_only=True) as con:
            row = con.execute(
                "SELECT run_id, device, duration_s, epochs_run FROM runs "
                "ORDER BY created_at LIMIT 1"
            ).fetchone()
    except (StoreError, Exception):  # not set up yet, or busy: look again
        return None
    if row is None:
        return None
    return dict(zip(("run_id", "device", "duration_s", "epochs_run"), row, strict=True))


def time_one_study(
    index: int, study: Path, home: Path, *, cache: bool, timeout_s: float, extra: list[str]
) -> dict[str, Any]:
    """Start ``jobs run`` on ``study`` in a new process; seconds until its first finished run."""
    store = home / f"store-{index}.duckdb"
    env = {**os.environ, "SOFTGRADE_HOME": str(home), "SOFTGRADE_DB": str(store)}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    if not cache:
        fresh = Path(tempfile.mkdtemp(prefix=f"cold-{index}-", dir=home))
        env.update(
            {
                SWITCH_ENV: "off",
                "TORCHINDUCTOR_CACHE_DIR": str(fresh / "inductor"),
                "TRITON_CACHE_DIR": str(fresh / "triton"),
            }
        )
    log_path = home / f"run-{index}.log"
    command = [sys.executable, "-m", "jobs", "run", str(study), *extra]
    started = time.monotonic()
    started_wall = time.time()
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        found = None
        try:
            while time.monotonic() - started < timeout_s and proc.poll() is None:
                found = first_run(store)
                if found is not None:
                    break
                time.sleep(0.25)
            elapsed = time.monotonic() - started
            if found is not None:
                wait_for_startup_line(log_path, proc)
        finally:
            stop(proc)
    if found is None:
        tail = log_path.read_text()[-3000:]
        raise SystemExit(f"study {index}: no finished run within {timeout_s:g} s\n{tail}")
    return {
        "study": index,
        "to_first_run_s": round(elapsed, 1),
        **found,
        "log": str(log_path),
        "milestones_s": milestones(log_path.read_text(), started_wall),
    }


# The worker's log lines that mark its start-up, and the job log's start-up line.
MILESTONES = {
    "worker up": "up with",
    "data prepared, runs planned": "runs planned",
    "first run stored": " done: ",
}
STARTUP_LINE = "first result "


def wait_for_startup_line(log_path: Path, proc: subprocess.Popen, wait_s: float = 10.0) -> None:
    """Give the worker a moment to log its start-up line after the first run's row."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and proc.poll() is None:
        if STARTUP_LINE in log_path.read_text():
            return
        time.sleep(0.1)


def milestones(log: str, started_wall: float) -> dict[str, Any]:
    """Seconds from the process start to each of the worker's start-up milestones (from its
    log's timestamps), and the worker's own start-up line (`jobs.worker.startup`)."""
    import datetime as dt

    found: dict[str, Any] = {}
    for line in log.splitlines():
        stamp = line[:23]
        for name, needle in MILESTONES.items():
            if name in found or needle not in line:
                continue
            try:
                at = dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()
            except ValueError:
                continue
            found[name] = round(at - started_wall, 1)
        if STARTUP_LINE in line:
            found["startup line"] = line[line.index(STARTUP_LINE) :]
    return found


def stop(proc: subprocess.Popen) -> None:
    """Stop the worker and its slot processes (SIGTERM hands the job back; then SIGKILL)."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def corrupt_compile_cache(root: Path) -> int:
    """Overwrite every file under the compile cache ``root`` with bytes of the same length
    that no loader can read; return how many files were spoilt."""
    spoilt = 0
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and not path.name.startswith("."):
            size = path.stat().st_size
            path.write_bytes((b"\x00corrupt\xff" * (size // 9 + 2))[: max(size, 9)])
            spoilt += 1
    return spoilt


def cache_lines(log_path: Path) -> list[str]:
    """The log's lines about the compile cache, torch's cache loaders and their failures."""
    needles = ("compile cache", "cache", "Traceback", "Error", "WARNING")
    lines = log_path.read_text(errors="replace").splitlines()
    return [line[:240] for line in lines if any(n in line for n in needles)][:40]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--study", default="engine/studies/paper.yaml", help="the base study file")
    parser.add_argument("--home", default=None, help="SOFTGRADE_HOME (default: a new temp dir)")
    parser.add_argument("--max-epochs", type=int, default=None, help="cap the runs' epochs")
    parser.add_argument("--no-cache", action="store_true", help="before: no compile cache")
    parser.add_argument("--timeout-s", type=float, default=540.0, help="per study")
    parser.add_argument("--json", default=None, help="also write the results here")
    parser.add_argument(
        "--corrupt",
        action="store_true",
        help="spoil every compile-cache file between the two studies (the second must "
        "still finish)",
    )
    parser.add_argument(
        "run_args", nargs="*", help="after --: passed to `jobs run` (e.g. --slots-per-gpu 4)"
    )
    args = parser.parse_args()
    home = Path(args.home or tempfile.mkdtemp(prefix="softgrade-cc-")).resolve()
    home.mkdir(parents=True, exist_ok=True)
    results = []
    for index in (1, 2):
        if index == 2 and args.corrupt:
            spoilt = corrupt_compile_cache(home / CACHE_FOLDER)
            print(f"spoilt {spoilt} compile-cache files before study 2", flush=True)
        study = study_file(ROOT / args.study, home, index, args.max_epochs)
        result = time_one_study(
            index,
            study,
            home,
            cache=not args.no_cache,
            timeout_s=args.timeout_s,
            extra=args.run_args,
        )
        caches = list_compile_caches(home / CACHE_FOLDER)
        result["compile_cache"] = [f"{c.name} ({c.size_bytes / 2**20:.1f} MiB)" for c in caches]
        results.append(result)
        if args.corrupt and index == 2:
            result["cache_lines"] = cache_lines(Path(result["log"]))
            print("study 2's log on the cache:", *result["cache_lines"], sep="\n  ", flush=True)
        print(f"study {index} start-up: {json.dumps(result['milestones_s'])}", flush=True)
        print(
            f"study {index}: first finished run after {result['to_first_run_s']:.1f} s "
            f"(run {result['duration_s']:.1f} s, {result['epochs_run']} epochs, "
            f"{result['device']}); compile cache: {', '.join(result['compile_cache']) or 'none'}",
            flush=True,
        )
    first, second = (r["to_first_run_s"] for r in results)
    mode = "without the compile cache (--no-cache)" if args.no_cache else "with the compile cache"
    verdict = "meets" if second <= TARGET_SECOND_S else "misses"
    print(
        f"{mode}: first study {first:.1f} s, second {second:.1f} s to the first finished run "
        f"(saved {first - second:.1f} s; {verdict} the {TARGET_SECOND_S:g} s goal); home {home}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
