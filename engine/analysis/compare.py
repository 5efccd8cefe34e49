"""Method comparison: per-run test metrics, the paper's Table 4, confusion matrices.

Input is a long frame of (run, y_true, y_pred, n) counts, as `store.runs.confusion_counts`
returns, so metrics are computed for thousands of runs at once. Everything here is pandas /
numpy and returns DataFrames, arrays or plain values; how they read on a page (text, LaTeX,
CSV, styled tables) is `pages/present/tables.py`'s business.

Conventions:

* **Table 4** (`summary_table`): mean and sample standard deviation (ddof = 1) over seeds of
  each metric per (task, method). The "Average" row of a task is the mean of the methods'
  means and the mean of their standard deviations, which is how the paper's Average rows
  are computed (e.g. CPPD QWK: mean of 0.571, 0.771, 0.790, 0.796, 0.757 = 0.737 and mean of
  the stds = 0.057).
* **Best / second** (`rank_marks`): per task and metric, among the methods (never the Average
  row or the paper's rows), on the values as displayed (rounded to ``digits``), highest for
  QWK, MS, BA and lowest for MAE, AMAE, MMAE; ties share a mark, and
  nothing is marked when all methods show the same value.
* **Several studies**: a method run in more than one selected study is shown once per study,
  as ``"<method> · <study name>"`` (`label_methods`); ``base_method`` keeps the plain name.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.analysis.metrics import (
    LOWER_IS_BETTER,
    METRICS,
    PRIMARY_METRIC,
    confusion_matrices,
    metrics_from_confusion,
)
from engine.methods import (
    grid_size,
    is_registered,
    method_sort_key,
    order_methods,
    paper_methods,
)
from engine.vocab import LABEL_SEPARATOR, TASK_CLASSES

logger = logging.getLogger(__name__)

COUNT_COLUMNS = ("y_true", "y_pred", "n")
TASK_ORDER: tuple[str, ...] = ("CPPD", "KL")  # the paper lists CPPD first
AVERAGE = "Average"
# ../shared/reference next to the repository, as the project lays it out.
# The paper's published Table 4 (a copy of shared/reference/paper_table4.csv) ships inside
# this package, so an installed SoftGrade shows the published row too.
REFERENCE_DIR = Path(str(resources.files("engine.analysis")))
PUBLISHED_FILE = "paper_table4.csv"
PUBLISHED_SEEDS = 20  # Table 4 reports 20 seeds

# Kinds of Table 4 rows (the ``row`` column).
ROW_METHOD = "method"
ROW_AVERAGE = "average"
ROW_PAPER = "paper"
ROW_PAPER_AVERAGE = "paper average"


# --------------------------------------------------------------------------------------------
# Per-run metrics and method labels
# --------------------------------------------------------------------------------------------


def per_run_metrics(counts: pd.DataFrame) -> pd.DataFrame:
    """One row per run with the six test metrics.

    Args:
        counts: Columns study_id, run_id, task, method, seed, y_true, y_pred, n; any other
            column constant within a run (e.g. ``base_method``) is carried through.

    Returns:
        The run columns plus one column per name in :data:`engine.analysis.metrics.METRICS`.
    """
    run_columns = [c for c in counts.columns if c not in COUNT_COLUMNS]
    if counts.empty:
        return pd.DataFrame(columns=[*run_columns, *METRICS])
    frames = []
    for task, part in counts.groupby("task", sort=True):
        runs = part[run_columns].drop_duplicates("run_id").reset_index(drop=True)
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


def sort_by_method(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows reordered so methods come in the paper's order (stable within a method)."""
    if frame.empty:
        return frame
    rank = {m: i for i, m in enumerate(order_methods(frame["method"].unique()))}
    return frame.iloc[np.argsort(frame["method"].map(rank).to_numpy(), kind="stable")]


