"""The fast tier's cost in CPU time: the whole tier, and each test (issue 40).

    python bench/fast_tier.py [--workers 2] [--json out.json] [--top 25]

Runs ``pytest -m "not slow and not e2e" -n WORKERS`` in a child process and reports the CPU
time (user + system) of that process and every process under it, which is what two free
cores have to spend: the tier's wall time on 2 free cores is about CPU / 2. CPU time, unlike
wall time, hardly moves when other work shares the machine, so it is the figure to compare.
Each test's own CPU time (its setup, call and teardown, in its xdist worker, torch's threads
included) is recorded by the plug-in below and the tests over `LIMIT_S` are listed: the tier
promises each fast test under ~2 s of CPU.

``--write-slow-list`` adds the tests over the limit to `SLOW_LIST` (tests/slow_by_cost.txt),
which tests/conftest.py marks ``slow``: the measurement, not a guess, moves a test out of the
tier. Entries already there stay (they are not run, so not measured); delete a line to put a
test back, and the next run says whether it fits.

The plug-in half of this file is loaded into pytest (and its xdist workers) by ``-p
fast_tier`` with this folder on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUT_VARIABLE = "FAST_TIER_CPU_DIR"
LIMIT_S = 2.0
SLOW_LIST = ROOT / "tests" / "slow_by_cost.txt"
SLOW_LIST_HEADER = """\
# Tests over ~2 s of CPU in the fast tier, as measured by `python bench/fast_tier.py
# --write-slow-list`; tests/conftest.py marks each one slow (CI still runs it). A line: the
# test's node id, then the CPU seconds it took when measured. Make a test cheaper and delete
# its line to bring it back into the fast tier.
"""


# --------------------------------------------------------------------------------------------
# The pytest plug-in: each test's CPU time, one JSON line per test, a file per process
# --------------------------------------------------------------------------------------------


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


_outcomes: dict[str, str] = {}


def pytest_runtest_logreport(report: Any) -> None:
    """Remember a test that failed (or skipped) in any phase, for its JSON line."""
    if report.failed:
        _outcomes[report.nodeid] = "failed"
    elif report.skipped:
        _outcomes.setdefault(report.nodeid, "skipped")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Iterator[None]:
    """Time one test's setup, call and teardown in this process's CPU seconds."""
    start = _cpu_s()
    yield
    folder = os.environ.get(OUT_VARIABLE)
    if folder:
        outcome = _outcomes.get(item.nodeid, "passed")
        cpu = round(_cpu_s() - start, 3)
        line = json.dumps({"test": item.nodeid, "cpu_s": cpu, "outcome": outcome})
        with open(Path(folder) / f"{os.getpid()}.jsonl", "a", encoding="utf-8") as out:
            out.write(line + "\n")


# --------------------------------------------------------------------------------------------
# The bench: run the tier in a child process, read the children's CPU time
# --------------------------------------------------------------------------------------------


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _versions() -> dict[str, str]:
    import torch
    import xdist

    return {
        "python": platform.python_version(),
        "pytest": pytest.__version__,
        "pytest-xdist": xdist.__version__,
        "torch": torch.__version__,
    }


def _per_test(folder: Path) -> list[dict[str, Any]]:
    rows = []
    for file in folder.glob("*.jsonl"):
        rows += [json.loads(line) for line in file.read_text().splitlines() if line]
    return sorted(rows, key=lambda r: -r["cpu_s"])


def run_tier(workers: int, extra: list[str]) -> dict[str, Any]:
    """Run the fast tier once; its CPU and wall time, outcome counts and per-test CPU."""
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, OUT_VARIABLE: folder}
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT / "bench"), str(ROOT), env.get("PYTHONPATH", "")) if p
        )
        command = [sys.executable, "-m", "pytest", "-m", "not slow and not e2e"]
        command += ["-p", "fast_tier", "-p", "no:cacheprovider", "-n", str(workers), *extra]
        cpu_before, wall_before = _children_cpu_s(), time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        cpu = _children_cpu_s() - cpu_before
        wall = time.perf_counter() - wall_before
        tests = _per_test(Path(folder))
    finals = [line for line in done.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    summary = finals[-1].strip("= ") if finals else ""
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|errors?)", summary)}
    return {
        "command": " ".join(["python", "-m", "pytest", *command[3:]]),
        "returncode": done.returncode,
        "summary": summary,
        "counts": counts,
        "tests": len(tests),
        "cpu_s": round(cpu, 1),
        "wall_s": round(wall, 1),
        "minutes_on_2_free_cores": round(cpu / 2 / 60, 2),
        "over_limit": [t for t in tests if t["cpu_s"] > LIMIT_S],
        "failed": sorted(t["test"] for t in tests if t.get("outcome") == "failed"),
        "slowest": tests[:50],
        "per_test": tests,  # every test's CPU, slowest first (for --json)
        "tail": done.stdout[-3000:] if done.returncode else "",
    }


def write_slow_list(over_limit: list[dict[str, Any]], path: Path = SLOW_LIST) -> int:
    """Add ``over_limit`` tests to the slow list (kept sorted); how many were new."""
    entries: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                test, _, cpu = line.rpartition(" ")
                entries[test.strip()] = cpu
    new = {t["test"]: f"{t['cpu_s']:.1f}" for t in over_limit if t["test"] not in entries}
    entries |= new
    lines = [f"{test} {cpu}" for test, cpu in sorted(entries.items())]
    path.write_text(SLOW_LIST_HEADER + "\n".join(lines) + "\n")
    return len(new)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (-n)")
    parser.add_argument("--json", type=Path, help="write the full result here")
    parser.add_argument("--top", type=int, default=25, help="how many slowest tests to print")
    parser.add_argument(
        "--write-slow-list", action="store_true", help=f"add tests over {LIMIT_S:g} s to SLOW_LIST"
    )
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    result = run_tier(args.workers, args.pytest_args)
    result |= {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "versions": _versions(),
    }
    print(f"{result['summary']}  (exit {result['returncode']})")
    print(
        f"fast tier: {result['tests']} tests, {result['cpu_s']} s of CPU "
        f"(~{result['minutes_on_2_free_cores']} min on 2 free cores), {result['wall_s']} s wall"
    )
    print(f"tests over {LIMIT_S:g} s of CPU: {len(result['over_limit'])}")
    for test in result["failed"]:
        print(f"  failed: {test}")
    for test in result["slowest"][: args.top]:
        print(f"  {test['cpu_s']:7.2f} s  {test['test']}")
    if result["tail"]:
        print(result["tail"])
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    if args.write_slow_list:
        added = write_slow_list(result["over_limit"])
        print(f"{added} test(s) added to {SLOW_LIST.relative_to(ROOT)}")
    return result["returncode"]


if __name__ == "__main__":
    sys.exit(main())
