"""`python -m jobs up` on a 2-core machine: the app's first page before the worker's start,
and a command line that starts without the statistics libraries (issue 31)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_command_line_starts_without_the_report_or_the_referee_statistics():
    # `up` and the worker it starts are `python -m jobs ...`: every command's parser is built
    # first, and the report (altair, statsmodels) and the referee (scipy.stats, baycomp) cost
    # ~2 s of a 2-core machine's CPU before the app starts, and again in the worker.
    heavy = ("pages.present.report", "engine.analysis.referee", "altair", "baycomp")
    code = (
        "import sys\nimport jobs.cli.main\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