def label_methods(frame: pd.DataFrame, study_names: Mapping[str, str]) -> pd.DataFrame:
    """Tell apart a method that was run in more than one of the selected studies.

    Args:
        frame: any frame with columns ``study_id`` and ``method`` (counts, predictions).
        study_names: study_id → name shown to people.

    Returns:
        A copy with ``base_method`` (the plain method) and ``method`` rewritten to
        ``"<method> · <study name>"`` for methods present in several studies (the study id
        is added when two studies share a name). Unchanged methods keep their plain name.
    """
    out = frame.copy()
    out["base_method"] = out["method"].astype(str)
    if out.empty:
        return out
    studies_per_method = out.groupby("base_method")["study_id"].nunique()
    shared = set(studies_per_method[studies_per_method > 1].index)
    if not shared:
        return out
    names = {sid: str(study_names.get(sid, sid)) for sid in out["study_id"].unique()}
    if len(set(names.values())) < len(names):
        names = {sid: f"{name} ({sid})" for sid, name in names.items()}
    mask = out["base_method"].isin(shared)
    out.loc[mask, "method"] = (
        out.loc[mask, "base_method"] + LABEL_SEPARATOR + out.loc[mask, "study_id"].map(names)
    )
    return out


# --------------------------------------------------------------------------------------------
# Finished seeds of running or stopped studies
# --------------------------------------------------------------------------------------------


def planned_runs(method: str, budget: int) -> int:
    """Runs the search of one (task, method, seed) makes: ``min(budget, grid size)``; one
    for a method this checkout does not know (results imported from another tool)."""
    if not is_registered(method):
        return 1
    return min(int(budget), grid_size(method))


def finished_seeds(group_counts: pd.DataFrame, spec: Mapping[str, Any]) -> list[int]:
    """Seeds of one study whose every planned (task, method) search is stored in full.

    The worker re-selects the best configuration after every run, so a seed whose search
    is still going already has "selected" runs that may change. Only finished seeds are
    safe to show, and only whole seeds keep the paired tests paired.

    Args:
        group_counts: `store.runs.run_group_counts` rows of this study (task, method, seed,
            n_runs).
        spec: the study's spec mapping (``tasks``, ``methods``, ``seeds``, ``budget``).

    Returns:
        Finished seeds, ascending.
    """
    stored = {
        (str(r.task), str(r.method), int(r.seed)): int(r.n_runs)
        for r in group_counts.itertuples(index=False)
    }
    tasks, methods = list(spec.get("tasks", [])), list(spec.get("methods", []))
    budget = int(spec.get("budget", 1))
    done = []
    for seed in spec.get("seeds", []):
        if (
            tasks
            and methods
            and all(
                stored.get((task, method, int(seed)), 0) >= planned_runs(method, budget)
                for task in tasks
                for method in methods
            )
        ):
            done.append(int(seed))
    return sorted(done)


@dataclass(frozen=True)
class StudyProgress:
    """Which seeds of one study can be shown, and whether the study is partial.

    Attributes:
        study_id: the study.
        name: its name.
        status: its job's status (``succeeded``, ``running``, ...).
        planned: the spec's seeds.
        finished: seeds whose every (task, method) search is stored in full.
        tasks: the spec's tasks.
    """

    study_id: str
    name: str
    status: str
    planned: tuple[int, ...]
    finished: tuple[int, ...]
    tasks: tuple[str, ...] = ()

    @property
    def partial(self) -> bool:
        """True unless the study succeeded: only its finished seeds are shown."""
        return self.status != "succeeded"


