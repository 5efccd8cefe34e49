"""Splits, and the tensors one (task, seed) trains on.

Splits follow the paper (section "Models training"): per (dataset, seed) a stratified 70/30
train/test holdout, then 30 % of train as validation. Both knees of one patient stay on the
same side of every split, and the split is stratified on every knee's KL and CPPD grade (see
`make_splits`), so one split serves every task and method of that seed with about 30 % of
every grade in test.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from engine.datasets.cache import PreparedDataset
from engine.vocab import (
    LABEL_COLUMNS,
    TASK_CLASSES,
    TASK_INFO,
    TEST_FRACTION,
    VAL_FRACTION,
)

if TYPE_CHECKING:  # torch is imported where tensors are made: the cache writer needs none
    import torch

log = logging.getLogger(__name__)

# Rounds of pairwise swaps after the greedy stratification (`_polish`); one or two suffice.
POLISH_PASSES = 3


@dataclass(frozen=True)
class TaskSplit:
    """The tensors of one (task, seed): uint8 images (N, 1, S, S) and int64 grades (N,)."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_val: torch.Tensor
    y_val: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    val_ids: list[str]
    test_ids: list[str]
    num_classes: int

    def to(self, device: torch.device | str) -> TaskSplit:
        """Copy every tensor to ``device`` (the fast path keeps the whole set on the GPU)."""
        moved = {
            name: getattr(self, name).to(device)
            for name in ("x_train", "y_train", "x_val", "y_val", "x_test", "y_test")
        }
        return TaskSplit(
            **moved, val_ids=self.val_ids, test_ids=self.test_ids, num_classes=self.num_classes
        )


def make_splits(meta: pd.DataFrame, seed: int) -> pd.Series:
    """Assign every image to 'train', 'val' or 'test' for one seed (rule `SPLIT_RULE`).

    Patients are the unit of assignment, so both knees of a patient land on the same side.
    Each patient is described by how many of its knees carry each grade of each task (KL 0-4,
    CPPD 0-3); `patient_holdout` picks 30 % of those counts for test, grade by grade, then
    30 % of the rest for validation. Over 20 seeds of the default phantom every grade's test
    share stays within 0.29-0.31 (bench/RESULTS.md), where stratifying on the first knee
    alone spread it over 0.25-0.39.

    A dataset imported with its layout's own test folder kept (a ``given_split`` column of
    'test') has that test set in every seed, with any patient who has a film in it; the
    other patients are split into training and validation as above.

    Returns:
        image_id -> split, in ``meta`` order.
    """
    rng = np.random.default_rng(seed)
    counts = grade_counts(meta)
    # Grade folders whose own test folder was chosen as the test set fix those patients.
    given = _given_test_patients(meta)
    if given:
        test = counts.index.isin(sorted(given))
    else:
        test = patient_holdout(counts, TEST_FRACTION, rng)
    rest = counts[~test]
    val = patient_holdout(rest, VAL_FRACTION, rng)
    by_patient = pd.Series("train", index=counts.index)
    by_patient[test] = "test"
    by_patient[rest.index[val]] = "val"
    return pd.Series(
        meta["patient_id"].map(by_patient).to_numpy(),
        index=meta["image_id"].to_numpy(),
        name="split",
    )


def _given_test_patients(meta: pd.DataFrame) -> set[str]:
    """Patients with a film the import fixed as test (none without a ``given_split``)."""
    if "given_split" not in meta:
        return set()
    marked = meta["given_split"].fillna("").astype(str) == "test"
    return set(meta.loc[marked, "patient_id"].astype(str))


def grade_counts(meta: pd.DataFrame) -> pd.DataFrame:
    """Per patient (sorted by id), how many of its films carry each grade of each task.

    Returns:
        One row per patient, one column per (task, grade) such as ``KL 4`` or ``CPPD 0``.
    """
    columns = {}
    for task, info in TASK_INFO.items():
        grades = meta[info.column] if info.column in meta else pd.Series(pd.NA, index=meta.index)
        for grade in info.grades:
            columns[f"{task} {grade}"] = (grades == grade).fillna(False).astype(np.int64)
    frame = pd.DataFrame(columns, index=meta.index)
    return frame.groupby(meta["patient_id"].astype(str).to_numpy(), sort=True).sum()


