"""Expensive test fixtures built once per test session, not once per pytest-xdist worker.

A session-scoped fixture runs once in each xdist worker (``pytest -n 2`` built the trained
study twice, ~20 s of CPU each). A fixture whose product is a folder (a trained study's home,
a synthetic store) is built here by whichever worker asks first, under a file lock, and copied
by every worker, the builder included: each worker then reads and writes its own copy, and
the pristine build is never written to while another worker copies it. Without xdist the
folder is built where it is used.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

DONE = "built.json"  # written last: a folder without it is a build that did not finish


@dataclass(frozen=True)
class Built:
    """A worker's own copy of a shared build."""

    folder: Path  # this worker's copy
    built_in: Path  # where it was built: absolute paths in its files start here
    description: dict[str, Any]  # what the build returned


def built_once(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    build: Callable[[Path], dict[str, Any]],
) -> Built:
    """The folder ``build(folder)`` filled, copied for this worker, with what it returned.

    ``build`` fills an empty folder and returns a JSON-able description of it. Under xdist
    the first worker to ask builds it in the session's shared temporary folder (the parent
    of each worker's base temp: one per pytest run), and every worker copies it.
    """
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        folder = tmp_path_factory.mktemp(name)
        return Built(folder, folder, build(folder))
    shared = tmp_path_factory.getbasetemp().parent / f"shared-{name}"
    with FileLock(f"{shared}.lock"):
        if not (shared / DONE).is_file():
            shutil.rmtree(shared, ignore_errors=True)  # a build a killed worker left half done
            shared.mkdir()
            (shared / DONE).with_suffix(".tmp").write_text(json.dumps(build(shared)))
            (shared / DONE).with_suffix(".tmp").rename(shared / DONE)
    copy = tmp_path_factory.mktemp(name)
    shutil.copytree(shared, copy, dirs_exist_ok=True, ignore=shutil.ignore_patterns(DONE))
    return Built(copy, shared, json.loads((shared / DONE).read_text()))
