"""Synthetic per-seed predictions, as the worker stores them."""

from __future__ import annotations

import numpy as np
import pandas as pd


def synthetic_predictions(seed: int = 0) -> pd.DataFrame:
    """Per-image predictions of 2 tasks × 3 methods × 4 seeds with method-dependent noise."""
    rng = np.random.default_rng(seed)
    rows = []
    quality = {"nominal": 0.4, "beta": 0.7, "triangular": 0.6}
    for task, n_classes in (("KL", 5), ("CPPD", 4)):
        for method, exact in quality.items():
            for s in range(4):
                y_true = rng.integers(0, n_classes, 60)
                noise = rng.integers(-1, 2, 60) * (rng.random(60) > exact)
                y_pred = np.clip(y_true + noise, 0, n_classes - 1)
                rows.append(
                    pd.DataFrame(
                        {
                            "study_id": "st",
                            "run_id": f"{task}-{method}-{s}",
                            "task": task,
                            "method": method,
                            "seed": s,
                            "y_true": y_true,
                            "y_pred": y_pred,
                        }
                    )
                )
    return pd.concat(rows, ignore_index=True)


def confusion_counts_of(images: pd.DataFrame) -> pd.DataFrame:
    """Per-image predictions counted per run and (true, predicted) grade pair."""
    keys = ["study_id", "run_id", "task", "method", "seed", "y_true", "y_pred"]
    return images.groupby(keys).size().rename("n").reset_index()
