"""Altair charts for the pages. No streamlit, so they are unit-tested.

Minimal stand-in on branch r3: only the soft-label heatmap the Launch page draws; the full
module (every chart of engine/charts.py) comes from the branch that moves the charts.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd


def soft_label_frame(matrix: np.ndarray) -> pd.DataFrame:
    """A (J, J) target matrix in long form for plotting.

    Args:
        matrix: ``(J, J)`` probabilities; row k is the target distribution of true grade k.

    Returns:
        One row per cell: ``true_grade``, ``target_grade`` (ints) and ``probability``.
    """
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"expected a square (J, J) matrix, got shape {matrix.shape}")
    j = matrix.shape[0]
    true, target = np.meshgrid(np.arange(j), np.arange(j), indexing="ij")
    return pd.DataFrame(
        {
            "true_grade": true.ravel(),
            "target_grade": target.ravel(),
            "probability": matrix.ravel(),
        }
    )


def soft_label_heatmap(
    frame: pd.DataFrame, *, title: str = "", size: int = 140, values: bool = True
) -> alt.Chart:
    """Heatmap of a soft-label matrix: true grade down, target grade across, as in Fig. 4.

    Axis titles are left out so that five small charts fit side by side; say "rows: true
    grade, columns: target grade" next to them.

    Args:
        frame: Output of `soft_label_frame`.
        title: Chart title (the method's name).
        size: Width and height of the grid in pixels.
        values: Print each cell's probability in it.
    """
    base = alt.Chart(frame).encode(
        x=alt.X("target_grade:O", title=None, axis=alt.Axis(labelAngle=0, orient="top")),
        y=alt.Y("true_grade:O", title=None, axis=alt.Axis(labelAngle=0, labelOverlap=False)),
    )
    cells = base.mark_rect().encode(
        color=alt.Color(
            "probability:Q",
            scale=alt.Scale(domain=[0, 1], scheme="blues"),
            legend=None,
        ),
        tooltip=[
            alt.Tooltip("true_grade:O", title="true grade"),
            alt.Tooltip("target_grade:O", title="target grade"),
            alt.Tooltip("probability:Q", format=".3f"),
        ],
    )
    chart = cells
    if values:
        labels = base.mark_text(fontSize=max(7, size // 18)).encode(
            text=alt.Text("probability:Q", format=".2f"),
            color=alt.condition(
                alt.datum.probability > 0.5, alt.value("white"), alt.value("black")
            ),
        )
        chart = cells + labels
    chart = chart.properties(width=size, height=size)
    return chart.properties(title=title) if title else chart
