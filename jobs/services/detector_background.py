"""The Review crops page's "Train a detector" button: one background training at a time.

`start_training` checks the role, refuses a second training while one runs (one at a time
per ``SOFTGRADE_HOME``: the app's machine may have one CPU to give it), and starts
``python -m jobs detector train --dataset ID --status ...`` as a process of its own session
(it outlives the page's script run and the browser tab), its output in
``detectors/training.log``; `jobs.services.detector_status.read_status` is what the page shows.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from jobs.services.access import Action, require
from jobs.services.detector import (
    PAGE_EPOCHS,
    PAGE_IMAGE_SIZE,
    TooFewFilms,
    TrainingRefused,
    check_settings,
    reviewed_films,
    training_device,
)
from jobs.services.detector_status import (
    TrainingStatus,
    detectors_dir,
    log_file,
    read_status,
    status_file,
    track_training_process,
    utc_now,
    write_status,
)
from store.db import STORE_ENV, STORE_FILE_NAME, default_store_path, softgrade_home
from store.users import Account

_LOCK_FILE = ".training.lock"
REPO_ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def _training_lock(home: Path | None) -> Iterator[None]:
    """Held while a training is checked for and started (two clicks start one)."""
    folder = detectors_dir(home)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / _LOCK_FILE, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def start_training(
    account: Account,
    dataset_id: str,
    *,
    image_size: int = PAGE_IMAGE_SIZE,
    epochs: int = PAGE_EPOCHS,
    device: str = "cpu",
    home: Path | None = None,
) -> TrainingStatus:
    """Start training a detector on a dataset's reviewed boxes, in the background.

    Raises:
        jobs.services.access.AccessDenied: The role may not launch work.
        TrainingRefused: A training is already running.
        TooFewFilms: Fewer than `MIN_FILMS` films with reviewed boxes.
        ValueError: Bad settings or device.
    """
    require(account, Action.LAUNCH)
    check_settings(image_size, epochs)
    device = training_device(device)
    store = default_store_path() if home is None else home / STORE_FILE_NAME
    home = home if home is not None else softgrade_home()
    with _training_lock(home):
        current = read_status(home)
        if current is not None and current.running:
            raise TrainingRefused(
                f"a detector is already training (started by {current.started_by} at "
                f"{current.started_at}, epoch {current.epoch} of {current.epochs}); one trains "
                "at a time: wait for it to finish"
            )
        why = reviewed_films(dataset_id, store_path=store).too_few()
        if why:
            raise TooFewFilms(why)
        status_path = status_file(home)
        # Written before the process exists (with this process's id, which is alive), so
        # the training can never find the file missing or older than itself.
        status = TrainingStatus(
            state="running",
            dataset_id=dataset_id,
            started_by=account.name,
            started_at=utc_now(),
            pid=os.getpid(),
            image_size=image_size,
            epochs=epochs,
            device=device,
        )
        write_status(status_path, status)
        try:
            child = _spawn_training(dataset_id, image_size, epochs, device, home, store)
        except OSError as exc:
            write_status(status_path, replace(status, state="failed", message=str(exc)))
            raise ValueError(f"the training process could not be started: {exc}") from exc
        status = replace(status, pid=child.pid)
        write_status(status_path, status)
    from store import audit

    audit.record(
        "train_detector",
        actor=account.name,
        target=dataset_id,
        detail=f"{image_size} px, {epochs} epochs on {device}",
        path=store,
    )
    return status


def _spawn_training(
    dataset_id: str, image_size: int, epochs: int, device: str, home: Path, store: Path
) -> subprocess.Popen:
    """``python -m jobs detector train --dataset ID ... --status`` in a session of its own
    (it outlives the page's script run and a stopped app), its output in the log file."""
    command = [
        sys.executable,
        "-m",
        "jobs",
        "detector",
        "train",
        "--dataset",
        dataset_id,
        "--image-size",
        str(image_size),
        "--epochs",
        str(epochs),
        "--device",
        device,
        "--status",
        str(status_file(home)),
    ]
    with open(log_file(home), "w") as log:
        child = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=_training_env(home, store),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    track_training_process(child)
    return child


def _training_env(home: Path, store: Path) -> dict[str, str]:
    """The training process's environment: this data folder and this store."""
    return {
        **os.environ,
        "SOFTGRADE_HOME": str(home),
        STORE_ENV: str(store),
        "PYTHONUNBUFFERED": "1",
    }
