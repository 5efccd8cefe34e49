"""The distribution over seeds of one value per method (paper Fig. 5): :func:`violin_box`.

Violin + box per method, median as a solid line and mean as a dashed red line, every seed a
point with a tooltip. The violin's density and the box statistics are computed here with
numpy, so a method with few seeds still draws (points and lines, no violin below
`MIN_VIOLIN_SEEDS`) instead of failing inside Vega; a violin ends at its method's lowest and
highest value, never past the data. `pages.present.charts` passes it on with the other
charts (the pages and `chart_cache` name it there).
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from engine.methods import order_methods
from pages.present.formatting import LEVEL_LABEL_METHODS
from pages.present.palette import method_scale
from pages.present.tables import method_title

MEAN_COLOUR = "#d62728"
MEDIAN_COLOUR = "#222222"
HALF_WIDTH = 0.38  # half the width of a violin, in method slots
BOX_HALF_WIDTH = 0.07
KDE_POINTS = 60
#: A method gets a violin from this many seeds on: a density of 2 or 3 values is their
#: kernels' shape, not the data's (issue 39: with 2-3 seeds violins spread below 0 AMAE).
MIN_VIOLIN_SEEDS = 4


def violin_box(
    scores: pd.DataFrame,
    *,
    value_title: str,
    title: str = "",
    violin: bool = True,
    height: int = 320,
    slot_width: int = 110,
) -> alt.LayerChart:
    """Distribution over seeds of one value per method (paper Fig. 5).

    Args:
        scores: long frame with columns ``method``, ``seed``, ``value`` (``study_id``
            optional, shown in the tooltip); one task.
        value_title: y-axis title, e.g. ``"AMAE (lower is better)"``.
        title: chart title.
        violin: draw the violin (off: a box plot with points, as for the KLD).
        height: chart height in pixels.
        slot_width: pixels per method.

    Returns:
        A layered chart: violin (where a method has `MIN_VIOLIN_SEEDS`+ values, not all
        equal, within their range), box (quartiles,
        whiskers to the furthest value within 1.5 IQR), median (solid), mean (dashed red)
        and one point per seed.
    """
    data = scores.dropna(subset=["value"])
    methods = order_methods(data["method"])
    slot = {m: i for i, m in enumerate(methods)}
    summary = _box_stats(data, methods, slot)
    points = data.assign(
        x=[slot[m] + _jitter(s) for m, s in zip(data["method"], data["seed"], strict=True)],
        Method=[method_title(m) for m in data["method"]],
    )
    x_scale = alt.Scale(domain=[-0.5, max(len(methods), 1) - 0.5], nice=False, zero=False)
    # Many methods: slanted labels, every one drawn (Vega would drop overlapping ones).
    slanted = len(methods) > LEVEL_LABEL_METHODS
    x_axis = alt.X(
        "x:Q",
        title=None,
        scale=x_scale,
        axis=alt.Axis(
            values=list(range(len(methods))),
            labelExpr=_label_expr([method_title(m) for m in methods]),
            grid=False,
            ticks=False,
            labelAngle=-35 if slanted else 0,
            labelAlign="right" if slanted else "center",
            labelOverlap=False,
            labelLimit=180,
            labelFontSize=12,
        ),
    )
    y_scale = alt.Scale(zero=False, nice=True)
    y_axis = alt.Y("value:Q", title=value_title, scale=y_scale)
    colour = alt.Color(
        "method:N", legend=None, sort=methods, scale=method_scale(methods, titled=False)
    )

    layers: list[alt.Chart] = []
    density = _densities(data, methods, slot) if violin else pd.DataFrame()
    if not density.empty:
        layers.append(
            alt.Chart(density)
            .mark_area(orient="horizontal", opacity=0.3, interpolate="monotone")
            .encode(
                y=alt.Y("value:Q", scale=y_scale),
                x=x_axis,
                x2="x2:Q",
                color=colour,
                detail="method:N",
            )
        )
    if not summary.empty:
        box = alt.Chart(summary)
        layers += [
            box.mark_rule(color="#555555").encode(
                x=alt.X("slot:Q", scale=x_scale), y="whisker_low:Q", y2="whisker_high:Q"
            ),
            box.mark_bar(color="white", stroke="#555555", strokeWidth=1, opacity=0.9).encode(
                x=alt.X("box_left:Q", scale=x_scale), x2="box_right:Q", y="q1:Q", y2="q3:Q"
            ),
            box.mark_rule(color=MEDIAN_COLOUR, strokeWidth=2).encode(
                x=alt.X("line_left:Q", scale=x_scale),
                x2="line_right:Q",
                y="median:Q",
                tooltip=_summary_tooltip(),
            ),
            box.mark_rule(color=MEAN_COLOUR, strokeWidth=2, strokeDash=[6, 4]).encode(
                x=alt.X("line_left:Q", scale=x_scale),
                x2="line_right:Q",
                y="mean:Q",
                tooltip=_summary_tooltip(),
            ),
        ]
    tooltip = [
        alt.Tooltip("Method:N"),
        alt.Tooltip("seed:Q", title="Seed"),
        alt.Tooltip("value:Q", title=value_title, format=".4f"),
    ]
    if "study_id" in points.columns:
        tooltip.append(alt.Tooltip("study_id:N", title="Study"))
    layers.append(
        alt.Chart(points)
        .mark_circle(size=45, opacity=0.85, stroke="white", strokeWidth=0.5)
        .encode(x=x_axis, y=y_axis, color=colour, tooltip=tooltip)
    )
    return (
        alt.layer(*layers)
        .properties(
            title=alt.TitleParams(
                title,
                subtitle="Solid black: median · dashed red: mean · dots: seeds (hover for details)",
            ),
            height=height,
            width=max(slot_width * len(methods), 160),
        )
        .resolve_scale(x="shared", y="shared")
    )


def _box_stats(data: pd.DataFrame, methods: list[str], slot: dict[str, int]) -> pd.DataFrame:
    """Quartiles, Tukey whiskers, median and mean per method, with x positions."""
    rows = []
    for method in methods:
        values = np.sort(data.loc[data["method"] == method, "value"].to_numpy(dtype=float))
        if values.size == 0:
            continue
        q1, median, q3 = np.percentile(values, [25, 50, 75])
        iqr = q3 - q1
        inside = values[(values >= q1 - 1.5 * iqr) & (values <= q3 + 1.5 * iqr)]
        x = slot[method]
        rows.append(
            {
                "method": method,
                "Method": method_title(method),
                "n": int(values.size),
                "slot": x,
                "box_left": x - BOX_HALF_WIDTH,
                "box_right": x + BOX_HALF_WIDTH,
                "line_left": x - HALF_WIDTH * 0.8,
                "line_right": x + HALF_WIDTH * 0.8,
                "q1": q1,
                "median": median,
                "q3": q3,
                "mean": float(values.mean()),
                "whisker_low": float(inside.min()),
                "whisker_high": float(inside.max()),
            }
        )
    return pd.DataFrame(rows)


def _densities(data: pd.DataFrame, methods: list[str], slot: dict[str, int]) -> pd.DataFrame:
    """Gaussian KDE outline (Scott's bandwidth) of each method with `MIN_VIOLIN_SEEDS`+
    values, not all equal, cut at its lowest and highest value (seaborn's ``cut=0``): a
    violin never claims values no seed had (an AMAE below 0).

    Each violin is scaled to its own maximum density, so its width shows shape, not n.
    """
    frames = []
    for method in methods:
        values = data.loc[data["method"] == method, "value"].to_numpy(dtype=float)
        if values.size < MIN_VIOLIN_SEEDS or np.ptp(values) == 0:
            continue
        bandwidth = values.std(ddof=1) * values.size ** (-1 / 5)
        grid = np.linspace(values.min(), values.max(), KDE_POINTS)
        density = np.exp(-0.5 * ((grid[:, None] - values[None, :]) / bandwidth) ** 2).sum(axis=1)
        half = HALF_WIDTH * density / density.max()
        x = slot[method]
        frames.append(
            pd.DataFrame({"method": method, "value": grid, "x": x - half, "x2": x + half})
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _summary_tooltip() -> list[alt.Tooltip]:
    return [
        alt.Tooltip("Method:N"),
        alt.Tooltip("n:Q", title="Seeds"),
        alt.Tooltip("median:Q", title="Median", format=".4f"),
        alt.Tooltip("mean:Q", title="Mean", format=".4f"),
        alt.Tooltip("q1:Q", title="Q1", format=".4f"),
        alt.Tooltip("q3:Q", title="Q3", format=".4f"),
    ]


def _jitter(seed: int | str) -> float:
    """A small fixed horizontal offset per seed, so equal values do not hide each other.

    A golden-ratio sequence over the seed number: deterministic across processes (``hash``
    of a str is salted per process) and evenly spread in ``[-0.08, 0.08]``.
    """
    try:
        k = int(seed)
    except (TypeError, ValueError):
        k = sum(map(ord, str(seed)))
    return ((k * 0.6180339887) % 1.0 - 0.5) * 0.16


def _label_expr(labels: list[str]) -> str:
    """A Vega expression mapping slot 0, 1, ... to its method name."""
    expr = "''"
    for index in reversed(range(len(labels))):
        text = labels[index].replace("\\", "\\\\").replace("'", "\\'")
        expr = f"datum.value == {index} ? '{text}' : ({expr})"
    return expr