def study_progress(studies: pd.DataFrame, group_counts: pd.DataFrame) -> list[StudyProgress]:
    """Finished seeds of every study in ``studies``.

    Args:
        studies: `store.runs.list_studies` rows (study_id, name, spec as JSON text or a
            mapping, status).
        group_counts: `store.runs.run_group_counts` of those studies.

    Returns:
        One :class:`StudyProgress` per study, in the order of ``studies``.
    """
    out = []
    for row in studies.itertuples(index=False):
        spec = row.spec if isinstance(row.spec, Mapping) else json.loads(row.spec or "{}")
        mine = group_counts[group_counts["study_id"] == row.study_id]
        status = str(row.status) if isinstance(row.status, str) else "unknown"
        out.append(
            StudyProgress(
                study_id=str(row.study_id),
                name=str(row.name),
                status=status,
                planned=tuple(int(s) for s in spec.get("seeds", [])),
                finished=tuple(finished_seeds(mine, spec)),
                tasks=tuple(str(t) for t in spec.get("tasks", [])),
            )
        )
    return out


def keep_finished_seeds(frame: pd.DataFrame, progress: Sequence[StudyProgress]) -> pd.DataFrame:
    """Drop the rows of unfinished seeds of partial studies (finished studies keep all).

    Args:
        frame: any frame with ``study_id`` and ``seed`` columns.
        progress: from :func:`study_progress`.
    """
    partial = {p.study_id: set(p.finished) for p in progress if p.partial}
    if not partial or frame.empty:
        return frame
    keep = np.ones(len(frame), dtype=bool)
    for study_id, seeds in partial.items():
        in_study = (frame["study_id"] == study_id).to_numpy()
        keep &= ~in_study | frame["seed"].isin(list(seeds)).to_numpy()
    return frame[keep]


def one_dataset(studies: pd.DataFrame, chosen: Sequence[str]) -> tuple[list[str], list[str]]:
    """Keep the chosen studies that share the first one's dataset.

    Seeds of different datasets draw different images, so their runs cannot be paired or
    pooled. Studies without a recorded dataset are kept.

    Args:
        studies: `store.runs.list_studies` rows (study_id, name, dataset_id).
        chosen: study ids in the order picked.

    Returns:
        ``(kept ids in the chosen order, names of the studies left out)``.
    """
    rows = studies.set_index("study_id").loc[list(chosen)]
    known = rows["dataset_id"].dropna()
    if known.nunique() <= 1:
        return list(chosen), []
    first = known.iloc[0]
    keep = rows["dataset_id"].isna() | (rows["dataset_id"] == first)
    return list(rows.index[keep]), [str(n) for n in rows.loc[~keep, "name"]]


def default_study_id(studies: pd.DataFrame) -> str:
    """The study a page opens on: the newest finished one, else the newest with results.

    Args:
        studies: Rows newest first, with ``study_id`` and the job ``status``.
    """
    finished = studies[studies["status"] == "succeeded"]
    return str((finished if len(finished) else studies)["study_id"].iloc[0])


# --------------------------------------------------------------------------------------------
# Table 4
# --------------------------------------------------------------------------------------------


def summary_table(per_run: pd.DataFrame, *, average: bool = True) -> pd.DataFrame:
    """The paper's Table 4 from per-run metrics: one row per (task, method), plus Averages.

    Args:
        per_run: from :func:`per_run_metrics`.
        average: add one "Average" row per task (see the module docstring).

    Returns:
        Columns ``task``, ``method``, ``base_method``, ``row`` (``"method"`` or
        ``"average"``), ``n_seeds`` and ``<metric>_mean`` / ``<metric>_std`` for every
        metric; tasks in the paper's order (CPPD, KL), methods in the paper's order.
    """
    columns = _summary_columns()
    if per_run.empty:
        return pd.DataFrame(columns=columns)
    table = metrics_table(per_run)
    if "base_method" in per_run.columns:
        bases = per_run.drop_duplicates("method").set_index("method")["base_method"]
        table["base_method"] = table["method"].map(bases).astype(str)
    else:
        table["base_method"] = table["method"].astype(str)
    table["row"] = ROW_METHOD
    table["n_seeds"] = table["n_seeds"].astype(int)
    parts = []
    for task in task_order(table["task"]):
        rows = table[table["task"] == task]
        positions = sorted(range(len(rows)), key=lambda i: method_sort_key(rows["method"].iloc[i]))
        rows = rows.iloc[positions]
        parts.append(rows)
        if average:
            parts.append(average_row(rows, task))
    return pd.concat(parts, ignore_index=True)[columns]


