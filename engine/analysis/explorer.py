"""The search explorer and learning curves: what every configuration of a search did.

Each (task, method, seed) search tries up to ``budget`` configurations of the paper's
Table 3 and keeps the one with the lowest validation AMAE. The results pages show only that
one; this module turns every stored run (`store.runs.list_runs`) and every epoch row
(`store.runs.study_epoch_metrics`) into the frames an explorer needs, like the parallel
coordinates and slice plots of optuna-dashboard or W&B sweeps:

* :func:`search_table` — one row per run, hyper-parameters as columns, rank in its search;
* :func:`search_overview` — one row per search: configurations tried, best and worst
  validation AMAE, the one selected;
* :func:`parameter_effects` / :func:`parameter_summary` — each hyper-parameter (learning
  rate, η, α₂, p) against validation AMAE, per run and summarised over seeds;
* :func:`learning_curves`, :func:`overlay`, :func:`mean_curves` — train and validation
  loss and validation AMAE per epoch, best epoch marked, overlaid per method or per seed;
* :func:`in_flight_point` — where a running job's current run is (its latest epoch and
  validation AMAE from the job's progress), for a live marker next to the stored curves.

Pure pandas; every function returns a DataFrame, so pages only render and tests check
numbers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from engine.analysis.metrics import SELECTION_COLUMN, SELECTION_METRIC, get_metric
from engine.methods import hyperparameters, method_sort_key, order_methods
from engine.vocab import TASKS, parse_run_id

logger = logging.getLogger(__name__)

#: The searched hyper-parameters of every registered method, learning rate first.
SEARCH_PARAMS: tuple[str, ...] = tuple(hyperparameters())
PARAM_LABELS: dict[str, str] = {name: h.label for name, h in hyperparameters().items()}
#: Per-epoch series of a learning curve.
CURVE_SERIES: tuple[str, ...] = ("train_loss", "val_loss", "val_amae")
CURVE_LABELS: dict[str, str] = {
    "train_loss": "Training loss",
    "val_loss": "Validation loss",
    "val_amae": "Validation AMAE",
}
SEARCH_KEYS: list[str] = ["study_id", "task", "method", "seed"]
#: What names a run in every frame of this module: its study, id, search and configuration.
RUN_KEYS: tuple[str, ...] = ("study_id", "run_id", "task", "method", "seed", "config_index")
OVERLAYS: tuple[str, ...] = ("method", "seed")


# --------------------------------------------------------------------------------------------
# Every configuration tried
# --------------------------------------------------------------------------------------------


def search_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per stored run with its hyper-parameters as columns.

    Args:
        runs: `store.runs.list_runs` rows (``config`` as JSON text or a mapping).

    Returns:
        Columns study_id, run_id, task, method, seed, config_index, one column per
        :data:`SEARCH_PARAMS` (NaN where the method has no such parameter),
        ``config_key`` (e.g. ``"lr=0.001, eta=0.8"``: the same configuration has the same
        key in every seed), val_amae, ``rank`` (1 = lowest validation AMAE in its search,
        ties to the lower config index, the rule that selects a run; a run a pruned search
        stopped ranks after every run that was not, as it is never selected), epochs_run,
        best_epoch, selected, duration_s, ``pruned``; ordered by study, task, method
        (paper's order), seed, config index.
    """
    columns = [
        *RUN_KEYS,
        *SEARCH_PARAMS,
        "config_key",
        "val_amae",
        "rank",
        "epochs_run",
        "best_epoch",
        "selected",
        "duration_s",
        "pruned",
        "diverged",
    ]
    if runs.empty:
        return pd.DataFrame(columns=columns)
    runs = runs.assign(pruned=stopped_runs(runs), diverged=diverged_runs(runs))
    params = pd.DataFrame(
        [_params(config) for config in runs["config"]], index=runs.index, columns=SEARCH_PARAMS
    ).astype(float)
    out = pd.concat([runs.drop(columns=[c for c in SEARCH_PARAMS if c in runs]), params], axis=1)
    # One key per distinct configuration (a few dozen), not per run.
    distinct = params.groupby(list(SEARCH_PARAMS), sort=False, dropna=False).ngroup()
    first = params.groupby(distinct.to_numpy(), sort=False).head(1)
    rows = zip(distinct[first.index], first.to_dict("records"), strict=True)
    keys = {group: config_key(row) for group, row in rows}
    out["config_key"] = distinct.map(keys)
    out = _ordered(out, [*SEARCH_KEYS, "config_index"])
    # The search's own rule (`store.runs.select_best_runs`): runs a pruner stopped last, then
    # runs that diverged, then the best validation selection metric, ties to the lower config.
    lower_is_better = get_metric(SELECTION_METRIC).lower_is_better
    ascending = [True] * len(SEARCH_KEYS) + [True, True, lower_is_better, True]
    order = [*SEARCH_KEYS, "pruned", "diverged", SELECTION_COLUMN, "config_index"]
    out["rank"] = (
        out.sort_values(order, ascending=ascending, na_position="last")
        .groupby(SEARCH_KEYS, sort=False)
        .cumcount()
        .add(1)
        .reindex(out.index)
    )
    out["selected"] = out["selected"].astype(bool)
    return out[columns].reset_index(drop=True)