def patient_holdout(counts: pd.DataFrame, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Pick patients so that about ``fraction`` of every grade's films are picked.

    Iterative stratification (Sechidis, Tsoumakas and Vlahavas, 2011) with patients as the
    samples and their grade counts as labels: the grade with the fewest films still unplaced
    goes first; each of its patients, in random order, joins the side (picked or not) that
    still wants most films of that grade, ties going to the side that wants most films in
    all. Rare grades are thus placed while both sides still have room for them. Patients with
    no grade at all fill the sides by film count last.

    Args:
        counts: `grade_counts`' frame (patients × grades).
        fraction: the share to pick, e.g. 0.3.
        rng: draws the order of patients and breaks exact ties.

    Returns:
        Boolean mask over ``counts``' rows: True for picked patients.
    """
    matrix = counts.to_numpy(dtype=np.float64)
    films = matrix.sum(axis=1)
    shares = np.array([fraction, 1.0 - fraction])
    wanted = shares[:, None] * matrix.sum(axis=0)[None, :]  # (2 sides, grades)
    wanted_films = shares * films.sum()
    side = np.full(len(matrix), -1)
    while True:
        open_ = side < 0
        left = matrix[open_].sum(axis=0)
        if not (left > 0).any():
            break
        grade = int(np.argmin(np.where(left > 0, left, np.inf)))
        members = np.flatnonzero(open_ & (matrix[:, grade] > 0))
        for patient in rng.permutation(members):
            chosen = _neediest(wanted[:, grade], wanted_films, rng)
            side[patient] = chosen
            wanted[chosen] -= matrix[patient]
            wanted_films[chosen] -= films[patient]
    for patient in rng.permutation(np.flatnonzero(side < 0)):
        side[patient] = _neediest(wanted_films, wanted_films, rng)
        wanted_films[side[patient]] -= max(films[patient], 1.0)
    return _polish(matrix, side == 0, fraction, rng)


def _polish(
    matrix: np.ndarray, picked: np.ndarray, fraction: float, rng: np.random.Generator
) -> np.ndarray:
    """Swap picked and unpicked patients while that brings every grade's picked count closer
    to its share (the greedy pass can overshoot the grades it places last by a patient or
    two on small datasets). Minimises sum over grades of (picked - wanted)^2 / films."""
    totals = matrix.sum(axis=0)
    weight = 1.0 / np.maximum(totals, 1.0)
    picked = picked.copy()
    error = matrix[picked].sum(axis=0) - fraction * totals
    for _ in range(POLISH_PASSES):
        swapped = False
        others = np.flatnonzero(~picked)
        unpicked = matrix[others]
        for patient in rng.permutation(np.flatnonzero(picked)):
            delta = unpicked - matrix[patient]
            change = delta @ (2 * error * weight) + (delta**2) @ weight
            best = int(np.argmin(change))
            if change[best] < -1e-9:
                error += delta[best]
                picked[patient], picked[others[best]] = False, True
                others[best], unpicked[best] = patient, matrix[patient]
                swapped = True
        if not swapped:
            break
    return picked


def _neediest(want: np.ndarray, want_films: np.ndarray, rng: np.random.Generator) -> int:
    """The side (0 or 1) that wants most, ties to the side wanting most films, then at random."""
    for a, b in ((want[0], want[1]), (want_films[0], want_films[1])):
        if a != b:
            return 0 if a > b else 1
    return int(rng.integers(2))


def check_split_sizes(meta: pd.DataFrame, seeds: tuple[int, ...], tasks: tuple[str, ...]) -> None:
    """Refuse, before any training, a dataset whose split leaves a task without films.

    Raises:
        ValueError: Some seed's split leaves a task with no train, validation or test film
            (a small or lopsided dataset); the message names the seed, task and set.
    """
    for seed in seeds:
        split = make_splits(meta, seed).reindex(meta["image_id"]).to_numpy()
        for task in tasks:
            graded = meta[LABEL_COLUMNS[task]].notna().to_numpy()
            for name, label in (("train", "training"), ("val", "validation"), ("test", "test")):
                if not (graded & (split == name)).any():
                    raise ValueError(
                        f"task {task}: seed {seed}'s split leaves no {label} film with a {task} "
                        f"grade ({int(graded.sum())} films have one); the dataset needs more "
                        "films with this grade, or leave the task out"
                    )


def task_split(data: PreparedDataset, splits: pd.Series, task: str) -> TaskSplit:
    """The images of ``task`` (those with its grade) divided by ``splits``."""
    import torch

    column = LABEL_COLUMNS[task]
    meta = data.meta
    has_grade = meta[column].notna().to_numpy()
    split_of = splits.reindex(meta["image_id"]).to_numpy()
    parts = {}
    for name in ("train", "val", "test"):
        rows = np.flatnonzero(has_grade & (split_of == name))
        x = torch.from_numpy(np.ascontiguousarray(data.images[rows])).unsqueeze(1)
        y = torch.from_numpy(meta[column].to_numpy()[rows].astype(np.int64))
        parts[name] = (x, y, meta["image_id"].to_numpy()[rows].tolist())
    if len(parts["train"][1]) == 0 or len(parts["val"][1]) == 0 or len(parts["test"][1]) == 0:
        raise ValueError(
            f"task {task}: the split left an empty train, validation or test set; "
            "the dataset needs more images with this grade"
        )
    return TaskSplit(
        x_train=parts["train"][0],
        y_train=parts["train"][1],
        x_val=parts["val"][0],
        y_val=parts["val"][1],
        x_test=parts["test"][0],
        y_test=parts["test"][1],
        val_ids=parts["val"][2],
        test_ids=parts["test"][2],
        num_classes=TASK_CLASSES[task],
    )
