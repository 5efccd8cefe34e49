"""Per-class test (and validation) shares of `engine.datasets.make_splits` over many seeds on the
default phantom: how evenly each grade of each task is split.

    python bench/split_shares.py --seeds 20

Prints min / mean / max over seeds of each class's share of films in test and in
validation, with the class sizes (films with that grade).
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from engine.datasets import make_splits
from engine.phantom import PhantomSpec, phantom_labels
from engine.vocab import SPLIT_RULE, TASK_INFO


def shares(meta: pd.DataFrame, seeds: range) -> pd.DataFrame:
    """One row per (seed, task, grade): films, test share, validation share."""
    rows = []
    for seed in seeds:
        split = make_splits(meta, seed).reindex(meta["image_id"]).to_numpy()
        frame = meta.assign(split=split)
        assert (frame.groupby("patient_id")["split"].nunique() == 1).all(), seed
        for task, info in TASK_INFO.items():
            graded = frame.dropna(subset=[info.column])
            for grade, group in graded.groupby(info.column):
                rows.append(
                    {
                        "seed": seed,
                        "class": f"{task} {int(grade)}",
                        "films": len(group),
                        "test": float((group["split"] == "test").mean()),
                        "val": float((group["split"] == "val").mean()),
                    }
                )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    meta = phantom_labels(PhantomSpec(n_images=2170, n_joint=970, seed=0))
    t0 = time.perf_counter()
    table = shares(meta, range(args.seeds))
    per_seed_s = (time.perf_counter() - t0) / args.seeds
    summary = table.groupby("class", sort=False).agg(
        films=("films", "first"),
        test_min=("test", "min"),
        test_mean=("test", "mean"),
        test_max=("test", "max"),
        val_min=("val", "min"),
        val_max=("val", "max"),
    )
    print(f"rule: {SPLIT_RULE}; {args.seeds} seeds; {per_seed_s:.2f} s per split")
    print(summary.to_string(float_format=lambda v: f"{v:.3f}"))
    big = summary[summary["films"] >= 30]
    inside = big["test_min"].ge(0.27).all() and big["test_max"].le(0.33).all()
    print(f"every class with >= 30 films within 0.27-0.33 in test: {inside}")


if __name__ == "__main__":
    main()
