"""mypy over the project: engine/ and store/ clean, jobs/, pages/ and app.py not worse.

Runs ``mypy engine store jobs pages app.py`` once (configured in pyproject.toml) and counts
its errors per folder. engine and store must have none; the others may have at most the
count recorded in .ci/mypy-baseline.json, so new code adds no error while the old ones are
fixed. When a folder has fewer errors than its baseline, lower the baseline in the same
commit (the script says so), so that a fixed error cannot come back unnoticed.

Usage: ``python .ci/mypy_check.py`` from the checkout (CI and pre-commit run it).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = Path(__file__).with_name("mypy-baseline.json")
TARGETS = ["engine", "store", "jobs", "pages", "app.py"]
MUST_BE_CLEAN = ("engine", "store")
ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):\d+: error:")


def folder_of(path: str) -> str:
    """``jobs/worker/factory.py`` -> ``jobs``; a top-level module keeps its file name."""
    parts = Path(path).parts
    return parts[0] if len(parts) > 1 else path


def error_counts(output: str) -> Counter[str]:
    """mypy's error lines counted per folder (notes and the summary line left out)."""
    return Counter(
        folder_of(match["path"]) for line in output.splitlines() if (match := ERROR.match(line))
    )


def verdicts(counts: Counter[str], baseline: dict[str, int]) -> tuple[list[str], list[str]]:
    """(failures, hints): folders over their allowance, and baselines that can come down."""
    failures, hints = [], []
    for folder in TARGETS:
        allowed = 0 if folder in MUST_BE_CLEAN else baseline.get(folder, 0)
        found = counts.get(folder, 0)
        if found > allowed:
            failures.append(f"{folder}: {found} mypy errors, {allowed} allowed")
        elif found < allowed:
            hints.append(f"{folder}: {found} errors now; lower its baseline from {allowed}")
    return failures, hints


def main() -> int:
    """Run mypy, print its report and the verdict; 1 when a folder is over its allowance."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", *TARGETS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1):  # 2: mypy itself failed (bad config, crash)
        print(done.stdout + done.stderr, file=sys.stderr)
        return done.returncode
    baseline = json.loads(BASELINE.read_text())
    counts = error_counts(done.stdout)
    failures, hints = verdicts(counts, baseline)
    summary = ", ".join(f"{folder} {counts.get(folder, 0)}" for folder in TARGETS)
    print(f"mypy errors per folder: {summary}")
    for hint in hints:
        print(f"note: {hint} in {BASELINE.relative_to(ROOT)}")
    if failures:
        print(done.stdout, file=sys.stderr)
        print("mypy: " + "; ".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
