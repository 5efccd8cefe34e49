"""The referee's training loop: the design on every dataset, in this process, no store.

For each dataset, for each split seed: the split (`engine.datasets.make_splits`, as a study
draws it), then for each of its init seeds (one, the split's own, for independent seeds;
``inits`` of them for a factorial design) every method (and the null method's twin) trained
by `engine.train.Trainer` on that split, its configurations selected on validation by the
study's rule (`engine.protocol.SEARCH_SELECTION`), and the selected model scored on the
seed's own test split and on the fresh test set. After the seeds, the film-sampling bootstrap of the
dataset's pairs (`engine.analysis.paired.hierarchical_bootstrap`), since the per-film
predictions are not kept.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from engine.analysis import paired
from engine.analysis.metrics import METRICS, compute_metrics
from engine.analysis.referee_samples import fresh_column, test_column
from engine.datasets import PreparedDataset, TaskSplit, make_splits, open_prepared, task_split
from engine.methods import get_method
from engine.protocol import SEARCH_SELECTION
from engine.referee.design import RefereeDesign
from engine.referee.render import build_one, dataset_caches
from engine.train import Trainer, resolve_device
from engine.vocab import LABEL_COLUMNS, TASK_CLASSES

log = logging.getLogger(__name__)


@dataclass
class RefereeResult:
    """What the referee's training produced.

    Attributes:
        draws: one row per dataset, seed and trained name (:func:`run_referee`'s columns).
        boot: the film-sampling bootstrap interval per dataset and pair.
        datasets_done: datasets finished (fewer than asked when the time limit stopped it).
        stopped_early: the time limit stopped it.
        device: the device trained on, in words.
        wall_s: seconds from the start to the last dataset.
        render_wait_s: seconds the training waited for rendering.
        fresh_films: films of the fresh test set with the task's grade.
    """

    draws: pd.DataFrame
    boot: pd.DataFrame
    datasets_done: int = 0
    stopped_early: bool = False
    device: str = ""
    wall_s: float = 0.0
    render_wait_s: float = 0.0
    fresh_films: int = 0
    timings: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class _Seeds:
    """One cell of the design: its pairing seed, the split it trains on, its init seed."""

    seed: int
    split: int
    init: int


@dataclass
class _Selected:
    """The selected run of one (seed, method) so far."""

    index: int
    val: float
    test: dict[str, float]
    fresh: dict[str, float]
    test_pred: np.ndarray
    config: dict[str, float]
    best_epoch: int
    epochs_run: int


def device_name(device: torch.device) -> str:
    """The device in words: the GPU's name, or the CPU and its threads."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    threads = torch.get_num_threads()
    return f"CPU ({threads} thread{'s' if threads != 1 else ''})"


def run_referee(
    design: RefereeDesign,
    workdir: Path,
    *,
    render_workers: int = 1,
    on_dataset: Callable[[RefereeResult], None] | None = None,
) -> RefereeResult:
    """Draw the design's datasets, train it on each, score every selected model.

    Args:
        design: what to draw and train.
        workdir: where the phantom caches are written (the caller removes it).
        render_workers: processes rendering datasets ahead of the training (1: in this
            process, when each is needed).
        on_dataset: called with the results so far after each dataset (to save them).

    Returns:
        The :class:`RefereeResult`. ``draws`` has ``dataset``, ``data_seed``, ``seed`` (the
        pairing key), ``split_seed``, ``init_seed`` (`engine.seeds`; both ``seed`` for
        independent seeds), ``train_seed`` (the run's streams: the init seed, offset for the
        twin), ``method``, ``config`` (JSON), ``config_index``, ``n_train``,
        ``n_val``, ``n_test``, ``n_fit`` (train + validation), ``n_fresh``, ``best_epoch``,
        ``epochs_run``, ``val_selection`` and, per metric, ``test_<metric>`` and
        ``fresh_<metric>``.
    """
    started = time.perf_counter()
    device = resolve_device(design.device)
    workdir = Path(workdir)
    workers = max(1, render_workers)
    fresh = build_one(design.fresh_spec(), design.image_size, workdir, workers=workers)
    x_fresh, y_fresh = _graded_films(open_prepared(fresh), design.task, device)
    timings = {"fresh_render_s": time.perf_counter() - started}
    result = RefereeResult(
        draws=pd.DataFrame(),
        boot=pd.DataFrame(),
        device=device_name(device),
        fresh_films=len(y_fresh),
    )
    trainers: dict[str, Trainer] = {}
    rows: list[dict[str, object]] = []
    boots: list[pd.DataFrame] = []
    specs = [design.dataset_spec(k) for k in design.dataset_range]
    caches = dataset_caches(specs, design.image_size, workdir, workers=workers)
    per_dataset: list[float] = []
    try:
        for done, k in enumerate(design.dataset_range):
            if _out_of_time(design, started, per_dataset):
                result.stopped_early = True
                log.info("referee: time limit reached after %d datasets", done)
                break
            t0 = time.perf_counter()
            prepared = open_prepared(next(caches))
            result.render_wait_s += time.perf_counter() - t0
            films = []
            for split_seed, cells in design.cells():
                data = task_split(prepared, make_splits(prepared.meta, split_seed), design.task)
                sizes = _sizes(data, len(y_fresh))
                data = data.to(device)
                patients = _patients_of(prepared, data.test_ids)
                for seed, init_seed in cells:
                    seeds = _Seeds(seed, split_seed, init_seed)
                    for method in design.trained:
                        chosen = _select(
                            design, trainers, device, method, seeds, k, data, x_fresh, y_fresh
                        )
                        rows.append(_row(design, k, seeds, method, sizes, chosen))
                        films.append(_films(design.task, method, seed, patients, data, chosen))
            boots.append(_bootstrap(design, k, pd.concat(films, ignore_index=True)))
            per_dataset.append(time.perf_counter() - t0)
            result.datasets_done = done + 1
            result.draws = pd.DataFrame(rows)
            result.boot = pd.concat(boots, ignore_index=True)
            result.wall_s = time.perf_counter() - started
            log.info(
                "referee: dataset %d (%d of %d) done in %.1f s",
                k,
                done + 1,
                len(design.dataset_range),
                per_dataset[-1],
            )
            if on_dataset is not None:
                on_dataset(result)
    finally:
        caches.close()
    result.wall_s = time.perf_counter() - started
    result.timings = timings | {"mean_dataset_s": float(np.mean(per_dataset or [np.nan]))}
    return result


def _out_of_time(design: RefereeDesign, started: float, per_dataset: list[float]) -> bool:
    """Whether the next dataset, taking as long as the mean so far, would end past the limit."""
    if design.max_minutes is None or not per_dataset:
        return False
    projected = time.perf_counter() - started + float(np.mean(per_dataset))
    return projected > design.max_minutes * 60


def _graded_films(
    prepared: PreparedDataset, task: str, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """The films of a prepared phantom that carry the task's grade, on the device."""
    grades = prepared.meta[LABEL_COLUMNS[task]]
    rows = np.flatnonzero(grades.notna().to_numpy())
    x = torch.from_numpy(np.ascontiguousarray(prepared.images[rows])).unsqueeze(1)
    y = torch.from_numpy(grades.to_numpy()[rows].astype(np.int64))
    return x.to(device), y.to(device)


def _sizes(data: TaskSplit, n_fresh: int) -> dict[str, int]:
    n_train, n_val, n_test = len(data.y_train), len(data.y_val), len(data.y_test)
    return {
        "n_train": n_train,
        "n_val": n_val,
        "n_test": n_test,
        "n_fit": n_train + n_val,
        "n_fresh": n_fresh,
    }


def _patients_of(prepared: PreparedDataset, image_ids: list[str]) -> np.ndarray:
    by_image = prepared.meta.set_index("image_id")["patient_id"]
    return by_image.reindex(image_ids).astype(str).to_numpy()


def _trainer(
    trainers: dict[str, Trainer], design: RefereeDesign, device: torch.device, method: str
) -> Trainer:
    """One trainer per head, kept for every run (one compile, as a slot keeps its own)."""
    head = get_method(method).head
    if head not in trainers:
        trainers[head] = Trainer(
            num_classes=TASK_CLASSES[design.task],
            device=device,
            fast=device.type == "cuda",
            head=head,
        )
    return trainers[head]


def _select(
    design: RefereeDesign,
    trainers: dict[str, Trainer],
    device: torch.device,
    method: str,
    seeds: _Seeds,
    k: int,
    data: TaskSplit,
    x_fresh: torch.Tensor,
    y_fresh: torch.Tensor,
) -> _Selected:
    """Train the method's configurations on one split; keep the one the study would select
    (the best validation value of the selection metric, ties to the lower configuration)."""
    n_classes = TASK_CLASSES[design.task]
    metric = SEARCH_SELECTION.metric_name
    sign = 1.0 if SEARCH_SELECTION.lower_is_better else -1.0
    y_val, y_test = data.y_val.cpu().numpy(), data.y_test.cpu().numpy()
    y_new = y_fresh.cpu().numpy()
    best: _Selected | None = None
    for index, params in enumerate(design.configs(method, seeds.init, k)):
        config = design.train_config(method, seeds.init, params, split_seed=seeds.split, dataset=k)
        trainer = _trainer(trainers, design, device, config.method)
        result = trainer.fit(config, data)
        val = sign * compute_metrics(y_val, result.val_probs, n_classes)[metric]
        if best is not None and not val < best.val:
            continue
        fresh_probs = trainer.score(x_fresh, y_fresh)
        best = _Selected(
            index=index,
            val=val,
            test=compute_metrics(y_test, result.test_probs, n_classes),
            fresh=compute_metrics(y_new, fresh_probs, n_classes),
            test_pred=result.test_probs.argmax(axis=1),
            config=params.as_dict(),
            best_epoch=result.best_epoch,
            epochs_run=result.epochs_run,
        )
    assert best is not None  # every method has at least one configuration
    return best


def _row(
    design: RefereeDesign,
    k: int,
    seeds: _Seeds,
    method: str,
    sizes: dict[str, int],
    chosen: _Selected,
) -> dict[str, object]:
    sign = 1.0 if SEARCH_SELECTION.lower_is_better else -1.0
    return {
        "dataset": k,
        "data_seed": design.dataset_spec(k).seed,
        "seed": seeds.seed,
        "split_seed": seeds.split,
        "init_seed": seeds.init,
        "train_seed": design.train_seed(method, seeds.init, k),
        "method": method,
        "config": json.dumps(chosen.config, sort_keys=True),
        "config_index": chosen.index,
        **sizes,
        "best_epoch": chosen.best_epoch,
        "epochs_run": chosen.epochs_run,
        "val_selection": sign * chosen.val,
        **{test_column(m): chosen.test[m] for m in METRICS},
        **{fresh_column(m): chosen.fresh[m] for m in METRICS},
    }


def _films(
    task: str, method: str, seed: int, patients: np.ndarray, data: TaskSplit, chosen: _Selected
) -> pd.DataFrame:
    """The selected model's test films, as `paired.hierarchical_bootstrap` reads them."""
    return pd.DataFrame(
        {
            "task": task,
            "method": method,
            "seed": seed,
            "patient_id": patients,
            "y_true": data.y_test.cpu().numpy(),
            "y_pred": chosen.test_pred,
        }
    )


def _bootstrap(design: RefereeDesign, k: int, films: pd.DataFrame) -> pd.DataFrame:
    """The film-sampling bootstrap of every pair of one dataset (empty with 0 replicates)."""
    if design.bootstrap == 0:
        return pd.DataFrame()
    table = paired.hierarchical_bootstrap(
        films, metrics=(design.metric,), n_boot=design.bootstrap, seed=design.data_seed + k
    )
    return table.assign(dataset=k)


def default_render_workers() -> int:
    """Rendering processes beside the training: every core but two (the training's own and
    the system's), at least 1."""
    return max(1, (os.cpu_count() or 1) - 2)
