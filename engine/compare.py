"""Method comparison: per-run test metrics and the paper's Table 4 from confusion counts.

Input is a long frame of (run, y_true, y_pred, n) counts, as `store.runs.confusion_counts`
returns, so metrics are computed for thousands of runs at once.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.config import TASK_CLASSES
from engine.metrics import METRICS, confusion_matrices, metrics_from_confusion

RUN_KEYS = ["study_id", "run_id", "task", "method", "seed"]


def per_run_metrics(counts: pd.DataFrame) -> pd.DataFrame:
    """One row per run with the six test metrics.

    Args:
        counts: Columns study_id, run_id, task, method, seed, y_true, y_pred, n.
    """
    if counts.empty:
        return pd.DataFrame(columns=[*RUN_KEYS, *METRICS])
    frames = []
    for task, part in counts.groupby("task", sort=True):
        runs = part[RUN_KEYS].drop_duplicates("run_id").reset_index(drop=True)
        index = pd.Series(np.arange(len(runs)), index=runs["run_id"])
        cm = confusion_matrices(
            index[part["run_id"]].to_numpy(),
            part["y_true"].to_numpy(),
            part["y_pred"].to_numpy(),
            n_runs=len(runs),
            n_classes=TASK_CLASSES[str(task)],
            weights=part["n"].to_numpy(),
        )
        values = metrics_from_confusion(cm)
        frames.append(runs.assign(**{m: values[m] for m in METRICS}))
    return pd.concat(frames, ignore_index=True)


def metrics_table(per_run: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds per (task, method): columns ``<metric>_mean``/``_std``, n_seeds."""
    grouped = per_run.groupby(["task", "method"], sort=True)
    table = grouped[list(METRICS)].agg(["mean", "std"])
    table.columns = [f"{m}_{stat}" for m, stat in table.columns]
    table["n_seeds"] = grouped["seed"].nunique()
    return table.reset_index()