def config_key(params: Mapping[str, Any]) -> str:
    """``"lr=0.001, eta=0.8"``: the parameters that are set, in :data:`SEARCH_PARAMS` order."""
    parts = []
    for name in SEARCH_PARAMS:
        value = params.get(name)
        if value is not None and not (isinstance(value, float) and np.isnan(value)):
            parts.append(f"{name}={float(value):g}")
    return ", ".join(parts)


def search_overview(search: pd.DataFrame) -> pd.DataFrame:
    """One row per (study, task, method, seed) search.

    Args:
        search: from :func:`search_table`.

    Returns:
        Columns study_id, task, method, seed, n_configs, n_pruned (runs a pruned search
        stopped), best_val_amae and worst_val_amae (over the runs that trained to their
        end: a stopped run's AMAE is its early epochs'), selected_index, selected_config
        (its ``config_key``), selected_epochs_run, selected_best_epoch, duration_s (all
        runs of the search, summed).
    """
    columns = [
        *SEARCH_KEYS,
        "n_configs",
        "n_pruned",
        "best_val_amae",
        "worst_val_amae",
        "selected_index",
        "selected_config",
        "selected_epochs_run",
        "selected_best_epoch",
        "duration_s",
    ]
    if search.empty:
        return pd.DataFrame(columns=columns)
    search = search.assign(trained_amae=search["val_amae"].where(~stopped_runs(search)))
    grouped = search.groupby(SEARCH_KEYS, sort=False)
    out = grouped.agg(
        n_configs=("run_id", "size"),
        n_pruned=("pruned", "sum"),
        best_val_amae=("trained_amae", "min"),
        worst_val_amae=("trained_amae", "max"),
        duration_s=("duration_s", "sum"),
    )
    out["n_pruned"] = out["n_pruned"].astype(int)
    chosen = search[search["selected"]].set_index(SEARCH_KEYS)
    chosen = chosen[~chosen.index.duplicated()]
    out["selected_index"] = chosen["config_index"].reindex(out.index)
    out["selected_config"] = chosen["config_key"].reindex(out.index)
    out["selected_epochs_run"] = chosen["epochs_run"].reindex(out.index)
    out["selected_best_epoch"] = chosen["best_epoch"].reindex(out.index)
    out = out.reset_index()
    return _ordered(out, SEARCH_KEYS)[columns].reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# Hyper-parameter effects
# --------------------------------------------------------------------------------------------


