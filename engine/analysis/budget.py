"""Budget-matched comparison: every method re-selected among configurations matched to nominal's.

The paper's search gives nominal 3 configurations, binomial and beta 6, triangular and
exponential 15, and keeps the one with the lowest validation AMAE. The best of more
candidates wins more often whatever the loss, so part of a soft method's lead may be its
larger search. From the stored runs (no retraining), each draw picks, per task, method and
seed, a subset of the method's configurations and selects the lowest validation AMAE among
them (ties to the lower configuration index, as `store.runs.select_best_runs`). Two ways to
match (``match``):

* `COVERAGE` (what the pages use): one configuration at each learning rate of nominal's grid,
  drawn at random among the method's configurations at that rate. Nominal's 3 configurations
  are its whole learning-rate grid; a random 3 of a soft method's 15 can miss the rate it
  trains best at, which handicaps it for a reason nominal never meets. Matching coverage
  gives every method the same rates to choose among, and the same number of configurations.
  A (task, method, seed) whose search has no configuration at some rate of the grid selects
  among the rates it has (`BudgetMatched.uncovered` counts them).
* `COUNT`: a random subset of ``budget`` configurations (all of them when it has no more).

Repeating the draw gives:

* :attr:`BudgetMatched.table`: Table 4 at matched budget (each metric's mean over seeds,
  averaged over draws, with the 2.5–97.5 % range over draws) beside the study's own;
* :attr:`BudgetMatched.paired`: `engine.analysis.paired.paired_table` on each run's expected
  value at matched budget (its metric averaged over the draws, per task, method and seed);
* :attr:`BudgetMatched.draws`: the primary endpoint per draw (AMAE soft − nominal, the
  corrected p and its Holm adjustment over the family of 8), to see how often it would have
  come out significant.

It needs every run's test scores. A study imported from a bundle keeps test predictions of
its selected runs only: :func:`check_test_scores` raises :class:`BudgetUnavailable` then.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.analysis import paired
from engine.analysis.metrics import METRICS, SELECTION_COLUMN, SELECTION_METRIC, get_metric
from engine.methods import order_methods

GROUP = ["task", "method", "seed"]
N_DRAWS = 200
COVERAGE = "coverage"
COUNT = "count"
MATCHES: tuple[str, ...] = (COVERAGE, COUNT)
#: The hyper-parameter whose grid `COVERAGE` matches: every method searches it.
GRID_PARAMETER = "lr"


class BudgetUnavailable(ValueError):
    """The study lacks test scores of runs that budget matching would select."""


@dataclass(frozen=True, eq=False)
class BudgetMatched:
    """Outcome of :func:`budget_matched` (see the module docstring).

    Attributes:
        budget: configurations per (task, method, seed) each method is re-selected among.
        n_draws: random subsets drawn.
        table: one row per task, method and metric: ``configs`` (the method's own search
            size), ``mean_study`` (the study's selection), ``mean_matched``, ``draw_low``,
            ``draw_high``.
        paired: `engine.analysis.paired.paired_table` at matched budget.
        draws: one row per draw, task and soft method: ``draw``, ``task``, ``method``,
            ``mean_diff`` (AMAE soft − nominal), ``p_corrected``, ``p_corrected_holm``.
        match: `COVERAGE` or `COUNT`.
        grid: the learning rates matched (`COVERAGE`; empty for `COUNT`).
        uncovered: (task, method, seed) searches lacking a rate of the grid.
    """

    budget: int
    n_draws: int
    table: pd.DataFrame
    paired: pd.DataFrame
    draws: pd.DataFrame
    match: str = COUNT
    grid: tuple[float, ...] = ()
    uncovered: int = 0


def searched_configurations(runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """The runs scored in a search (those with a validation selection score; every run where
    the column is missing) and how many configurations each method searched: the report's
    budget caveat says the counts, and its inputs ask for the budget-matched check only where
    they differ."""
    searched = runs[runs[SELECTION_COLUMN].notna()] if SELECTION_COLUMN in runs else runs
    return searched, searched.groupby("method")["config_index"].nunique()


def check_test_scores(study_id: str, n_lacking: int, n_runs: int) -> None:
    """Raise :class:`BudgetUnavailable` when some runs have no stored test predictions.

    Args:
        study_id: the study, for the message.
        n_lacking: succeeded runs without test predictions
            (`store.analysis.runs_lacking_test_predictions`).
        n_runs: succeeded runs of the study.
    """
    if n_lacking:
        raise BudgetUnavailable(
            f"study {study_id!r} holds test predictions for {n_runs - n_lacking} of its "
            f"{n_runs} runs (a study imported from a bundle keeps only its selected runs'); "
            "budget matching re-selects among every run's configurations and needs them all. "
            "It works on a study run in this store, or on a bundle exported with every run's "
            "test predictions (`softgrade export STUDY_ID --all-test-predictions -o study.zip` "
            "where the study ran)."
        )


def nominal_budget(runs: pd.DataFrame, baseline: str = paired.BASELINE) -> int:
    """The baseline's configurations per (task, seed): the largest count over its groups."""
    mine = runs[runs["method"] == baseline]
    if mine.empty:
        raise BudgetUnavailable(f"no {baseline} runs to take the budget from")
    return int(mine.groupby(["task", "seed"])["config_index"].nunique().max())


def matched_selections(
    runs: pd.DataFrame, budget: int, *, n_draws: int = N_DRAWS, seed: int = 0
) -> pd.DataFrame:
    """The run each draw selects per task, method and seed.

    Args:
        runs: one row per run: ``run_id``, ``task``, ``method``, ``seed``, ``config_index``,
            ``val_amae``.
        budget: configurations each selection may see.
        n_draws: draws.
        seed: random seed.

    Returns:
        Columns ``draw`` and the ``runs`` columns; one row per draw and group.
    """
    rng = np.random.default_rng(seed)
    base = runs[["run_id", *GROUP, "config_index", SELECTION_COLUMN]].reset_index(drop=True)
    stacked = base.loc[np.tile(np.arange(len(base)), n_draws)].reset_index(drop=True)
    stacked.insert(0, "draw", np.repeat(np.arange(n_draws), len(base)))
    stacked["_key"] = rng.random(len(stacked))
    stacked = stacked.sort_values(["draw", *GROUP, "_key"], kind="stable")
    seen = stacked[stacked.groupby(["draw", *GROUP], sort=False).cumcount() < budget]
    return _best_of(seen).drop(columns="_key").reset_index(drop=True)


def grid_values(runs: pd.DataFrame, parameter: str = GRID_PARAMETER) -> pd.Series:
    """Each run's value of ``parameter`` from its ``config`` (JSON text or a dict), rounded
    to 12 significant digits so that one grid value compares equal to itself; NaN where
    the configuration does not name it."""

    def value(config: object) -> float:
        found = json.loads(config) if isinstance(config, str) else config
        raw = found.get(parameter) if isinstance(found, Mapping) else None
        return float(f"{float(raw):.12g}") if isinstance(raw, int | float) else math.nan

    return runs["config"].map(value).astype(np.float64)


def nominal_grid(
    runs: pd.DataFrame, baseline: str = paired.BASELINE, parameter: str = GRID_PARAMETER
) -> tuple[float, ...]:
    """The learning rates the baseline's searches tried (its whole grid, in the paper).

    Raises:
        BudgetUnavailable: no baseline runs, or none names the parameter.
    """
    mine = runs[runs["method"] == baseline]
    values = grid_values(mine, parameter).dropna() if "config" in mine else pd.Series([])
    if values.empty:
        raise BudgetUnavailable(f"no {baseline} runs with a {parameter} to take the grid from")
    return tuple(sorted(set(values)))


def off_grid_methods(
    runs: pd.DataFrame, grid: Sequence[float], parameter: str = GRID_PARAMETER
) -> list[str]:
    """The methods (display order) none of whose runs tried a value of ``grid``: matching by
    coverage has nothing to select among for them, so they are left out of every
    coverage-matched table. At a search budget of 1 each seed draws its own rate, and a
    method whose draws all missed the baseline's rates is such a method (issue 39: CLM was
    left out of the Robustness tab without a word)."""
    if runs.empty or not grid:
        return []
    on_grid = grid_values(runs, parameter).isin(list(grid)).to_numpy()
    covered = runs.loc[on_grid, "method"].astype(str).unique()
    return order_methods(m for m in runs["method"].astype(str).unique() if m not in covered)


def coverage_selections(
    runs: pd.DataFrame,
    grid: Sequence[float],
    *,
    n_draws: int = N_DRAWS,
    seed: int = 0,
    parameter: str = GRID_PARAMETER,
) -> pd.DataFrame:
    """The run each draw selects per task, method and seed among one configuration drawn at
    each value of ``grid`` (see `COVERAGE`).

    Args:
        runs: one row per run: ``run_id``, ``task``, ``method``, ``seed``, ``config_index``,
            ``config`` and the selection column.
        grid: the learning rates to cover.
        n_draws: draws.
        seed: random seed.
        parameter: the hyper-parameter the grid is of.

    Returns:
        Columns ``draw``, the ``runs`` columns used, and ``covered`` (the search had a
        configuration at every value of the grid); one row per draw and group with a
        configuration at some value of the grid.
    """
    rng = np.random.default_rng(seed)
    base = runs[["run_id", *GROUP, "config_index", SELECTION_COLUMN]].reset_index(drop=True)
    base["_grid"] = grid_values(runs, parameter).to_numpy()
    base = base[base["_grid"].isin(list(grid))].reset_index(drop=True)
    rates = base.groupby(GROUP, sort=False)["_grid"].transform("nunique")
    base["covered"] = rates == len(grid)
    stacked = base.loc[np.tile(np.arange(len(base)), n_draws)].reset_index(drop=True)
    stacked.insert(0, "draw", np.repeat(np.arange(n_draws), len(base)))
    stacked["_key"] = rng.random(len(stacked))
    stacked = stacked.sort_values(["draw", *GROUP, "_grid", "_key"], kind="stable")
    seen = stacked.drop_duplicates(["draw", *GROUP, "_grid"], keep="first")
    chosen = _best_of(seen)
    return chosen.drop(columns=["_key", "_grid"]).reset_index(drop=True)


def _best_of(seen: pd.DataFrame) -> pd.DataFrame:
    """The search's own rule over the configurations seen in each draw: the best validation
    selection metric, ties to the lower configuration index."""
    ascending = [True] * (1 + len(GROUP)) + [get_metric(SELECTION_METRIC).lower_is_better, True]
    best = seen.sort_values(
        ["draw", *GROUP, SELECTION_COLUMN, "config_index"], ascending=ascending, kind="stable"
    )
    return best.drop_duplicates(["draw", *GROUP], keep="first")


def budget_matched(
    per_run_all: pd.DataFrame,
    ratios: Mapping[str, float],
    *,
    budget: int | None = None,
    n_draws: int = N_DRAWS,
    metrics: Sequence[str] = METRICS,
    seed: int = 0,
    match: str = COUNT,
) -> BudgetMatched:
    """Table 4 and the paired tests with every method re-selected at nominal's budget.

    Args:
        per_run_all: `engine.analysis.compare.per_run_metrics` of every run's test counts
            (`store.analysis.all_run_test_counts`), with ``config_index`` and ``val_amae``
            (and ``config`` for `COVERAGE`) and, for the study's own selection,
            ``selected``.
        ratios: task -> ``n_test / n_train``.
        budget: configurations per selection (`COUNT`); None takes nominal's.
        n_draws: random subsets drawn.
        metrics: metric columns.
        seed: random seed.
        match: `COVERAGE` (one configuration per learning rate of nominal's grid) or
            `COUNT` (a random ``budget`` of them).

    Raises:
        ValueError: an unknown ``match``.
        BudgetUnavailable: no nominal runs to take the budget or grid from.
    """
    if match not in MATCHES:
        raise ValueError(f"{match=}; allowed: {MATCHES}")
    grid: tuple[float, ...] = ()
    uncovered = 0
    if match == COVERAGE:
        grid = nominal_grid(per_run_all)
        budget = len(grid)
        chosen = coverage_selections(per_run_all, grid, n_draws=n_draws, seed=seed)
        uncovered = int((~chosen.drop_duplicates(GROUP)["covered"]).sum())
        chosen = chosen.drop(columns="covered")
    else:
        budget = budget or nominal_budget(per_run_all)
        chosen = matched_selections(per_run_all, budget, n_draws=n_draws, seed=seed)
    scored = chosen.merge(per_run_all[["run_id", *metrics]], on="run_id")
    per_draw = scored.groupby(["draw", "task", "method"], sort=False)[list(metrics)].mean()
    expected = scored.groupby(GROUP, sort=False)[list(metrics)].mean().reset_index()
    expected.insert(0, "study_id", _study_of(per_run_all))
    table = _table4(per_run_all, per_draw, metrics)
    paired_at_budget = paired.paired_table(expected, ratios, metrics=metrics)
    draws = _endpoint_draws(scored, ratios)
    return BudgetMatched(budget, n_draws, table, paired_at_budget, draws, match, grid, uncovered)


def coverage_matched_validation(
    runs: pd.DataFrame, *, n_draws: int = N_DRAWS, seed: int = 0
) -> pd.DataFrame:
    """Each method's validation selection metric at coverage-matched budget: the expected
    best of one configuration per learning rate of nominal's grid, beside the best of its
    whole search. Needs only every run's validation score (a bundle keeps it), not its test
    predictions.

    Args:
        runs: one row per run (`store.runs.list_runs`): ``run_id``, ``task``, ``method``,
            ``seed``, ``config_index``, ``config`` and the selection column.

    Returns:
        One row per task and method: ``configs`` (its search size), ``own_best`` (mean over
        seeds of the best of its whole search), ``matched`` (mean over seeds of the expected
        best at matched coverage), ``grid`` (the rates' count), ``uncovered`` (seeds whose
        search lacks a rate).

    Raises:
        BudgetUnavailable: no nominal runs with a learning rate.
    """
    runs = runs[runs[SELECTION_COLUMN].notna()]
    grid = nominal_grid(runs)
    chosen = coverage_selections(runs, grid, n_draws=n_draws, seed=seed)
    per_seed = chosen.groupby(GROUP, sort=False).agg(
        matched=(SELECTION_COLUMN, "mean"), covered=("covered", "first")
    )
    best = get_metric(SELECTION_METRIC).lower_is_better
    own = runs.groupby(GROUP, sort=False)[SELECTION_COLUMN].agg("min" if best else "max")
    per_seed = per_seed.join(own.rename("own_best")).reset_index()
    configs = runs.groupby(["task", "method"], sort=False)["config_index"].nunique()
    table = (
        per_seed.groupby(["task", "method"], sort=False)
        .agg(
            own_best=("own_best", "mean"),
            matched=("matched", "mean"),
            uncovered=("covered", lambda c: int((~c.astype(bool)).sum())),
        )
        .reset_index()
    )
    table.insert(
        2,
        "configs",
        [int(configs[(t, m)]) for t, m in zip(table["task"], table["method"], strict=True)],
    )
    table["grid"] = len(grid)
    return table


def _study_of(per_run_all: pd.DataFrame) -> str:
    """The study the runs belong to (`engine.analysis.compare.score_frame` keeps the column)."""
    return str(per_run_all["study_id"].iloc[0]) if "study_id" in per_run_all else ""


def _table4(
    per_run_all: pd.DataFrame, per_draw: pd.DataFrame, metrics: Sequence[str]
) -> pd.DataFrame:
    configs = per_run_all.groupby(["task", "method"])["config_index"].nunique()
    study = (
        per_run_all[per_run_all["selected"].astype(bool)]
        .groupby(["task", "method"])[list(metrics)]
        .mean()
        if "selected" in per_run_all
        else None
    )
    rows = []
    for (task, method), part in per_draw.groupby(level=["task", "method"], sort=False):
        for metric in metrics:
            values = part[metric].to_numpy()
            rows.append(
                {
                    "task": task,
                    "method": method,
                    "metric": metric,
                    "configs": int(configs[(task, method)]),
                    "mean_study": float(study.loc[(task, method), metric])
                    if study is not None
                    else np.nan,
                    "mean_matched": float(values.mean()),
                    "draw_low": float(np.quantile(values, 0.025)),
                    "draw_high": float(np.quantile(values, 0.975)),
                }
            )
    return pd.DataFrame(rows)


def _endpoint_draws(scored: pd.DataFrame, ratios: Mapping[str, float]) -> pd.DataFrame:
    """AMAE soft − nominal per draw with the corrected p, Holm over the draw's family."""
    metric = paired.PRIMARY_METRIC
    wide = scored.pivot_table(index=["draw", "task", "seed"], columns="method", values=metric)
    soft = [m for m in wide.columns if m != paired.BASELINE]
    rows = []
    for (draw, task), part in wide.groupby(level=["draw", "task"], sort=True):
        for method in soft:
            diffs = (part[method] - part[paired.BASELINE]).dropna().to_numpy()
            test = paired.corrected_resampled_t(diffs, float(ratios[str(task)]))
            rows.append(
                {"draw": draw, "task": task, "method": method, "mean_diff": test.mean,
                 "p_corrected": test.p}
            )  # fmt: skip
    draws = pd.DataFrame(rows)
    draws["p_corrected_holm"] = np.nan
    for _, index in draws.groupby("draw").indices.items():
        p = draws["p_corrected"].to_numpy()[index]
        ok = np.isfinite(p)
        if ok.any():
            draws.loc[draws.index[index[ok]], "p_corrected_holm"] = paired.holm(p[ok])
    return draws
