"""How much a method's seeds agree on one film: the spread of P(grade) over the seeds' models.

Grade a film shows this rather than one seed's word whenever several seeds' models are on the
machine (the lab's store, or a demo bundle exported with ``--seeds all``). No streamlit, so
the numbers and the chart are unit-tested.

* :func:`seed_spread` — per grade: mean, sd, lowest and highest P(grade) over the seeds, and
  how many seeds give that grade (their most probable one).
* :func:`consensus_grade` — the grade of the seeds' mean probabilities.
* :func:`agreement_sentence` — "3 of 5 models say KL 2; 2 say KL 3."
* :func:`seed_agreement_chart` — bars of the mean with a min–max whisker, every seed a dot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from pages.present.charts import kiosk_axis

CHOSEN_COLOUR = "#1f4e79"
OTHER_COLOUR = "#9ecae1"


def seed_spread(probs: Mapping[int, Sequence[float] | np.ndarray]) -> pd.DataFrame:
    """P(grade) summarised over seeds, one row per grade.

    Args:
        probs: seed -> (J,) probabilities of that seed's model for one film.

    Returns:
        ``grade``, ``mean``, ``sd`` (0 for one seed), ``low``, ``high`` (min and max over
        seeds), ``votes`` (seeds whose most probable grade it is), ``seeds`` (how many) and
        ``chosen`` (the grade of the mean).

    Raises:
        ValueError: No seed, or seeds with different numbers of grades.
    """
    if not probs:
        raise ValueError("no seed's probabilities to summarise")
    lengths = {len(p) for p in probs.values()}
    if len(lengths) != 1:
        raise ValueError(f"the seeds' models give different numbers of grades: {sorted(lengths)}")
    matrix = np.asarray([np.asarray(p, dtype=float) for p in probs.values()])
    n, grades = matrix.shape
    mean = matrix.mean(axis=0)
    return pd.DataFrame(
        {
            "grade": np.arange(grades),
            "mean": mean,
            "sd": matrix.std(axis=0, ddof=1) if n > 1 else np.zeros(grades),
            "low": matrix.min(axis=0),
            "high": matrix.max(axis=0),
            "votes": np.bincount(matrix.argmax(axis=1), minlength=grades),
            "seeds": n,
            "chosen": np.arange(grades) == int(mean.argmax()),
        }
    )


def consensus_grade(spread: pd.DataFrame) -> int:
    """The grade with the highest mean probability over the seeds."""
    return int(spread.loc[spread["chosen"], "grade"].iloc[0])


def agreement_sentence(spread: pd.DataFrame, task: str) -> str:
    """How the models (one per seed) vote, most votes first, in plain words:
    "5 of 5 models agree: KL 2." or "3 of 5 models say KL 2; 2 say KL 3."."""
    n = int(spread["seeds"].iloc[0])
    votes = spread[spread["votes"] > 0].sort_values(["votes", "grade"], ascending=[False, True])
    if n == 1:
        return f"One model: {task} {int(votes['grade'].iloc[0])}."
    if len(votes) == 1:
        return f"{n} of {n} models agree: {task} {int(votes['grade'].iloc[0])}."
    first, *rest = votes.itertuples(index=False)
    parts = [f"{first.votes} of {n} models say {task} {first.grade}"]
    parts += [f"{r.votes} say{'s' * (r.votes == 1)} {task} {r.grade}" for r in rest]
    return "; ".join(parts) + "."


def seed_points(probs: Mapping[int, Sequence[float] | np.ndarray]) -> pd.DataFrame:
    """Long form of the seeds' probabilities: ``seed``, ``grade``, ``p``."""
    return pd.DataFrame(
        [
            {"seed": int(seed), "grade": grade, "p": float(p)}
            for seed, row in probs.items()
            for grade, p in enumerate(row)
        ]
    )


def seed_agreement_chart(
    spread: pd.DataFrame, points: pd.DataFrame, task: str, *, height: int = 180
) -> alt.LayerChart:
    """Mean P(grade) over seeds as bars (the consensus grade darker), a whisker from the
    lowest to the highest seed, and one dot per seed.

    Args:
        spread: From `seed_spread`.
        points: From `seed_points` (the same seeds).
        task: The task's name, for the axis.
        height: Chart height in pixels.
    """
    x = alt.X("grade:O", title=f"{task} grade", axis=kiosk_axis(labelAngle=0))
    y_scale = alt.Scale(domain=[0, 1])
    tooltip = [
        alt.Tooltip("grade:O", title=f"{task} grade"),
        alt.Tooltip("mean:Q", title="Mean probability", format=".1%"),
        alt.Tooltip("sd:Q", title="SD over models", format=".1%"),
        alt.Tooltip("low:Q", title="Lowest model", format=".1%"),
        alt.Tooltip("high:Q", title="Highest model", format=".1%"),
        alt.Tooltip("votes:Q", title="Models giving this grade"),
    ]
    base = alt.Chart(spread)
    bars = base.mark_bar().encode(
        x=x,
        y=alt.Y("mean:Q", title="Probability", scale=y_scale, axis=kiosk_axis(format=".0%")),
        color=alt.condition("datum.chosen", alt.value(CHOSEN_COLOUR), alt.value(OTHER_COLOUR)),
        tooltip=tooltip,
    )
    whiskers = base.mark_rule(color="#333333", strokeWidth=2).encode(
        x=x, y=alt.Y("low:Q", scale=y_scale), y2="high:Q", tooltip=tooltip
    )
    dots = (
        alt.Chart(points)
        .mark_circle(size=28, color="#d62728", opacity=0.8)
        .encode(
            x=x,
            y=alt.Y("p:Q", scale=y_scale),
            tooltip=[
                alt.Tooltip("seed:O", title="Seed"),
                alt.Tooltip("p:Q", title="Probability", format=".1%"),
            ],
        )
    )
    return alt.LayerChart(layer=[bars, whiskers, dots]).properties(height=height, width="container")