def parameter_effects(search: pd.DataFrame, params: Sequence[str] = SEARCH_PARAMS) -> pd.DataFrame:
    """Each run once per hyper-parameter it has: the value tried against validation AMAE.

    Args:
        search: from :func:`search_table`.
        params: which hyper-parameters (default all of :data:`SEARCH_PARAMS`).

    Returns:
        Long frame with columns study_id, run_id, task, method, seed, config_index,
        config_key, ``param``, ``value`` (the parameter's value), val_amae, rank,
        selected, pruned; a method without a parameter (nominal has no η) has no row for it.
    """
    keys = [
        *RUN_KEYS,
        "config_key",
        "val_amae",
        "rank",
        "selected",
        "pruned",
        "diverged",
    ]
    unknown = sorted(set(params) - set(SEARCH_PARAMS))
    if unknown:
        raise ValueError(f"unknown hyper-parameters {unknown}; allowed: {', '.join(SEARCH_PARAMS)}")
    if search.empty:
        return pd.DataFrame(columns=[*keys, "param", "value"])
    search = search.assign(pruned=stopped_runs(search), diverged=diverged_runs(search))
    long = search.melt(id_vars=keys, value_vars=list(params), var_name="param", value_name="value")
    long = long.dropna(subset=["value"])
    return long[[*keys[:7], "param", "value", *keys[7:]]].reset_index(drop=True)


def parameter_summary(effects: pd.DataFrame) -> pd.DataFrame:
    """Validation AMAE per value of each hyper-parameter, over every run and seed.

    Args:
        effects: from :func:`parameter_effects`.

    Returns:
        One row per (task, method, param, value): n_runs, n_seeds, n_pruned (runs a pruned
        search stopped), val_amae_mean, val_amae_median and val_amae_std (ddof = 1) over the
        runs that trained to their end (a stopped run's AMAE is its early epochs', not
        comparable; NaN where every run was stopped), n_selected (searches this value won)
        and selected_share (n_selected over the method's searches with that parameter).
    """
    columns = [
        "task",
        "method",
        "param",
        "value",
        "n_runs",
        "n_seeds",
        "n_pruned",
        "val_amae_mean",
        "val_amae_median",
        "val_amae_std",
        "n_selected",
        "selected_share",
    ]
    if effects.empty:
        return pd.DataFrame(columns=columns)
    by = ["task", "method", "param", "value"]
    stopped = stopped_runs(effects)
    out = (
        effects.assign(pruned=stopped, trained_amae=effects["val_amae"].where(~stopped))
        .groupby(by, sort=True)
        .agg(
            n_runs=("run_id", "size"),
            n_seeds=("seed", "nunique"),
            n_pruned=("pruned", "sum"),
            val_amae_mean=("trained_amae", "mean"),
            val_amae_median=("trained_amae", "median"),
            val_amae_std=("trained_amae", "std"),
            n_selected=("selected", "sum"),
        )
        .reset_index()
    )
    out["n_pruned"] = out["n_pruned"].astype(int)
    searches = (
        effects.drop_duplicates([*SEARCH_KEYS, "param"])
        .groupby(["task", "method", "param"])
        .size()
        .rename("n_searches")
    )
    out = out.join(searches, on=["task", "method", "param"])
    out["n_selected"] = out["n_selected"].astype(int)
    out["selected_share"] = out["n_selected"] / out.pop("n_searches")
    return _ordered(out, ["task", "method", "param", "value"])[columns].reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# Learning curves
# --------------------------------------------------------------------------------------------


def learning_curves(epochs: pd.DataFrame) -> pd.DataFrame:
    """Train loss, validation loss and validation AMAE per epoch, one row per point.

    Args:
        epochs: `store.runs.study_epoch_metrics` rows.

    Returns:
        Long frame with columns study_id, run_id, task, method, seed, config_index,
        selected, best_epoch, epoch, ``series`` (one of :data:`CURVE_SERIES`), ``value``
        and ``best`` (True at the run's best epoch, the one whose weights were kept);
        points with no value are left out.
    """
    keys = [*RUN_KEYS, "selected", "best_epoch", "epoch"]
    if epochs.empty:
        return pd.DataFrame(columns=[*keys, "series", "value", "best"])
    long = epochs.melt(
        id_vars=keys, value_vars=list(CURVE_SERIES), var_name="series", value_name="value"
    )
    long = long.dropna(subset=["value"])
    long["best"] = (long["epoch"] == long["best_epoch"]).to_numpy()
    return long.reset_index(drop=True)


#: How far above a panel's upper quartile, in interquartile ranges, a curve value may lie and
#: still set the panel's scale. A diverging epoch (the reference study's validation loss
#: reaches 1.2e9 against a median of 1.35) is drawn at this ceiling and marked instead.
CEILING_IQRS = 5.0
#: A series whose largest value is this many times its median has diverged somewhere.
DIVERGED_TIMES_MEDIAN = 10.0


