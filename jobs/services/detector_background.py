"""The Review crops page's "Train a detector" button: one background training at a time.

`start_training` checks the role, refuses a second training while one runs (one at a time
per ``SOFTGRADE_HOME``: the app's machine may have one CPU to give it), and trains in a
thread of the app's own process (it outlives the page's script run and the browser tab, as
`jobs.services.import_warmup`'s thread does), through the same
`jobs.services.detector.train_with_status` as ``softgrade detector train``: a page-side
service never starts the command line. Its output goes to ``detectors/training.log``;
`jobs.services.detector_status.read_status` is what the page shows. The status names the
app's process, so a training cut short by the app stopping reads as failed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

from jobs.services.access import Action, require
from jobs.services.detector import (
    PAGE_EPOCHS,
    PAGE_IMAGE_SIZE,
    TooFewFilms,
    TrainingRefused,
    check_settings,
    reviewed_films,
    train_with_status,
    training_device,
    training_set,
)
from jobs.services.detector_status import (
    StatusKeeper,
    TrainingStatus,
    detectors_dir,
    log_file,
    read_status,
    status_file,
    utc_now,
    write_status,
)
from store.db import STORE_FILE_NAME, default_store_path, softgrade_home
from store.users import Account

_LOCK_FILE = ".training.lock"


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
        # Written before the thread starts, so the training never finds the file missing.
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
        threading.Thread(
            target=_train_in_background,
            args=(status_path, dataset_id, image_size, epochs, device, home, store),
            name="detector-training",
            daemon=True,  # the app's shutdown does not wait for it; the status then says failed
        ).start()
    from store import audit

    audit.record(
        "train_detector",
        actor=account.name,
        target=dataset_id,
        detail=f"{image_size} px, {epochs} epochs on {device}",
        path=store,
    )
    return status


def _train_in_background(
    status_path: Path,
    dataset_id: str,
    image_size: int,
    epochs: int,
    device: str,
    home: Path,
    store: Path,
) -> None:
    """The training thread: the dataset's films trained into ``detectors/``, each epoch and
    the end in the status file and the log; any failure ends as a 'failed' status (with its
    traceback in the log), never as an exception in the app."""
    keeper = StatusKeeper(status_path, time.perf_counter())
    with open(log_file(home), "w") as log:

        def say(line: str) -> None:
            print(line, file=log, flush=True)

        try:
            data = training_set(dataset_id=dataset_id, store_path=store)
            train_with_status(
                data, keeper, say, image_size=image_size, epochs=epochs, device=device, home=home
            )
        except Exception as exc:
            log.write(traceback.format_exc())
            keeper.update(state="failed", message=str(exc))
