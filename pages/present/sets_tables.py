"""Conformal grade sets as the Compare page, `softgrade sets` and the report show them: the
per-method table, the coverage-against-size chart and the sentences (no streamlit).

Input: `engine.analysis.conformal.method_summary` of `jobs.services.grade_sets.study_sets`.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from engine.analysis import conformal
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
COLUMNS = {
    "task": "Task",
    "method": "Method",
    "score": "Score",
    "n_seeds": "Seeds",
    "coverage": "Coverage",
    "mean_size": "Mean set size",
    "singleton_share": "Single grade",
    "range_share": "Ranges",
}


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
                alt.Tooltip("coverage:Q", title="Coverage", format=".3f"),
                alt.Tooltip("mean_size:Q", title="Mean size", format=".2f"),
                alt.Tooltip("singleton_share:Q", title="Single grade", format=".2f"),
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
