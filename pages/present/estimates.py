"""Time guesses shown beside a study: a job's time left, and a study's rough training time.

No streamlit, so it is unit-tested.
"""

from __future__ import annotations

from collections.abc import Mapping

from pages.present.formatting import is_missing


def eta_seconds(elapsed_s: float | None, runs_done: int, runs_total: int | None) -> float | None:
    """Remaining time of a job, ``elapsed / runs_done * runs_left``; None before any run ends."""
    if elapsed_s is None or is_missing(elapsed_s) or not runs_total or runs_done <= 0:
        return None
    return max(0.0, elapsed_s / runs_done * (runs_total - runs_done))


# Rough training cost of ResNet18 per training image and epoch, validation included,
# calibrated on measured runs (bench/RESULTS.md). GPU (a whole card, all its slots together:
# slots share the card, so they do not divide this time): one seed of the paper protocol on
# an H200 with 4 lanes and the fast stem ran ~15,800 training images/s including every run's
# set-up and validation, ~6.3e-5 s per image at 224 px, scaling with pixel count (floored for
# the fixed per-batch cost of small images).
# CPU: `engine/studies/quick.yaml` on an idle 2-core machine took ~7 ms per image
# and epoch at 32 px; ~7 ms up to 64 px, growing like (size / 64) ** 1.5 above that.
_S_PER_IMAGE = {"cpu": 0.007, "cuda": 6.3e-5}
_REFERENCE_PX = {"cpu": 64, "cuda": 224}
_SIZE_EXPONENT = {"cpu": 1.5, "cuda": 2.0}
_MIN_SCALE = {"cpu": 1.0, "cuda": 0.1}
_PER_RUN_S = {"cpu": 2.0, "cuda": 1.0}  # model set-up, test predictions, checkpoint
_STARTUP_S = {"cpu": 10.0, "cuda": 35.0}  # slot process start (+ compile on a GPU)


def startup_seconds(device: str) -> float:
    """A slot process's start on ``device`` ('cpu' or 'cuda...'), compile included."""
    return _STARTUP_S["cuda" if device.startswith("cuda") else "cpu"]


def rough_study_seconds(
    train_images: Mapping[str, int],
    runs_per_task: Mapping[str, int],
    *,
    max_epochs: int,
    image_size: int,
    device: str,
) -> float:
    """An upper-bound guess of a study's training time (every run to max_epochs) on one CPU
    slot or one GPU.

    Early stopping usually ends runs sooner, several CPU slots or GPUs divide the time, and a
    new dataset is drawn once first; the pages say so next to this number.

    Args:
        train_images: Task → images the task trains on (already the training fraction).
        runs_per_task: Task → number of runs of that task in the plan.
        max_epochs: Epoch cap per run.
        image_size: Side of the square input in pixels.
        device: 'cpu' or 'cuda' (anything starting with 'cuda').
    """
    kind = "cuda" if device.startswith("cuda") else "cpu"
    scale = max(_MIN_SCALE[kind], (image_size / _REFERENCE_PX[kind]) ** _SIZE_EXPONENT[kind])
    per_image = _S_PER_IMAGE[kind] * scale
    image_epochs = sum(
        train_images.get(task, 0) * runs * max_epochs for task, runs in runs_per_task.items()
    )
    n_runs = sum(runs_per_task.values())
    return _STARTUP_S[kind] + n_runs * _PER_RUN_S[kind] + image_epochs * per_image
