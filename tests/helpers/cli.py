"""The command line run in this process: what a fast test uses instead of ``python -m jobs``.

A fresh interpreter costs seconds of CPU before the command does anything (torch and pandas
imported again), so a test of what a command prints or writes calls `jobs.cli.main.main` here
with the same arguments. The result has the shape of `subprocess.run`'s, so a test reads it
the same way; a test of the process itself (its start-up, a signal, its exit) keeps
`tests.helpers.studies.run_jobs_cli` and is marked slow.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

from jobs.cli.main import main


@contextlib.contextmanager
def _logging_restored() -> Iterator[None]:
    # `main` routes the root logger to the terminal and a log file (jobs/cli/cli_logging.py);
    # put the test session's handlers and level back afterwards.
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        for handler in root.handlers:
            if handler not in handlers:
                handler.close()
        root.handlers[:] = handlers
        root.setLevel(level)


def run_cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    """``softgrade ARGS`` on ``home`` (``SOFTGRADE_HOME``), in this process, output captured."""
    out, err = io.StringIO(), io.StringIO()
    env = {"SOFTGRADE_HOME": str(home)}
    with (
        mock.patch.dict(os.environ, env),
        _logging_restored(),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors exit 2, as the process would
            code = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(["softgrade", *args], code, out.getvalue(), err.getvalue())