def clip_diverged(lines: pd.DataFrame, iqrs: float = CEILING_IQRS) -> pd.DataFrame:
    """Each series' ceiling, and the values shown under it, so that diverged epochs do not
    set the scale.

    Args:
        lines: `overlay` rows (``series``, ``value``, ...).
        iqrs: the ceiling's distance above the upper quartile, in interquartile ranges.

    Returns:
        ``lines`` with ``ceiling`` (per series that diverged: upper quartile + ``iqrs`` x
        IQR; otherwise, or when that is higher, the series' largest value), ``clipped``
        (the value lies above it) and ``shown`` (the value, capped at the ceiling).
    """
    if lines.empty:
        return lines.assign(ceiling=np.nan, clipped=False, shown=lines.get("value"))
    values = lines.groupby("series")["value"]
    q1, q3 = values.transform("quantile", 0.25), values.transform("quantile", 0.75)
    top, median = values.transform("max"), values.transform("median")
    # Only a series that diverged (its largest value an order of magnitude past its median)
    # gets a ceiling: a high first epoch of an ordinary curve keeps its place on the scale.
    diverged = top > DIVERGED_TIMES_MEDIAN * median.abs()
    ceiling = np.minimum(q3 + iqrs * (q3 - q1), top).where(diverged, top)
    clipped = lines["value"] > ceiling
    return lines.assign(
        ceiling=ceiling, clipped=clipped, shown=lines["value"].where(~clipped, ceiling)
    )


def clipped_runs(lines: pd.DataFrame) -> pd.DataFrame:
    """Per series, the runs with epochs above the ceiling (`clip_diverged` rows).

    Returns:
        One row per series with clipped epochs: ``series``, ``ceiling``, ``runs`` (how many
        runs), ``epochs`` (how many epochs), ``largest`` (the largest value) and ``lines``
        (the runs' colour labels, sorted).
    """
    hit = lines[lines["clipped"]] if "clipped" in lines else lines.iloc[0:0]
    columns = ["series", "ceiling", "runs", "epochs", "largest", "lines"]
    if hit.empty:
        return pd.DataFrame(columns=columns)
    return (
        hit.groupby("series", sort=False)
        .agg(
            ceiling=("ceiling", "first"),
            runs=("line", "nunique"),
            epochs=("value", "size"),
            largest=("value", "max"),
            lines=("colour", lambda c: sorted(set(map(str, c)), key=_label_order)),
        )
        .reset_index()[columns]
    )


def _label_order(label: str) -> tuple[int, int, str]:
    """Seeds in numeric order ("seed 2" before "seed 10"), methods in the paper's order."""
    if label.startswith("seed ") and label[5:].isdigit():
        return (1, int(label[5:]), label)
    return (0, method_sort_key(label)[0], label)


def overlay(
    curves: pd.DataFrame,
    by: str,
    *,
    task: str,
    method: str | None = None,
    seed: int | None = None,
    series: Sequence[str] = CURVE_SERIES,
) -> pd.DataFrame:
    """The curves of one task to draw together, each line coloured by method or by seed.

    Args:
        curves: from :func:`learning_curves`.
        by: ``"method"`` (every method, one line per run; ``seed`` keeps one seed) or
            ``"seed"`` (one ``method``, one line per seed's run).
        task: the task shown.
        method: the method when ``by="seed"``.
        seed: optionally one seed when ``by="method"``.
        series: which series to keep.

    Returns:
        The matching rows of ``curves`` with ``colour`` (the method, or ``"seed N"``) and
        ``line`` (the run id), methods in the paper's order.

    Raises:
        ValueError: ``by`` is not one of :data:`OVERLAYS`, or ``by="seed"`` without a method.
    """
    if by not in OVERLAYS:
        raise ValueError(f"{by=} must be one of {OVERLAYS}")
    if by == "seed" and method is None:
        raise ValueError("by='seed' overlays the seeds of one method: give method")
    mask = (curves["task"] == task) & curves["series"].isin(list(series))
    if method is not None:
        mask &= curves["method"] == method
    if seed is not None:
        mask &= curves["seed"] == seed
    out = curves[mask]
    colour = out["method"].astype(str) if by == "method" else "seed " + out["seed"].astype(str)
    out = out.assign(colour=colour, line=out["run_id"])
    return _ordered(out, ["study_id", "task", "method", "seed", "config_index"]).reset_index(
        drop=True
    )


