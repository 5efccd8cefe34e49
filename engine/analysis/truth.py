"""Truth and noise on the phantom: every metric scored against the recorded grades (what the
models trained and are scored on) and against the phantom's noiseless ``true_grade``.

The paper's premise is that soft labels absorb adjacent-grade annotation noise. If so, a soft
method should gain more than nominal when scored against the truth instead of the noisy
record. :func:`recorded_vs_true` gives, per task, method and metric, both means and the shift
(true − recorded), and against the baseline the difference of shifts per seed
``(m_true − m_recorded) − (nominal_true − nominal_recorded)`` with the corrected resampled
t-test (`engine.analysis.paired`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from engine.analysis.compare import task_order
from engine.analysis.metrics import LOWER_IS_BETTER, METRICS
from engine.analysis.paired import BASELINE
from engine.analysis.paired_tests import corrected_resampled_t
from engine.methods import method_sort_key

KEYS = ["task", "method", "seed"]


def recorded_vs_true(
    per_run_recorded: pd.DataFrame,
    per_run_true: pd.DataFrame,
    ratios: Mapping[str, float],
    *,
    metrics: Sequence[str] = METRICS,
) -> pd.DataFrame:
    """Each method's metrics on recorded and on true grades, and its gain over nominal's.

    Args:
        per_run_recorded: `compare.per_run_metrics` of `store.runs.confusion_counts`.
        per_run_true: the same of `store.analysis.true_grade_counts` (empty for real data).
        ratios: task -> ``n_test / n_train``.
        metrics: metric columns.

    Returns:
        One row per task, method and metric: ``n_seeds``, ``mean_recorded``, ``mean_true``,
        ``shift`` (true − recorded), ``better_on_truth`` (the shift is an improvement in the
        metric's direction), and against nominal ``shift_vs_nominal`` (mean over seeds of the
        difference of shifts), ``ci_low``, ``ci_high``, ``p_corrected`` (NaN on nominal's
        rows); empty when no film has a true grade.
    """
    columns = [
        "task", "method", "metric", "n_seeds", "mean_recorded", "mean_true", "shift",
        "better_on_truth", "shift_vs_nominal", "ci_low", "ci_high", "p_corrected",
    ]  # fmt: skip
    if per_run_true.empty:
        return pd.DataFrame(columns=columns)
    both = per_run_recorded[[*KEYS, *metrics]].merge(
        per_run_true[[*KEYS, *metrics]], on=KEYS, suffixes=("_rec", "_true")
    )
    rows = []
    for (task, method), part in both.groupby(["task", "method"], sort=False):
        baseline = both[(both["task"] == task) & (both["method"] == BASELINE)].set_index("seed")
        mine = part.set_index("seed")
        for metric in metrics:
            shift = mine[f"{metric}_true"] - mine[f"{metric}_rec"]
            row = {
                "task": task,
                "method": method,
                "metric": metric,
                "n_seeds": len(mine),
                "mean_recorded": float(mine[f"{metric}_rec"].mean()),
                "mean_true": float(mine[f"{metric}_true"].mean()),
                "shift": float(shift.mean()),
                "better_on_truth": bool(
                    shift.mean() < 0 if metric in LOWER_IS_BETTER else shift.mean() > 0
                ),
                "shift_vs_nominal": np.nan,
                "ci_low": np.nan,
                "ci_high": np.nan,
                "p_corrected": np.nan,
            }
            if method != BASELINE and not baseline.empty:
                base_shift = baseline[f"{metric}_true"] - baseline[f"{metric}_rec"]
                diffs = (shift - base_shift).dropna()
                test = corrected_resampled_t(diffs.to_numpy(), float(ratios[str(task)]))
                row.update(
                    shift_vs_nominal=test.mean,
                    ci_low=test.ci_low,
                    ci_high=test.ci_high,
                    p_corrected=test.p,
                )
            rows.append(row)
    table = pd.DataFrame(rows, columns=columns)
    order = {t: i for i, t in enumerate(task_order(table["task"]))}
    keys = [
        (order[t], method_sort_key(m)) for t, m in zip(table["task"], table["method"], strict=True)
    ]
    return table.iloc[sorted(range(len(table)), key=lambda i: keys[i])].reset_index(drop=True)
