"""The detector training's status file, ``detectors/training.json``, and its log.

Both sides of it: the training (a thread of the app's process) writes it each epoch and at
the end (`StatusKeeper`); the Review crops page reads it (`read_status`) to show epoch x of
y, the result or the failure, and reads a 'running' status whose process is gone (the app
stopped mid-training) as failed.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from store.db import softgrade_home

STATUS_FILE = "training.json"
LOG_FILE = "training.log"


def detectors_dir(home: Path | None = None) -> Path:
    """``$SOFTGRADE_HOME/detectors``: trained detectors, and the training status and log."""
    return (home if home is not None else softgrade_home()) / "detectors"


@dataclass(frozen=True)
class TrainingStatus:
    """Where the latest background training is (``detectors/training.json``).

    Attributes:
        state: 'running', 'finished' or 'failed'.
        dataset_id: What it trains on.
        started_by: Who started it.
        started_at: ISO 8601 UTC.
        pid: The training process.
        image_size / epochs / device: Its settings.
        epoch: Epochs done so far.
        elapsed_s: Seconds since it started, at the last update.
        losses: The last epoch's mean training losses.
        message: Why it failed, or what it finished with, in words.
        key: The detector's key, once finished.
        held_out: Its held-out figures (mean_iou, map50, ...), once finished.
        n_films: Films it trains on (0 until the process has read them).
    """

    state: str
    dataset_id: str
    started_by: str
    started_at: str
    pid: int
    image_size: int
    epochs: int
    device: str
    epoch: int = 0
    elapsed_s: float = 0.0
    losses: dict[str, float] = field(default_factory=dict)
    message: str = ""
    key: str = ""
    held_out: dict[str, float] = field(default_factory=dict)
    n_films: int = 0

    @property
    def running(self) -> bool:
        """Whether the training is still going."""
        return self.state == "running"


def status_file(home: Path | None = None) -> Path:
    """``detectors/training.json``."""
    return detectors_dir(home) / STATUS_FILE


def log_file(home: Path | None = None) -> Path:
    """``detectors/training.log``: the training process's output."""
    return detectors_dir(home) / LOG_FILE


def write_status(path: Path, status: TrainingStatus) -> None:
    """Replace the status file in one step (a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(json.dumps(asdict(status), indent=2))
    os.replace(partial, path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


def read_status(home: Path | None = None) -> TrainingStatus | None:
    """The latest training's status, or None if none was ever started here.

    A 'running' status whose process is gone (killed, the machine restarted) reads as
    'failed', with where its output is.
    """
    path = status_file(home)
    try:
        status = TrainingStatus(**json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError) as exc:
        return TrainingStatus("failed", "", "", "", 0, 0, 0, "", message=f"unreadable: {exc}")
    if status.running and not _alive(status.pid):
        return replace(
            status,
            state="failed",
            message=f"the training process ended without finishing; see {log_file(home)}",
        )
    return status


def utc_now() -> str:
    """Now, ISO 8601 UTC to the second (the status file's times)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


class StatusKeeper:
    """The training process's side of the status file: each epoch, then the end."""

    def __init__(self, path: Path | None, start: float) -> None:
        self.path = path
        self.start = start
        self.status: TrainingStatus | None = None
        if path is not None:
            with contextlib.suppress(FileNotFoundError, ValueError, TypeError):
                self.status = TrainingStatus(**json.loads(path.read_text()))

    def update(self, **changes: Any) -> None:
        """Write the status with ``changes`` (nothing without a status file)."""
        if self.path is None or self.status is None:
            return
        elapsed = round(time.perf_counter() - self.start, 1)
        self.status = replace(self.status, pid=os.getpid(), elapsed_s=elapsed, **changes)
        write_status(self.path, self.status)