def mean_curves(curves: pd.DataFrame, by: Sequence[str] = ("task", "method")) -> pd.DataFrame:
    """The mean curve over runs, epoch by epoch (over the runs still training then).

    Early stopping ends runs at different epochs, so ``n_runs`` falls along the curve.

    Returns:
        Columns ``by``, series, epoch, value (mean), n_runs.
    """
    by = list(by)
    if curves.empty:
        return pd.DataFrame(columns=[*by, "series", "epoch", "value", "n_runs"])
    out = (
        curves.groupby([*by, "series", "epoch"], sort=True)["value"]
        .agg(value="mean", n_runs="size")
        .reset_index()
    )
    return out


def in_flight_point(
    current_run: str | None, current_epoch: int | None, latest_val_amae: float | None
) -> pd.DataFrame:
    """The live point of a running job: its current run's latest validation AMAE.

    The worker stores a run's epochs only when the run ends; meanwhile the job's progress
    (`store.jobs` ``current_run``, ``current_epoch``, ``latest_val_amae``) says where the
    run in training is. A page draws this point beside the stored curves.

    Returns:
        One row shaped like :func:`learning_curves` (series ``val_amae``, ``best`` False),
        or an empty frame when the job reports no epoch or the run id is not SoftGrade's.
    """
    columns = ["run_id", "task", "method", "seed", "config_index", "epoch", "series", "value"]
    key = parse_run_id(current_run) if current_run else None
    if key is None or current_epoch is None or latest_val_amae is None:
        return pd.DataFrame(columns=[*columns, "best"])
    return pd.DataFrame(
        [
            {
                "run_id": current_run,
                "task": key.task,
                "method": key.method,
                "seed": key.seed,
                "config_index": key.config_index,
                "epoch": int(current_epoch),
                "series": "val_amae",
                "value": float(latest_val_amae),
                "best": False,
            }
        ]
    )


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def stopped_runs(frame: pd.DataFrame) -> pd.Series:
    """Which runs a pruned search stopped (none where the frame has no ``pruned`` column:
    runs stored before pruned searches existed)."""
    if "pruned" not in frame:
        return pd.Series(False, index=frame.index)
    return frame["pruned"].fillna(False).astype(bool)


def diverged_runs(frame: pd.DataFrame) -> pd.Series:
    """Which runs diverged (their loss went non-finite; `store.runs` ``diverged_epoch``, or a
    boolean ``diverged`` column); none where the frame has neither (runs stored before)."""
    if "diverged" in frame:
        return frame["diverged"].fillna(False).astype(bool)
    if "diverged_epoch" not in frame:
        return pd.Series(False, index=frame.index)
    return frame["diverged_epoch"].notna()


def _params(config: Any) -> list[float | None]:
    """The searched hyper-parameters of one stored configuration."""
    if not isinstance(config, Mapping):
        try:
            config = json.loads(config) if config else {}
        except (TypeError, json.JSONDecodeError):
            logger.warning("unreadable run config %r", config)
            config = {}
    return [_number(config.get(name)) for name in SEARCH_PARAMS]


def _number(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def _ordered(frame: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Rows sorted by ``keys``, tasks and methods in the paper's order (unknown ones last)."""
    if frame.empty:
        return frame
    sort_keys = []
    for key in reversed(keys):
        # Integer codes of the sorted distinct values keep np.lexsort (and the paper-order
        # lookup, done once per distinct value) off per-row Python string work.
        codes, uniques = pd.factorize(frame[key], sort=True)
        sort_keys.append(codes)
        if key in ("task", "method"):
            order = {v: i for i, v in enumerate(TASKS if key == "task" else order_methods(uniques))}
            rank = np.array([order.get(v, len(order)) for v in uniques], dtype=np.int64)
            sort_keys.append(rank[codes])  # unknown labels last, alphabetical among themselves
    return frame.iloc[np.lexsort(sort_keys)]
