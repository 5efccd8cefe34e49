"""When `python -m jobs up`'s app answers and when its worker is ready to claim a job, counted
from `up`'s launch (issue 31: the first worker waits until the app has served its first page).

Usage:
    .venv/bin/python bench/worker_start_bench.py --home HOME [--rounds 3] [CHECKOUT ...]

Starts ``up`` on the store under ``--home`` (one made by bench/first_heading_bench.py will do)
from each checkout in turn (default: this one), ``--rounds`` times, interleaved, and reads the
worker's "up with N slot(s)" line from ``HOME/logs/softgrade.log`` (written when it has
registered, its slot process still importing torch). A job queued before ``up`` is claimed
then (once the slot has started, 3-5 s of CPU later, it trains). Prints one line per start
with the machine's load.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.browser import _free_port, stop_process_group  # noqa: E402

WORKER_UP = re.compile(r"^(\S+ \S+) INFO jobs\.worker\.runner: worker \S+ up", re.M)


def one_start(home: Path, checkout: Path) -> tuple[float, float]:
    """Seconds from launching ``up`` to its app's health answer and to its worker's
    registration."""
    log = home / "logs" / "softgrade.log"
    seen = len(log.read_text()) if log.exists() else 0
    port = _free_port()
    env = {**os.environ, "SOFTGRADE_HOME": str(home), "PYTHONPATH": str(checkout)}
    launched = time.time()
    proc = subprocess.Popen(
        [sys.executable, "-m", "jobs", "up", "--port", str(port)],
        cwd=checkout,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    health = worker = None
    try:
        while worker is None and time.time() - launched < 180:
            if health is None:
                try:
                    url = f"http://127.0.0.1:{port}/_stcore/health"
                    with urllib.request.urlopen(url, timeout=1) as reply:
                        health = time.time() - launched if reply.status == 200 else None
                except OSError:
                    pass
            found = WORKER_UP.search(log.read_text()[seen:]) if log.exists() else None
            if found:
                stamp = datetime.datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f")
                worker = stamp.timestamp() - launched
            time.sleep(0.1)
    finally:
        stop_process_group(proc)
    if health is None or worker is None:
        raise TimeoutError(f"{checkout}: no app answer or no worker within 180 s")
    return health, worker


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("checkouts", nargs="*", type=Path, default=[ROOT])
    args = parser.parse_args()
    for _ in range(args.rounds):
        for checkout in args.checkouts:
            load = os.getloadavg()[0]
            health, worker = one_start(args.home, checkout.resolve())
            print(
                f"{checkout}: load {load:.1f} · app answers {health:.1f} s · worker "
                f"registered {worker:.1f} s after `up` started",
                flush=True,
            )
            time.sleep(3)  # the previous `up`'s worker has stopped
    return 0


if __name__ == "__main__":
    sys.exit(main())
