"""Splits: 70/30 holdout, 30 % validation, stratified, patients on one side."""

from __future__ import annotations

import pytest

from engine.data import make_splits
from tests.conftest import meta_frame


def test_split_fractions_are_close_to_the_papers():
    meta = meta_frame(200)
    counts = make_splits(meta, seed=0).value_counts(normalize=True)
    assert abs(counts["test"] - 0.30) < 0.03
    assert abs(counts["val"] - 0.21) < 0.03


def test_both_knees_of_a_patient_share_a_split():
    meta = meta_frame(100)
    splits = make_splits(meta, seed=1)
    per_patient = meta.assign(split=splits.to_numpy()).groupby("patient_id")["split"].nunique()
    assert (per_patient == 1).all()


def test_same_seed_same_split_other_seed_other_split():
    meta = meta_frame(100)
    assert make_splits(meta, 2).equals(make_splits(meta, 2))
    assert not make_splits(meta, 2).equals(make_splits(meta, 3))


def test_split_is_stratified_on_the_grade():
    meta = meta_frame(400)
    splits = make_splits(meta, seed=0)
    joint = meta.assign(split=splits.to_numpy()).dropna(subset=["kl"])
    share = joint.groupby("kl")["split"].apply(lambda s: (s == "test").mean())
    assert share.between(0.2, 0.4).all()


def test_split_sizes_are_checked_for_every_seed_and_task():
    from engine.data import check_split_sizes

    meta = meta_frame(n_patients=40)
    check_split_sizes(meta, (0, 1, 2), ("KL", "CPPD"))  # enough films: no error
    few = meta.head(6)  # three patients: no room for train, validation and test
    with pytest.raises(ValueError, match=r"task KL: seed 0's split leaves no \w+ film"):
        check_split_sizes(few, (0,), ("KL",))
