"""The critical-difference diagram: mean ranks on an axis (1 = best), the methods no post-hoc
test tells apart joined by a bar, and the Nemenyi critical difference (from
`engine.analysis.ranking`). No streamlit: tests check the layout's pixels and the chart's
data without a browser. Split from `pages.present.science_charts` (issue 40: one concept a
module under ~700 lines).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from pages.present.science_charts import BAR_COLOUR
from pages.present.tables import method_title

# Labels are sized in pixels, from their text: Vega-Lite cannot place a label by its own
# width, and a label past the plot's edge is cut off where the chart sits in a column (the
# Statistics tab showed "(3.70) N"). The advance is above what 12 px sans-serif measures in
# Chromium here (5.2-6.0 px a character, digits the widest), so a label never reaches the edge.
CD_WIDTH_PX = 420  # fits one of two columns beside the sidebar at 1366 px (445 px)
CD_LABEL_FONT_PX = 12
CD_CHAR_PX = 6.5
CD_LABEL_GAP_PX = 4  # between an elbow's end and its label
CD_ELBOW_PX = 14  # the shortest elbow: from the outermost method to its label
CD_RANK_PX = 40  # the least room one rank step gets; the chart widens rather than cramp it
CD_CD_TEXT = "CD = {:.2f}"


@dataclass(frozen=True)
class CdFrame:
    """Where a CD diagram's ranks sit in pixels: the x domain (in ranks) that fills ``width``
    pixels with the rank axis between the two label columns."""

    width: int
    low: float
    high: float

    def px(self, rank: float) -> float:
        """The pixel (from the plot's left edge) of a rank."""
        return (rank - self.low) / (self.high - self.low) * self.width


def label_text(method_label: str, mean_rank: float, side: str) -> str:
    """A CD label as drawn: "Beta (2.10)" on the left, "(3.70) Nominal" on the right."""
    return (
        f"{method_label} ({mean_rank:.2f})"
        if side == "left"
        else f"({mean_rank:.2f}) {method_label}"
    )


def text_px(text: str) -> float:
    """A generous estimate of how wide ``text`` is drawn at the labels' font size."""
    return len(text) * CD_CHAR_PX


def critical_difference_layout(
    ranks: pd.DataFrame, groups: pd.DataFrame, *, width: int = CD_WIDTH_PX
) -> tuple[pd.DataFrame, pd.DataFrame, CdFrame]:
    """Where each label and bar of a CD diagram goes (Demšar's layout).

    The better half of the methods is labelled on the left, the rest on the right, each on
    its own row below the axis; bars that overlap in rank go on separate rows. The labels sit
    inside ``width`` pixels (wider when the ranks would otherwise have under
    ``CD_RANK_PX`` a step): the longest label of each side fixes that side's margin.

    Args:
        ranks: ``method``, ``mean_rank`` (the `engine.analysis.ranking.CriticalDifference` table).
        groups: ``methods``, ``low``, ``high`` (its ``groups``).
        width: the plot's width in pixels.

    Returns:
        ``(labels, bars, frame)``: labels with ``method``, ``Method``, ``mean_rank``, ``row``
        (negative, below the axis), ``side``, ``text`` and ``label_x`` (where the elbow ends
        and the label starts, in ranks); bars with ``low``, ``high``, ``row``; and the x frame.
    """
    ordered = ranks.sort_values("mean_rank", kind="stable").reset_index(drop=True)
    k = len(ordered)
    bar_rows: list[list[tuple[float, float]]] = []
    bars = []
    for group in groups.sort_values(["low", "high"]).itertuples(index=False):
        level = _free_row(bar_rows, float(group.low), float(group.high))
        bars.append({"low": group.low, "high": group.high, "row": -0.4 * (level + 1)})
    first_label_row = -0.4 * (len(bar_rows) + 1) - 0.4
    half = (k + 1) // 2
    labels = []
    for i, row in enumerate(ordered.itertuples(index=False)):
        side = "left" if i < half else "right"
        position = i if side == "left" else k - 1 - i  # the outermost get the lowest rows
        title = method_title(row.method)
        labels.append(
            {
                "method": row.method,
                "Method": title,
                "mean_rank": float(row.mean_rank),
                "row": first_label_row - 0.5 * position,
                "side": side,
                "text": label_text(title, float(row.mean_rank), side),
            }
        )
    frame = _cd_frame(labels, k, width)
    step = frame.width / (frame.high - frame.low)  # pixels per rank
    edge = {"left": 1.0 - CD_ELBOW_PX / step, "right": max(k, 1) + CD_ELBOW_PX / step}
    for label in labels:
        label["label_x"] = edge[label["side"]]
    columns = ["method", "Method", "mean_rank", "row", "side", "text", "label_x"]
    return (
        pd.DataFrame(labels, columns=columns),
        pd.DataFrame(bars, columns=["low", "high", "row"]),
        frame,
    )


def _cd_frame(labels: list[dict[str, Any]], k: int, width: int) -> CdFrame:
    """The x domain that puts each side's longest label inside the plot."""
    margin = {
        side: max((text_px(lab["text"]) for lab in labels if lab["side"] == side), default=0.0)
        + CD_LABEL_GAP_PX
        + CD_ELBOW_PX
        for side in ("left", "right")
    }
    steps = max(k - 1, 1)
    width = max(width, int(np.ceil(margin["left"] + margin["right"] + CD_RANK_PX * steps)))
    step = (width - margin["left"] - margin["right"]) / steps  # pixels per rank
    return CdFrame(
        width=width, low=1.0 - margin["left"] / step, high=1.0 + steps + margin["right"] / step
    )


def _free_row(rows: list[list[tuple[float, float]]], low: float, high: float) -> int:
    """The first row where ``[low, high]`` overlaps no bar already there (a new row if none)."""
    for level, taken in enumerate(rows):
        if not any(low <= other_high and other_low <= high for other_low, other_high in taken):
            taken.append((low, high))
            return level
    rows.append([(low, high)])
    return len(rows) - 1


def critical_difference_diagram(
    ranks: pd.DataFrame,
    groups: pd.DataFrame,
    cd: float,
    *,
    title: str = "",
    width: int = CD_WIDTH_PX,
) -> alt.LayerChart:
    """The critical-difference diagram of one ranking.

    Args:
        ranks: the `engine.analysis.ranking.CriticalDifference` table (``method``, ``mean_rank``).
        groups: its ``groups`` (``methods``, ``low``, ``high``).
        cd: its critical difference (NaN: no CD bar is drawn).
        title: chart title.
        width: pixels, labels included (more when the ranks need it).

    Returns:
        Mean ranks on an axis from 1 (best, left) to k, each method's elbow line to its
        label, thick bars joining methods that do not differ, and the CD as a bar above the
        axis starting at rank 1, its value centred over it. Every label lies inside the plot.
    """
    labels, bars, frame = critical_difference_layout(ranks, groups, width=width)
    k = max(len(labels), 2)
    x_scale = alt.Scale(domain=[frame.low, frame.high], nice=False, zero=False)
    bottom = float(labels["row"].min()) - 0.3 if len(labels) else -1.0
    y_scale = alt.Scale(domain=[bottom, 1.1], nice=False, zero=False)
    # The rank axis is drawn as marks at y = 0 so the elbows hang from it, as in Demšar's
    # figures; Vega-Lite's own axis would sit at the edge of the plot instead.
    x = alt.X("mean_rank:Q", scale=x_scale, axis=None)
    y = alt.Y("row:Q", scale=y_scale, axis=None)
    ticks = pd.DataFrame({"mean_rank": np.arange(1, k + 1, dtype=float), "row": 0.0, "top": 0.12})
    axis_line = pd.DataFrame({"mean_rank": [1.0], "end": [float(k)], "row": [0.0]})
    label_x = alt.X("label_x:Q", scale=x_scale, axis=None)
    layers = [
        alt.Chart(axis_line).mark_rule(color=BAR_COLOUR).encode(x=x, x2="end:Q", y=y),
        alt.Chart(ticks).mark_rule(color=BAR_COLOUR).encode(x=x, y=y, y2="top:Q"),
        alt.Chart(ticks)
        .mark_text(dy=-12, fontSize=11)
        .encode(x=x, y=y, text=alt.Text("mean_rank:Q", format="d")),
        alt.Chart(labels)
        .mark_rule(color="#555555")
        .encode(x=x, y=y, y2="zero:Q")
        .transform_calculate(zero="0"),
        alt.Chart(labels).mark_rule(color="#555555").encode(x=x, x2="label_x:Q", y=y),
        alt.Chart(labels)
        .mark_circle(size=60, color=BAR_COLOUR, opacity=1)
        .encode(
            x=x,
            y=alt.Y("zero:Q", scale=y_scale, axis=None),
            tooltip=[alt.Tooltip("Method:N"), alt.Tooltip("mean_rank:Q", format=".2f")],
        )
        .transform_calculate(zero="0"),
        alt.Chart(labels[labels["side"] == "left"])
        .mark_text(align="right", dx=-CD_LABEL_GAP_PX, fontSize=CD_LABEL_FONT_PX)
        .encode(x=label_x, y=y, text="text:N"),
        alt.Chart(labels[labels["side"] == "right"])
        .mark_text(align="left", dx=CD_LABEL_GAP_PX, fontSize=CD_LABEL_FONT_PX)
        .encode(x=label_x, y=y, text="text:N"),
    ]
    if len(bars):
        layers.append(
            alt.Chart(bars)
            .mark_rule(color=BAR_COLOUR, strokeWidth=4)
            .encode(x=alt.X("low:Q", scale=x_scale, axis=None), x2="high:Q", y=y)
        )
    if np.isfinite(cd):
        layers += _cd_bar(cd, frame, x_scale, y)
    height = int(40 * (1.1 - bottom)) + 20
    return alt.LayerChart(layer=layers).properties(
        title=alt.TitleParams(title, subtitle="Mean rank over seeds (1 = best)"),
        width=frame.width,
        height=height,
        view=alt.ViewBackground(stroke=None),
    )


def _cd_bar(cd: float, frame: CdFrame, x_scale: alt.Scale, y: alt.Y) -> list[alt.Chart]:
    """The CD as a bar from rank 1, above the axis, its value centred over it (kept inside
    the plot, and the bar cut at its edge, when the CD is longer than the axis)."""
    end = min(1.0 + cd, frame.high)
    text = CD_CD_TEXT.format(cd)
    half_text = text_px(text) / 2 / frame.width * (frame.high - frame.low)
    middle = min(max((1.0 + end) / 2, frame.low + half_text), frame.high - half_text)
    bar = pd.DataFrame({"start": [1.0], "end": [end], "row": [0.8], "cd": [cd]})
    note = pd.DataFrame({"middle": [middle], "row": [0.8], "text": [text]})
    return [
        alt.Chart(bar)
        .mark_rule(color=BAR_COLOUR, strokeWidth=2)
        .encode(x=alt.X("start:Q", scale=x_scale, axis=None), x2="end:Q", y=y),
        alt.Chart(note)
        .mark_text(align="center", dy=-10, fontSize=11)
        .encode(x=alt.X("middle:Q", scale=x_scale, axis=None), y=y, text="text:N"),
    ]
