"""Worker processes started, watched and waited for in tests."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from store.db import StoreError, connect
from tests.helpers.studies import REPO_ROOT


def start_worker(home: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "SOFTGRADE_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jobs",
            "worker",
            "--device",
            "cpu",
            "--beat-s",
            "0.5",
            "--stale-after-s",
            "3",
            *extra,
        ],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(home / "worker.log").open("a"),
    )


def wait_for(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            value = condition()
        except StoreError:
            value = None  # the worker holds the file for a moment; look again
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def incomplete_runs(store: Path) -> int:
    """Runs without both their val and test predictions (must never exist)."""
    with connect(store, read_only=True) as con:
        return con.execute(
            """
            SELECT count(*) FROM runs r
            WHERE (SELECT count(DISTINCT split) FROM predictions p WHERE p.run_id = r.run_id) < 2
            """
        ).fetchone()[0]
