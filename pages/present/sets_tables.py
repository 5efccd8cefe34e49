"""Conformal grade sets as the Compare page, `softgrade sets` and the report show them: the
per-method table, the coverage-against-size chart and the sentences (no streamlit).

Input: `engine.analysis.conformal.method_summary` of `jobs.services.grade_sets.study_sets`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import altair as alt
import pandas as pd

from engine.analysis import conformal
from engine.analysis.compare import task_order
from engine.analysis.table_columns import GRADE_SETS
from engine.methods import method_sort_key
from pages.present.palette import method_scale
from pages.present.tables import method_title

#: One short paragraph a PI reads before the table.
SETS_NOTE = (
    "A grade set is the range of grades a model's probabilities leave plausible for one film. "
    "Each run's threshold is fitted on its own validation films (split conformal prediction) "
    "and applied to its test films, so the share of test films whose recorded grade is in its "
    "set comes close to the target, when validation and test films come from the same site "
    "and protocol: on fresh phantom films one threshold fell about a point short (the "
    "validation films also chose each run's epoch), per-grade thresholds held it "
    "(docs/conformal.md). At equal coverage, a smaller mean set is a sharper model. Nominal "
    "scores (LAC, APS) may skip a grade; the ordinal ones always give a range."
)
#: The per-method table's columns and headers (`engine.analysis.table_columns.GRADE_SETS`).
COLUMNS: dict[str, str] = {k: GRADE_SETS.column(k).header for k in GRADE_SETS.view("shown")}


def sets_frame(summary: pd.DataFrame) -> pd.DataFrame:
    """The per-method table with display headers: coverage, per-grade coverage as
    ``Grade k`` (blank beyond a task's grades), size, singleton and range shares."""
    grades = sorted(
        (c for c in summary.columns if c.startswith("coverage_g")), key=lambda c: int(c[10:])
    )
    out = summary[[*COLUMNS, *grades]].copy()
    out["method"] = out["method"].map(method_title)
    out["score"] = out["score"].map(lambda s: conformal.SCORES[s].label)
    return out.rename(columns={**COLUMNS, **{g: f"Grade {g[10:]}" for g in grades}})


def sets_by_method(summary: pd.DataFrame) -> pd.DataFrame:
    """The report's body table: one row per method, one column per task and score reading
    ``coverage / mean set size`` (the long :func:`sets_frame` has a row per task and score:
    112 rows for 14 methods; the report's appendix folds the rest of it into
    :func:`set_shapes_by_method`)."""
    long = _by_method(summary, "", lambda r: f"{r['coverage']:.3f} / {r['mean_size']:.2f}")
    wide = long.pivot(index="Method", columns="Task").swaplevel(axis=1)
    tasks = list(dict.fromkeys(long["Task"]))
    scores = [c for c in long.columns if c not in ("Task", "Method", "Seeds")]
    out = pd.DataFrame({"Method": list(dict.fromkeys(long["Method"]))})
    out["Seeds"] = [int(long.loc[long["Method"] == m, "Seeds"].min()) for m in out["Method"]]
    for task in tasks:
        for score in scores:
            column = wide[(task, score)] if (task, score) in wide else pd.Series(dtype=str)
            out[f"{task} · {score.removesuffix(': ')}"] = out["Method"].map(column).fillna("")
    return out


def set_shapes_by_method(summary: pd.DataFrame) -> pd.DataFrame:
    """The report's appendix table: per task, method and score the share of single-grade
    sets, the share of sets that are one range of grades, and the worst grade's coverage
    with that grade (every grade's coverage: :func:`sets_frame`)."""
    return _by_method(summary, "single · range · worst grade", _shape_cell)


def _shape_cell(row: Mapping[str, Any]) -> str:
    """``"0.13 · 1.00 · 0.875 (grade 2)"`` of one summary row (a grade no film has, NaN,
    is not a worst grade; none is when every grade is always covered)."""
    grades = {int(k[10:]): float(v) for k, v in row.items() if k.startswith("coverage_g")}
    shown = {g: v for g, v in grades.items() if pd.notna(v)}
    worst = min(shown, key=lambda g: (shown[g], g)) if shown else None
    if worst is None:
        tail = ""
    elif shown[worst] >= 1:
        tail = " · every grade 1"
    else:
        tail = f" · {shown[worst]:.3f} (grade {worst})"
    return f"{row['singleton_share']:.2f} · {row['range_share']:.2f}{tail}"


def _by_method(
    summary: pd.DataFrame, what: str, cell: Callable[[Mapping[str, Any]], str]
) -> pd.DataFrame:
    """``summary`` pivoted: Task, Method, Seeds, then one column per score (in the score
    registry's order) holding ``cell`` of that row; blank where a method lacks a score.
    Rows by task in the paper's order, then methods in the registry's order."""
    scores = [s for s in conformal.SCORES if s in set(summary["score"])]
    tasks = task_order(summary["task"])
    rows = []
    order = sorted(
        summary.groupby(["task", "method"], sort=False).groups,
        key=lambda key: (tasks.index(str(key[0])), method_sort_key(str(key[1]))),
    )
    for task, method in order:
        group = summary[(summary["task"] == task) & (summary["method"] == method)]
        by_score = {str(r["score"]): cell(r) for r in group.to_dict("records")}
        rows.append(
            {
                "Task": task,
                "Method": method_title(str(method)),
                "Seeds": int(group["n_seeds"].min()),
                **{f"{conformal.SCORES[s].label}: {what}": by_score.get(s, "") for s in scores},
            }
        )
    return pd.DataFrame(rows)


def coverage_size_chart(summary: pd.DataFrame, target: float) -> alt.FacetChart:
    """Mean set size (x) against coverage (y) per method and score, one panel per task, with
    the target as a rule: good methods sit on or above the rule and far left."""
    data = summary.assign(
        method_title=summary["method"].map(method_title),
        score_label=summary["score"].map(lambda s: conformal.SCORES[s].label),
    )
    points = (
        alt.Chart(data)
        .mark_point(filled=True, size=70)
        .encode(
            x=alt.X("mean_size:Q", title="Mean set size (grades)", scale=alt.Scale(zero=False)),
            y=alt.Y("coverage:Q", title="Test coverage", scale=alt.Scale(zero=False)),
            color=alt.Color(
                "method_title:N", title="Method", scale=method_scale(list(data["method"].unique()))
            ),
            shape=alt.Shape("score_label:N", title="Score"),
            tooltip=[
                alt.Tooltip("method_title:N", title="Method"),
                alt.Tooltip("score_label:N", title="Score"),
                alt.Tooltip("coverage:Q", title=COLUMNS["coverage"], format=".3f"),
                alt.Tooltip("mean_size:Q", title="Mean size", format=".2f"),
                alt.Tooltip("singleton_share:Q", title=COLUMNS["singleton_share"], format=".2f"),
            ],
        )
    )
    rule = (
        alt.Chart(pd.DataFrame({"target": [target]}))
        .mark_rule(strokeDash=[4, 4])
        .encode(y="target:Q")
    )
    return alt.layer(points, rule, data=data).facet(column=alt.Column("task:N", title=None))


def coverage_sentence(summary: pd.DataFrame, target: float) -> str:
    """One line: how many method × score rows reach the target and the sharpest of those,
    per task, e.g. ``"KL: 8 of 8 reach 90 %; sharpest Beta · Ordinal APS (1.62 grades)."``"""
    parts = []
    for task, rows in summary.groupby("task", sort=True):
        # A finite test set's coverage scatters around its expectation; the phantom referee
        # (docs/conformal.md) measures coverage on fresh films instead.
        reached = rows[rows["coverage"] >= target]
        text = f"{task}: {len(reached)} of {len(rows)} reach {target:.0%}"
        if not reached.empty:
            best = reached.loc[reached["mean_size"].idxmin()]
            label = conformal.SCORES[str(best["score"])].label
            name = method_title(str(best["method"]))
            text += f"; sharpest {name} · {label} ({best['mean_size']:.2f} grades)"
        parts.append(text + ".")
    return " ".join(parts)
