"""The phantom as referee of the grade sets: does each conformal score reach its coverage on
films it has never seen? (`softgrade calibrate-sets`, docs/conformal.md)

On each of ``K`` independent phantom datasets (`RefereeDesign.dataset_spec`), each seed
draws its split as a study does, each method trains one fixed configuration on it, and its
validation films calibrate every score of `engine.analysis.conformal` (one threshold, and
per grade); the sets are then scored on the design's fresh test set, films from the same
generator that no dataset holds. Coverage is against the recorded grade (what calibration
sees: the guarantee's target) and, since the phantom knows it, against the true grade.
The average over datasets and seeds should be at least the nominal coverage; the spread over
datasets gives the Monte-Carlo interval (`engine.analysis.conformal.referee_summary`).

The loop shares the inference referee's design, rendering and trainer; it keeps only the
probabilities a set needs, and trains no null twin.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from engine.analysis import conformal
from engine.datasets import PreparedDataset, make_splits, open_prepared, task_split
from engine.referee.design import RefereeDesign
from engine.referee.render import build_one, dataset_caches

# One trainer per head, kept for every run (one compile), as the inference referee keeps them.
from engine.referee.runs import _trainer, device_name
from engine.train import Trainer, resolve_device
from engine.vocab import task_info

log = logging.getLogger(__name__)


@dataclass
class SetsRefereeResult:
    """One task's referee of the sets.

    Attributes:
        draws: one row per dataset, seed, method, score and threshold kind
            (:func:`run_sets_referee`'s columns).
        datasets_done: datasets finished (fewer than asked when the time limit stopped it).
        device: the device trained on, in words.
        wall_s: seconds from the start to the last dataset.
        fresh_films: films of the fresh test set with the task's grade.
    """

    draws: pd.DataFrame
    datasets_done: int = 0
    device: str = ""
    wall_s: float = 0.0
    fresh_films: int = 0


def run_sets_referee(
    design: RefereeDesign,
    workdir: Path,
    *,
    coverage: float = conformal.DEFAULT_COVERAGE,
    render_workers: int = 1,
    on_dataset: Callable[[SetsRefereeResult], None] | None = None,
) -> SetsRefereeResult:
    """Draw the design's datasets, train each method per seed, score its sets on fresh films.

    Args:
        design: what to draw and train (``design.methods``; its null twin is not trained,
            and each method trains its fixed configuration).
        workdir: where the phantom caches are written (the caller removes it).
        coverage: the nominal coverage.
        render_workers: processes rendering datasets ahead of the training.
        on_dataset: called with the results so far after each dataset (to save them).

    Returns:
        ``draws`` with ``task``, ``dataset``, ``data_seed``, ``seed``, ``method``, ``score``,
        ``per_grade``, ``target``, ``n_cal``, then `conformal.set_summary`'s columns on the
        fresh films' recorded grades, and ``true_coverage`` (against the true grade).
    """
    conformal.check_coverage(coverage)
    started = time.perf_counter()
    device = resolve_device(design.device)
    workers = max(1, render_workers)
    fresh = open_prepared(
        build_one(design.fresh_spec(), design.image_size, Path(workdir), workers=workers)
    )
    x_fresh, y_fresh, true_fresh = _graded(fresh, design.task)
    x_fresh_dev, y_fresh_dev = x_fresh.to(device), y_fresh.to(device)
    result = SetsRefereeResult(
        draws=pd.DataFrame(), device=device_name(device), fresh_films=len(y_fresh)
    )
    trainers: dict[str, Trainer] = {}
    rows: list[dict[str, object]] = []
    specs = [design.dataset_spec(k) for k in design.dataset_range]
    caches = dataset_caches(specs, design.image_size, Path(workdir), workers=workers)
    per_dataset: list[float] = []
    try:
        for done, k in enumerate(design.dataset_range):
            if (
                design.max_minutes
                and per_dataset
                and (
                    time.perf_counter() - started + float(np.mean(per_dataset))
                    > design.max_minutes * 60
                )
            ):
                log.info("sets referee: time limit reached after %d datasets", done)
                break
            t0 = time.perf_counter()
            prepared = open_prepared(next(caches))
            for split_seed, cells in design.cells():
                data = task_split(prepared, make_splits(prepared.meta, split_seed), design.task)
                data = data.to(device)
                y_val = data.y_val.cpu().numpy()
                for seed, init_seed in cells:
                    for method in design.methods:
                        trainer = _trainer(trainers, design, device, method)
                        # Each dataset draws its own initialisations (dataset=k), so the
                        # datasets are independent replicates, as in the inference referee.
                        params = design.configs(method, init_seed, k)[0]
                        config = design.train_config(
                            method, init_seed, params, split_seed=split_seed, dataset=k
                        )
                        fitted = trainer.fit(config, data)
                        fresh_probs = trainer.score(x_fresh_dev, y_fresh_dev)
                        keys = {
                            "task": design.task,
                            "dataset": k,
                            "data_seed": design.dataset_spec(k).seed,
                            "seed": seed,
                            "method": method,
                        }
                        rows.extend(
                            _scored(
                                keys,
                                fitted.val_probs,
                                y_val,
                                fresh_probs,
                                y_fresh.numpy(),
                                true_fresh,
                                coverage,
                            )
                        )
            per_dataset.append(time.perf_counter() - t0)
            result.datasets_done = done + 1
            result.draws = pd.DataFrame(rows)
            result.wall_s = time.perf_counter() - started
            log.info(
                "sets referee: %s dataset %d of %d in %.1f s",
                design.task,
                k + 1,
                design.datasets,
                per_dataset[-1],
            )
            if on_dataset is not None:
                on_dataset(result)
    finally:
        caches.close()
    result.wall_s = time.perf_counter() - started
    return result


def _scored(
    keys: dict[str, object],
    val_probs: np.ndarray,
    y_val: np.ndarray,
    fresh_probs: np.ndarray,
    y_fresh: np.ndarray,
    true_fresh: np.ndarray,
    coverage: float,
) -> list[dict[str, object]]:
    """Every score's sets, one threshold and per grade, calibrated on the validation films
    and scored on the fresh films."""
    rows = []
    for name in conformal.SCORES:
        for per_grade in (False, True):
            limits = conformal.calibrate(
                val_probs, y_val, score=name, coverage=coverage, per_grade=per_grade
            )
            sets = conformal.predict_sets(fresh_probs, limits, score=name)
            summary = conformal.set_summary(sets, y_fresh)
            rows.append(
                {
                    **keys,
                    "score": name,
                    "per_grade": per_grade,
                    "target": coverage,
                    "n_cal": int(y_val.size),
                    **summary,
                    "true_coverage": float(sets[np.arange(true_fresh.size), true_fresh].mean()),
                }
            )
    return rows


def _graded(prepared: PreparedDataset, task: str) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """The films carrying the task's grade: images (N, 1, S, S) uint8, recorded grades, and
    true grades (the recorded ones where the data has no truth)."""
    info = task_info(task)
    meta = prepared.meta
    rows = np.flatnonzero(meta[info.column].notna().to_numpy())
    x = torch.from_numpy(np.ascontiguousarray(prepared.images[rows])).unsqueeze(1)
    y = torch.from_numpy(meta[info.column].to_numpy()[rows].astype(np.int64))
    truth_column = info.true_column if info.true_column in meta else info.column
    return x, y, meta[truth_column].to_numpy()[rows].astype(np.int64)