def average_row(rows: pd.DataFrame, task: str, *, row: str = ROW_AVERAGE) -> pd.DataFrame:
    """The Average row of one task: mean of the methods' means and of their stds.

    Args:
        rows: method rows of one task with ``<metric>_mean`` and ``<metric>_std`` columns.
        task: the task named on the row.
        row: the ``row`` kind written (``"average"``, or ``"paper average"``).

    Returns:
        A one-row frame in the :func:`summary_table` layout.
    """
    values: dict[str, Any] = {
        "task": task,
        "method": AVERAGE,
        "base_method": AVERAGE,
        "row": row,
        "n_seeds": int(rows["n_seeds"].min()) if len(rows) else 0,
    }
    for metric in METRICS:
        values[f"{metric}_mean"] = rows[f"{metric}_mean"].mean()
        values[f"{metric}_std"] = rows[f"{metric}_std"].mean()
    return pd.DataFrame([values], columns=_summary_columns())


def published_table(path: Path | str | None = None) -> pd.DataFrame | None:
    """The paper's Table 4 (``paper_table4.csv``), or None when the file is not there.

    Args:
        path: the CSV; defaults to the copy installed with this package.

    Returns:
        The :func:`summary_table` layout with ``row == "paper"`` and ``n_seeds`` = 20, or
        None if the file is missing or unreadable (logged).
    """
    path = Path(path) if path is not None else REFERENCE_DIR / PUBLISHED_FILE
    try:
        raw = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        logger.info("no published Table 4 at %s: %s", path, exc)
        return None
    needed = ["task", "method", *(f"{m}_{s}" for m in METRICS for s in ("mean", "std"))]
    if any(column not in raw.columns for column in needed):
        logger.warning("%s lacks some of the columns %s", path, needed)
        return None
    table = raw[needed].copy()
    table["base_method"] = table["method"].astype(str)
    table["row"] = ROW_PAPER
    table["n_seeds"] = PUBLISHED_SEEDS
    return table[_summary_columns()]


def with_published(summary: pd.DataFrame, published: pd.DataFrame | None) -> pd.DataFrame:
    """Put the paper's row under each of our method rows (same task and plain method).

    The paper's Average row is added under ours only when the table shows exactly the
    paper's five methods, so that it is the number printed in the paper.

    Args:
        summary: from :func:`summary_table`.
        published: from :func:`published_table` (None: the summary is returned unchanged).

    Returns:
        The summary with ``row == "paper"`` / ``"paper average"`` rows interleaved.
    """
    if published is None or published.empty or summary.empty:
        return summary
    published = published.reset_index(drop=True)
    lookup = {
        (str(task), str(method)): i
        for i, (task, method) in enumerate(
            zip(published["task"], published["base_method"], strict=True)
        )
    }
    records: list[dict[str, Any]] = []
    for task in task_order(summary["task"]):
        rows = summary[summary["task"] == task]
        shown = sorted(rows.loc[rows["row"] == ROW_METHOD, "method"].astype(str))
        for row in rows.to_dict("records"):
            records.append(row)
            key = (str(task), str(row["base_method"]))
            if row["row"] == ROW_METHOD and key in lookup:
                records.append(published.iloc[lookup[key]].to_dict())
            if row["row"] == ROW_AVERAGE and shown == sorted(paper_methods()):
                paper_rows = published[published["task"] == task]
                records.extend(
                    average_row(paper_rows, str(task), row=ROW_PAPER_AVERAGE).to_dict("records")
                )
    out = pd.DataFrame(records, columns=summary.columns)
    out["n_seeds"] = out["n_seeds"].astype(int)
    return out


