"""Designs that match the data: every method runs on the same split of each seed, so the
seed is a block.

* :func:`seed_blocked_anova`: the repeated-measures ANOVA of a metric on method × task with
  the seed as the subject (``statsmodels.stats.anova.AnovaRM``), beside the paper's OLS
  two-way ANOVA (`engine.analysis.stats.two_way_anova`, which treats the 200 runs as independent);
  both with partial η².
* :func:`friedman_table`: Friedman's test per task and metric, the omnibus for paired data
  (the Statistics page's Kruskal–Wallis assumes independent samples), with Kendall's W.
* :func:`critical_differences`: the critical-difference ranking (`engine.analysis.ranking`) of every
  grade metric, not only of the probability metrics.

Both the blocked ANOVA and Friedman still treat the seeds as independent blocks; the seeds'
shared films are what `engine.analysis.paired`'s corrected test accounts for.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps
from statsmodels.stats.anova import AnovaRM

from engine.analysis import compare, ranking
from engine.analysis import stats as engine_stats
from engine.analysis.metrics import LOWER_IS_BETTER, METRICS

_RM_FACTORS = {"method": "Method", "task": "Task", "method:task": "Method × Task"}
ALPHA = 0.05


def partial_eta_squared(f_value: float, df_effect: float, df_error: float) -> float:
    """Partial η² from an F test: ``F·df1 / (F·df1 + df2)`` (= SS_effect / (SS_effect +
    SS_error) of that effect's error stratum)."""
    return float(f_value * df_effect / (f_value * df_effect + df_error))


def seed_blocked_anova(scores_with_task: pd.DataFrame) -> engine_stats.TestResult:
    """Repeated-measures ANOVA of ``value`` on method × task, seed as the subject.

    Only seeds with a value for every method and task enter (AnovaRM needs a balanced
    design); the note counts the seeds left out.

    Args:
        scores_with_task: long frame with ``method``, ``task``, ``seed``, ``value``.

    Returns:
        Rows ``Method``, ``Task``, ``Method × Task`` (``Method`` only for a one-task study)
        with columns ``factor``, ``F``, ``num_df``, ``den_df``, ``p``, ``partial_eta2``; an
        empty table and a note when fewer than 2 complete seeds or 2 methods remain.
    """
    columns = ["factor", "F", "num_df", "den_df", "p", "partial_eta2"]
    data = scores_with_task[["method", "task", "seed", "value"]].dropna()
    cells = data["method"].nunique() * data["task"].nunique()
    per_seed = data.groupby("seed").size()
    complete = per_seed[per_seed == cells].index
    left_out = int((per_seed != cells).sum())
    data = data[data["seed"].isin(complete)]
    note = f"{left_out} seeds without every method and task were left out." if left_out else None
    # One task (a KL-only study): the one-way repeated-measures ANOVA of method.
    within = [f for f in ("method", "task") if data[f].nunique() > 1]
    if len(complete) < 2 or "method" not in within:
        problem = "The seed-blocked ANOVA needs 2 methods and 2 seeds that ran all of them."
        return engine_stats.TestResult(
            table=pd.DataFrame(columns=columns), reading=problem, note=problem
        )
    fitted = AnovaRM(data, depvar="value", subject="seed", within=within).fit()
    frame = fitted.anova_table
    table = pd.DataFrame(
        {
            "factor": [_RM_FACTORS[name] for name in frame.index],
            "F": frame["F Value"].to_numpy(),
            "num_df": frame["Num DF"].to_numpy(),
            "den_df": frame["Den DF"].to_numpy(),
            "p": frame["Pr > F"].to_numpy(),
        }
    )
    table["partial_eta2"] = [
        partial_eta_squared(f, a, b)
        for f, a, b in zip(table["F"], table["num_df"], table["den_df"], strict=True)
    ]
    by_factor = table.set_index("factor")
    tested = "Method × Task" if "Method × Task" in by_factor.index else "Method"
    row = by_factor.loc[tested]
    if tested == "Method":
        verdict = "the methods differ" if row["p"] < ALPHA else "no method difference is detected"
    elif row["p"] < ALPHA:
        verdict = "the method differences depend on the task"
    else:
        verdict = "no method × task interaction is detected"
    reading = (
        f"With the seed as a block (repeated-measures ANOVA over {len(complete)} seeds), "
        f"{verdict} (F = {row['F']:.3g}, p = {row['p']:.2g}, partial η² = "
        f"{row['partial_eta2']:.2f})."
    )
    return engine_stats.TestResult(table=table, reading=reading, note=note)


def ols_anova_with_effect_sizes(scores_with_task: pd.DataFrame) -> engine_stats.TestResult:
    """The paper's OLS two-way ANOVA (`engine.analysis.stats.two_way_anova`, labelled "as in the
    paper") with partial η² = SS_effect / (SS_effect + SS_residual) added."""
    result = engine_stats.two_way_anova(scores_with_task)
    table = result.table.copy()
    if table.empty:
        return result
    residual = float(table.loc[table["factor"] == "Residual", "SS"].iloc[0])
    table["partial_eta2"] = [
        np.nan if f == "Residual" else ss / (ss + residual)
        for f, ss in zip(table["factor"], table["SS"], strict=True)
    ]
    return engine_stats.TestResult(table=table, reading=result.reading, note=result.note)


def friedman_table(per_run: pd.DataFrame, metrics: Sequence[str] = METRICS) -> pd.DataFrame:
    """Friedman's test of "all methods rank alike" per task and metric, seeds as blocks.

    Returns:
        One row per task and metric: ``task``, ``metric``, ``n_methods``, ``n_blocks``
        (seeds every method ran), ``chi2``, ``p``, ``kendall_w`` (``chi2 / (n (k − 1))``,
        0 = no agreement among seeds on the ranking, 1 = every seed ranks alike); NaN
        statistics with fewer than 3 methods or 2 blocks.
    """
    rows = []
    for task in compare.task_order(per_run["task"].unique()):
        for metric in metrics:
            scores = compare.score_frame(per_run, metric, [task])
            wide = scores.pivot_table(index="seed", columns="method", values="value").dropna()
            k, n = wide.shape[1], wide.shape[0]
            chi2 = p = w = np.nan
            if k >= ranking.MIN_METHODS and n >= ranking.MIN_BLOCKS and np.ptp(wide.to_numpy()):
                result = sps.friedmanchisquare(*wide.to_numpy().T)
                chi2, p = float(result.statistic), float(result.pvalue)
                w = chi2 / (n * (k - 1))
            rows.append(
                {
                    "task": task,
                    "metric": metric,
                    "n_methods": k,
                    "n_blocks": n,
                    "chi2": chi2,
                    "p": p,
                    "kendall_w": w,
                }
            )
    return pd.DataFrame(rows)


def critical_differences(
    per_run: pd.DataFrame, metrics: Sequence[str] = METRICS, *, alpha: float = ALPHA
) -> dict[tuple[str, str], ranking.CriticalDifference]:
    """The critical-difference ranking of every grade metric per task.

    Returns:
        (task, metric) -> `engine.analysis.ranking.CriticalDifference`, ranked with the metric's own
        direction (lower is better for MAE, AMAE, MMAE; higher for QWK, MS, BA).
    """
    out = {}
    for task in compare.task_order(per_run["task"].unique()):
        for metric in metrics:
            scores = compare.score_frame(per_run, metric, [task])[["method", "seed", "value"]]
            out[(task, metric)] = ranking.critical_difference(
                scores, lower_is_better=metric in LOWER_IS_BETTER, alpha=alpha
            )
    return out
