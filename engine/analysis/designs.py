"""Designs that match the data: every method runs on the same split of each seed, so the
seed is a block.

* :func:`seed_blocked_anova`: per task, the repeated-measures ANOVA of a metric on method
  with the seed as the subject (``statsmodels.stats.anova.AnovaRM``) and the
  Greenhouse–Geisser correction for non-sphericity (:func:`greenhouse_geisser_epsilon`),
  beside the paper's OLS two-way ANOVA (`engine.analysis.stats.two_way_anova`, which treats
  the 200 runs as independent); both with partial η². Per task, not pooled: the 4-grade
  CPPD and the 5-grade KL score AMAE on different scales.
* :func:`friedman_table`: Friedman's test per task and metric, the omnibus for paired data
  (the Statistics page's Kruskal–Wallis assumes independent samples), with Kendall's W.
* :func:`critical_differences`: the critical-difference ranking (`engine.analysis.ranking`) of every
  grade metric, not only of the probability metrics.

Both the blocked ANOVA and Friedman still treat the seeds as independent blocks; the seeds'
shared films are what `engine.analysis.paired`'s corrected test accounts for. Every result
here is exploratory (:data:`SEEDS_INDEPENDENT`).
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

ALPHA = 0.05
#: What every seed-blocked design here assumes, for the views that show one.
SEEDS_INDEPENDENT = (
    "Treats the seeds as independent blocks, which they are not (they resample the same "
    "films), so its p-values are too small; exploratory."
)
BLOCKED_COLUMNS = [
    "task", "factor", "n_seeds", "F", "num_df", "den_df", "p", "gg_epsilon", "p_gg",
    "partial_eta2",
]  # fmt: skip


def partial_eta_squared(f_value: float, df_effect: float, df_error: float) -> float:
    """Partial η² from an F test: ``F·df1 / (F·df1 + df2)`` (= SS_effect / (SS_effect +
    SS_error) of that effect's error stratum)."""
    return float(f_value * df_effect / (f_value * df_effect + df_error))


def greenhouse_geisser_epsilon(wide: np.ndarray) -> float:
    """Greenhouse–Geisser ε of a one-way repeated-measures design.

    Args:
        wide: ``(n_subjects, k)`` values, one column per level of the within factor.

    Returns:
        ``ε = tr(Σ*)² / ((k − 1) tr(Σ*²))`` with ``Σ*`` the double-centred sample covariance
        of the levels (Greenhouse & Geisser 1959); 1 under sphericity, down to ``1/(k − 1)``.
        1 for two levels; NaN when the covariance is zero.
    """
    k = wide.shape[1]
    if k < 3:
        return 1.0
    centre = np.eye(k) - np.full((k, k), 1.0 / k)
    sigma = centre @ np.cov(wide, rowvar=False, ddof=1) @ centre
    denominator = (k - 1) * np.trace(sigma @ sigma)
    if not denominator > 0:
        return float("nan")
    return float(np.trace(sigma) ** 2 / denominator)


def seed_blocked_anova(scores_with_task: pd.DataFrame) -> engine_stats.TestResult:
    """Per task, the repeated-measures ANOVA of ``value`` on method, seed as the subject,
    with the Greenhouse–Geisser correction.

    Only seeds with a value for every method of the task enter (AnovaRM needs a balanced
    design); the note counts the seeds left out. Tasks are not pooled: their metrics have
    different scales (AMAE of 4 vs 5 grades), so a method × task interaction would mix a
    scale difference into the method effect.

    Args:
        scores_with_task: long frame with ``method``, ``task``, ``seed``, ``value``.

    Returns:
        One row per task (:data:`BLOCKED_COLUMNS`): ``factor`` ("Method"), ``n_seeds``,
        ``F``, ``num_df``, ``den_df``, ``p`` (sphericity assumed), ``gg_epsilon``, ``p_gg``
        (both dfs times ε), ``partial_eta2``; an empty table and a note when no task has 2
        methods and 2 seeds that ran all of them.
    """
    data = scores_with_task[["method", "task", "seed", "value"]].dropna()
    rows, notes = [], []
    for task in compare.task_order(data["task"].unique()):
        part = data[data["task"] == task]
        wide = part.pivot_table(index="seed", columns="method", values="value", aggfunc="first")
        complete = wide.dropna()
        if left_out := len(wide) - len(complete):
            notes.append(f"{task}: {left_out} seeds without every method were left out.")
        if len(complete) < 2 or complete.shape[1] < 2:
            continue
        rows.append(_one_way_rm(str(task), complete))
    table = pd.DataFrame(rows, columns=BLOCKED_COLUMNS)
    note = " ".join(notes) or None
    if table.empty:
        problem = "The seed-blocked ANOVA needs 2 methods and 2 seeds that ran all of them."
        return engine_stats.TestResult(table=table, reading=problem, note=problem)
    return engine_stats.TestResult(table=table, reading=_blocked_reading(table), note=note)


def _one_way_rm(task: str, wide: pd.DataFrame) -> dict[str, object]:
    """One task's row: AnovaRM's F and dfs, the GG-corrected p, partial η²."""
    long = wide.reset_index().melt(id_vars="seed", var_name="method", value_name="value")
    frame = AnovaRM(long, depvar="value", subject="seed", within=["method"]).fit().anova_table
    f_value = float(frame["F Value"].iloc[0])
    df1, df2 = float(frame["Num DF"].iloc[0]), float(frame["Den DF"].iloc[0])
    epsilon = greenhouse_geisser_epsilon(wide.to_numpy(dtype=np.float64))
    return {
        "task": task,
        "factor": "Method",
        "n_seeds": len(wide),
        "F": f_value,
        "num_df": df1,
        "den_df": df2,
        "p": float(frame["Pr > F"].iloc[0]),
        "gg_epsilon": epsilon,
        "p_gg": float(sps.f.sf(f_value, epsilon * df1, epsilon * df2)),
        "partial_eta2": partial_eta_squared(f_value, df1, df2),
    }


def _blocked_reading(table: pd.DataFrame) -> str:
    """One sentence per task, the GG-corrected p first."""
    parts = []
    for row in table.to_dict("records"):
        verdict = (
            "the methods differ" if row["p_gg"] < ALPHA else "no method difference is detected"
        )
        parts.append(
            f"{row['task']}: {verdict} (F = {row['F']:.3g}, Greenhouse–Geisser p = "
            f"{row['p_gg']:.2g}, ε = {row['gg_epsilon']:.2f}, partial η² = "
            f"{row['partial_eta2']:.2f}, {row['n_seeds']} seeds)"
        )
    return (
        "With the seed as a block (repeated-measures ANOVA per task): "
        + "; ".join(parts)
        + ". "
        + SEEDS_INDEPENDENT
    )


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