def rank_marks(
    summary: pd.DataFrame, *, metrics: Sequence[str] = METRICS, digits: int = 3
) -> pd.DataFrame:
    """Which cells are best (bold) and second best (italics), direction-aware.

    Args:
        summary: from :func:`summary_table` (optionally :func:`with_published`).
        metrics: metric names to rank.
        digits: rounding applied before ranking, so cells that look equal share a mark.

    Returns:
        Same index as ``summary``, one column per metric holding ``"best"``, ``"second"``
        or ``""``; only ``row == "method"`` rows are ranked, within their task.
    """
    marks = pd.DataFrame("", index=summary.index, columns=list(metrics))
    ranked = summary[summary["row"] == ROW_METHOD]
    for _, rows in ranked.groupby("task", sort=False):
        for metric in metrics:
            values = pd.to_numeric(rows[f"{metric}_mean"]).round(digits)
            if metric in LOWER_IS_BETTER:
                values = -values
            distinct = sorted(values.dropna().unique(), reverse=True)
            if len(distinct) < 2:
                continue  # one method, or all equal: no method stands out
            marks.loc[values.index[values == distinct[0]], metric] = "best"
            marks.loc[values.index[values == distinct[1]], metric] = "second"
    return marks


# --------------------------------------------------------------------------------------------
# Scores for plots and statistics
# --------------------------------------------------------------------------------------------


def score_frame(
    per_run: pd.DataFrame, metric: str, tasks: Sequence[str] | None = None
) -> pd.DataFrame:
    """One metric per run in the long shape of `engine.analysis.stats` and the charts.

    Args:
        per_run: from :func:`per_run_metrics` (or
            `engine.analysis.probability_metrics.per_run_probability_metrics`).
        metric: a name in :data:`engine.analysis.metrics.METRICS`, or another per-run metric
            column of ``per_run`` (e.g. ``"rps"``).
        tasks: keep only these tasks (all when None).

    Returns:
        Columns ``study_id``, ``task``, ``method``, ``seed``, ``value``, ordered by task,
        method (paper's order) and seed.
    """
    if metric not in METRICS and metric not in per_run.columns:
        raise ValueError(f"{metric=} must be one of {METRICS} or a column of per_run")
    columns = ["study_id", "task", "method", "seed", "value"]
    if per_run.empty:
        return pd.DataFrame(columns=columns)
    frame = per_run if tasks is None else per_run[per_run["task"].isin(list(tasks))]
    out = frame.assign(value=frame[metric].astype(float))[columns]
    # np.lexsort sorts by the last key first: task, method (paper's order), then seed.
    order = np.lexsort(
        (
            out["seed"].to_numpy(),
            out["method"].astype(str).to_numpy(),
            [method_sort_key(m)[0] for m in out["method"]],
            out["task"].astype(str).to_numpy(),
        )
    )
    return out.iloc[order].reset_index(drop=True)


#: The one sign convention of every paired difference (issue 39: the pairs table read
#: "Nominal − Binomial" under a primary endpoint that read "Binomial − Nominal").
PAIR_ORDER_RULE = (
    "each pair reads A − B with B the method listed first in the paper's order "
    "(Nominal first), as the primary endpoint reads method − Nominal"
)


def method_pairs(methods: Sequence[str]) -> list[tuple[str, str]]:
    """Every pair ``(a, b)`` of ``methods`` (in the paper's order) with ``b`` the earlier
    one, so a difference ``a − b`` always subtracts the method listed first: every pair with
    the reference method Nominal reads "method − Nominal", the primary endpoint's direction.
    One rule for every paired table (:data:`PAIR_ORDER_RULE`)."""
    return [(later, earlier) for earlier, later in itertools.combinations(methods, 2)]


