"""mypy over the project: every folder clean.

Runs ``mypy engine store jobs pages app.py`` once (configured in pyproject.toml) and counts
its errors per folder. Every folder must have none (issue 40 brought jobs/ and pages/ to 0,
so the per-folder baseline that let them shrink step by step is gone): a new error fails the
check at once, and the count per folder says where to look.

Usage: ``python .ci/mypy_check.py`` from the checkout (CI and pre-commit run it).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ["engine", "store", "jobs", "pages", "app.py"]
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


def failures(counts: Counter[str]) -> list[str]:
    """The folders with any mypy error, each with its count."""
    return [f"{folder}: {counts[folder]} mypy errors" for folder in TARGETS if counts.get(folder)]


def main() -> int:
    """Run mypy, print its report and the verdict; 1 when any folder has an error."""
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
    counts = error_counts(done.stdout)
    summary = ", ".join(f"{folder} {counts.get(folder, 0)}" for folder in TARGETS)
    print(f"mypy errors per folder: {summary}")
    if bad := failures(counts):
        print(done.stdout, file=sys.stderr)
        print("mypy: every folder must be clean; " + "; ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