def best_method(
    per_run: pd.DataFrame,
    task: str,
    metric: str = PRIMARY_METRIC,
    *,
    exclude: Iterable[str] = (),
) -> str | None:
    """The method with the best mean ``metric`` on ``task`` (direction-aware), or None."""
    rows = per_run[(per_run["task"] == task) & ~per_run["method"].isin(list(exclude))]
    means = rows.groupby("method")[metric].mean().dropna()
    if means.empty:
        return None
    return str(means.idxmin() if metric in LOWER_IS_BETTER else means.idxmax())


# --------------------------------------------------------------------------------------------
# Confusion matrices (Fig. 6)
# --------------------------------------------------------------------------------------------


def method_confusion(
    counts: pd.DataFrame, task: str, method: str, *, how: str = "sum"
) -> tuple[np.ndarray, int]:
    """One method's test confusion matrix over its seeds.

    Args:
        counts: `store.runs.confusion_counts` rows (one per run, y_true, y_pred).
        task: ``"KL"`` or ``"CPPD"``.
        method: the method (or label) as in ``counts["method"]``.
        how: ``"sum"`` adds the seeds' matrices (every test image of every seed counted
            once); ``"mean"`` divides that sum by the number of runs (a typical seed).

    Returns:
        ``((J, J) float array, n_runs)``: rows true grade, columns predicted; all zeros and
        0 runs when the method has no predictions for the task.
    """
    if how not in ("sum", "mean"):
        raise ValueError(f"{how=} must be 'sum' or 'mean'")
    n_classes = TASK_CLASSES[task]
    rows = counts[(counts["task"] == task) & (counts["method"] == method)]
    cm = np.zeros((n_classes, n_classes))
    if rows.empty:
        return cm, 0
    np.add.at(
        cm,
        (rows["y_true"].to_numpy(dtype=int), rows["y_pred"].to_numpy(dtype=int)),
        rows["n"].to_numpy(dtype=float),
    )
    n_runs = int(rows["run_id"].nunique())
    return (cm / n_runs if how == "mean" else cm), n_runs


def confusion_frame(cm: np.ndarray) -> pd.DataFrame:
    """A ``(J, J)`` confusion matrix in long form for the heatmap.

    Returns:
        Columns ``true``, ``predicted`` (grades), ``count`` and ``share`` (the row-normalised
        value: fraction of images of that true grade predicted as ``predicted``; NaN for a
        grade absent from the test set). One row per cell.
    """
    cm = np.asarray(cm, dtype=float)
    totals = cm.sum(axis=1, keepdims=True)
    share = np.divide(cm, totals, out=np.full_like(cm, np.nan), where=totals > 0)
    grades = np.arange(cm.shape[0])
    true, pred = np.meshgrid(grades, grades, indexing="ij")
    return pd.DataFrame(
        {
            "true": true.ravel(),
            "predicted": pred.ravel(),
            "count": cm.ravel(),
            "share": share.ravel(),
        }
    )


def grid_frame(
    table: np.ndarray, *, value: str = "value", rows: str = "KL", columns: str = "CPPD"
) -> pd.DataFrame:
    """A 2-D table (e.g. ``(5, 4)`` KL × CPPD) in long form: one row per cell.

    Returns:
        Columns ``rows`` (row index), ``columns`` (column index) and ``value``.
    """
    table = np.asarray(table, dtype=float)
    r, c = np.meshgrid(np.arange(table.shape[0]), np.arange(table.shape[1]), indexing="ij")
    return pd.DataFrame({rows: r.ravel(), columns: c.ravel(), value: table.ravel()})


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _summary_columns() -> list[str]:
    columns = ["task", "method", "base_method", "row", "n_seeds"]
    return columns + [f"{m}_{s}" for m in METRICS for s in ("mean", "std")]


def task_order(tasks: Iterable[str]) -> list[str]:
    """Distinct tasks in the paper's order (CPPD, then KL)."""
    present = list(dict.fromkeys(str(t) for t in tasks))
    return sorted(present, key=lambda t: (TASK_ORDER.index(t) if t in TASK_ORDER else 99, t))
