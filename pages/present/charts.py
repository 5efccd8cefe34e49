"""Altair charts of the pages: each function takes DataFrames and returns a chart.

Kept apart from the page scripts, and free of streamlit, so tests can check what a chart
shows (its data and encodings) without a browser. Every heatmap of the app lives here.

* :func:`soft_label_heatmap` — a method's (J, J) soft-label targets (paper Fig. 4), from
  :func:`soft_label_frame`.
* :func:`violin_box` — violin + box per method (paper Fig. 5), from
  `pages.present.distribution_charts`, passed on here with the other charts.
* :func:`confusion_heatmap` — a confusion matrix, counts or row-normalised (Fig. 6).
* :func:`contingency_heatmap` — a KL × CPPD table with its counts (Fig. 2 right).
* :func:`residual_heatmap` — predicted − true per cell on a diverging scale centred on 0,
  red for over-estimation and blue for under-estimation (Fig. 8).
* :func:`residual_small_multiples` — every method's residuals as one figure, one legend.
* :func:`seed_tables` — small multiples of predicted KL × CPPD tables, one per seed.
* :func:`grade_probabilities` — one model's probability of each grade for one film.
* :func:`kld_parts_bars` — each method's KLD stacked in its chain-rule parts.
* :func:`stress_lift` — the co-occurrence stress test: per method, where its Grad-CAM heat
  sits (lift on a pathology's signs) as the other pathology's grade rises (Fig. 9).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import altair as alt
import numpy as np
import pandas as pd

from engine.analysis.inference_columns import KLD_PARTS
from engine.methods import order_methods

# Passed on: the pages, `chart_cache` and the tests name Fig. 5's chart among these.
from pages.present.distribution_charts import MEAN_COLOUR as MEAN_COLOUR
from pages.present.distribution_charts import violin_box as violin_box
from pages.present.formatting import LEVEL_LABEL_METHODS
from pages.present.palette import method_dash_scale, method_scale
from pages.present.tables import method_title

# The Vega colour schemes these charts name: altair types `scheme` as a Literal of Vega's
# scheme names, so a scheme passed around as a value carries this narrower type.
Scheme = Literal["blues", "greens", "purples", "redblue", "tableau10", "tableau20"]

#: One of two side-by-side columns of the main area at 1400 px (sidebar open), in pixels: a
#: chart wider than this goes on a row of its own.
HALF_PAGE_PX = 460


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


def confusion_heatmap(
    frame: pd.DataFrame,
    *,
    normalised: bool,
    title: str = "",
    decimals: int = 0,
    domain_max: float | None = None,
) -> alt.LayerChart:
    """A confusion matrix as a heatmap with the value in every cell (paper Fig. 6).

    Args:
        frame: from :func:`engine.analysis.compare.confusion_frame` (``true``, ``predicted``,
            ``count``, ``share``).
        normalised: colour and label by ``share`` (row-normalised, shown in %) instead of
            ``count``.
        title: chart title.
        decimals: decimals of the counts (1 for matrices averaged over seeds).
        domain_max: top of the colour scale; pass one value to two charts so that the
            same colour means the same number in both (default: this matrix's maximum;
            1 when normalised).
    """
    field = "share" if normalised else "count"
    data = frame.assign(
        text=[_cell_text(v, normalised, decimals) for v in frame[field]],
        value=frame[field].fillna(0.0),
    )
    top = float(data["value"].max()) if len(data) else 0.0
    if domain_max is not None:
        top = float(domain_max)
    elif normalised:
        top = 1.0
    data["dark"] = data["value"] > 0.55 * top if top > 0 else False
    grades = sorted(int(g) for g in data["true"].unique())
    base = alt.Chart(data).encode(
        x=alt.X("predicted:O", title="Predicted grade", sort=grades, axis=alt.Axis(labelAngle=0)),
        y=alt.Y("true:O", title="True grade", sort=grades),
    )
    tooltip = [
        alt.Tooltip("true:O", title="True"),
        alt.Tooltip("predicted:O", title="Predicted"),
        alt.Tooltip("count:Q", title="Images", format=f".{decimals}f"),
        alt.Tooltip("share:Q", title="Share of true grade", format=".1%"),
    ]
    rect = base.mark_rect(stroke="white").encode(
        color=alt.Color(
            "value:Q",
            title="Share of row" if normalised else "Images",
            scale=alt.Scale(scheme="blues", domain=[0, top if top > 0 else 1]),
            legend=value_legend(format=".0%" if normalised else "d"),
        ),
        tooltip=tooltip,
    )
    text = _cell_numbers(base, tooltip)
    # Sizes as a step per grade: Streamlit's theme shrinks a fixed width on discrete axes.
    return (rect + text).properties(title=title, width=alt.Step(54), height=alt.Step(44))


def contingency_heatmap(
    frame: pd.DataFrame, *, title: str = "", decimals: int = 0, scheme: Scheme = "greens"
) -> alt.LayerChart:
    """A KL × CPPD table as a heatmap with its counts (paper Fig. 2, right).

    Args:
        frame: from :func:`engine.analysis.compare.grid_frame` (columns ``KL``, ``CPPD``,
            ``value``).
        title: chart title.
        decimals: decimals shown (1 for means over seeds).
        scheme: Vega colour scheme.
    """
    top = float(frame["value"].max()) if len(frame) else 0.0
    data = frame.assign(
        text=[f"{v:.{decimals}f}" for v in frame["value"]],
        dark=frame["value"] > 0.55 * top if top > 0 else False,
    )
    base = _grid_base(data)
    tooltip = [
        alt.Tooltip("KL:O"),
        alt.Tooltip("CPPD:O"),
        alt.Tooltip("value:Q", title="Images", format=f".{decimals}f"),
    ]
    rect = base.mark_rect(stroke="white").encode(
        color=alt.Color(
            "value:Q",
            title="Images",
            scale=alt.Scale(scheme=scheme, domainMin=0),
            legend=value_legend(orient="bottom", direction="horizontal"),
        ),
        tooltip=tooltip,
    )
    text = _cell_numbers(base, tooltip)
    return (rect + text).properties(title=title, width=alt.Step(52), height=alt.Step(40))


def residual_heatmap(
    frame: pd.DataFrame,
    *,
    title: str = "",
    subtitle: str | Sequence[str] = "",
    limit: float | None = None,
    unit: str = "images",
) -> alt.LayerChart:
    """Predicted − true per KL × CPPD cell on a diverging scale centred on 0 (paper Fig. 8).

    Args:
        frame: columns ``KL``, ``CPPD``, ``value`` (predicted minus true; positive = the
            model over-estimates that combination).
        title: chart title (the method).
        subtitle: lines under the title, e.g. the KLD and MAE.
        limit: colour scale runs from ``-limit`` (blue) through 0 (white) to ``+limit``
            (red); pass one value to several charts to make them comparable. Defaults to
            the largest absolute residual.
        unit: ``"images"`` (one decimal) or ``"points"`` (percentage points, one decimal).
    """
    values = frame["value"].astype(float)
    top = float(limit if limit is not None else np.nanmax(np.abs(values)) if len(values) else 0)
    top = top if top > 0 else 1.0
    scale = 100.0 if unit == "points" else 1.0
    data = frame.assign(
        shown=values * scale,
        text=[f"{v * scale:+.1f}" for v in values],
        strong=np.abs(values) > 0.6 * top,
    )
    base = _grid_base(data)
    legend_title = "Pred − true (pp)" if unit == "points" else "Pred − true (images)"
    tooltip = [
        alt.Tooltip("KL:O"),
        alt.Tooltip("CPPD:O"),
        alt.Tooltip("shown:Q", title=legend_title, format="+.2f"),
    ]
    rect = base.mark_rect(stroke="white").encode(
        color=alt.Color(
            "shown:Q",
            title=legend_title,
            scale=alt.Scale(
                scheme="redblue", reverse=True, domain=[-top * scale, top * scale], domainMid=0
            ),
            legend=value_legend(orient="bottom", direction="horizontal"),
        ),
        tooltip=tooltip,
    )
    text = base.mark_text(fontSize=12).encode(
        text="text:N",
        color=alt.condition("datum.strong", alt.value("white"), alt.value("#222222")),
        tooltip=tooltip,
    )
    return (rect + text).properties(
        title=alt.TitleParams(title, subtitle=subtitle or []),
        width=alt.Step(52),
        height=alt.Step(40),
    )


#: Axis text on the charts a clinician reads at the kiosk (issue 39: Vega's 10 px ticks).
KIOSK_AXIS_FONT_PX = 13


def kiosk_axis(**settings: Any) -> alt.Axis:
    """An axis whose labels and title a clinician reads from a step back."""
    return alt.Axis(labelFontSize=KIOSK_AXIS_FONT_PX, titleFontSize=KIOSK_AXIS_FONT_PX, **settings)


def grade_probabilities(probs: Sequence[float], task: str, *, height: int = 160) -> alt.Chart:
    """Bars of a model's probability for each grade of ``task``, the chosen grade darker."""
    data = pd.DataFrame({"grade": range(len(probs)), "p": [float(v) for v in probs]})
    data["chosen"] = data["p"] == data["p"].max()
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("grade:O", title=f"{task} grade", axis=kiosk_axis(labelAngle=0)),
            y=alt.Y(
                "p:Q",
                title="Probability",
                scale=alt.Scale(domain=[0, 1]),
                axis=kiosk_axis(format=".0%"),
            ),
            color=alt.condition("datum.chosen", alt.value("#1f4e79"), alt.value("#9ecae1")),
            tooltip=[
                alt.Tooltip("grade:O", title=f"{task} grade"),
                alt.Tooltip("p:Q", title="Probability", format=".1%"),
            ],
        )
        .properties(height=height, width="container")
    )


def stress_lift(
    table: pd.DataFrame, *, column: str, title: str, level_title: str, height: int = 240
) -> alt.LayerChart:
    """Mean lift of each method's maps on one set of signs, per level of the varied grade.

    Args:
        table: rows of :func:`engine.gradcam.stress_table` for one or more knees (``method``,
            ``level`` and the lift ``column``).
        column: ``lift_own`` or ``lift_other``.
        title: chart title (which signs).
        level_title: x-axis title, e.g. ``"CPPD grade of the redrawn knee"``.
        height: chart height in pixels.

    Returns:
        A line per method through the mean over knees, a tooltip with the knee count, and a
        dashed rule at 1 (no more heat on the signs than anywhere else).
    """
    data = (
        table.dropna(subset=[column])
        .groupby(["method", "level"], as_index=False)
        .agg(lift=(column, "mean"), knees=(column, "size"))
    )
    data["Method"] = [method_title(m) for m in data["method"]]
    order = [method_title(m) for m in order_methods(data["method"])]
    levels = sorted(int(v) for v in table["level"].unique())
    legend = method_legend(len(order))
    lines = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("level:O", title=level_title, sort=levels, axis=alt.Axis(labelAngle=0)),
            y=alt.Y("lift:Q", title="Lift (× mean heat)", scale=alt.Scale(zero=True)),
            color=alt.Color("Method:N", sort=order, scale=method_scale(order), legend=legend),
            # Past the palette's first nine colours a line differs by dash too (one legend).
            strokeDash=alt.StrokeDash(
                "Method:N", sort=order, scale=method_dash_scale(order), legend=legend
            ),
            tooltip=[
                alt.Tooltip("Method:N"),
                alt.Tooltip("level:O", title=level_title),
                alt.Tooltip("lift:Q", title="Mean lift", format=".2f"),
                alt.Tooltip("knees:Q", title="Knees"),
            ],
        )
    )
    one = alt.Chart(pd.DataFrame({"y": [1.0]})).mark_rule(strokeDash=[4, 4]).encode(y="y:Q")
    return (lines + one).properties(title=title, height=height, width="container")


def value_legend(**settings: Any) -> alt.Legend:
    """The legend of a colour scale over numbers (a heatmap's): a few swatches of colour with
    their values, not a gradient bar. Vega's SVG gradient is filled through
    ``url(<page address>#gradient)``, an address taken when the chart is drawn; once the app
    writes a picker's value into the address bar, that reference points at another page and
    the bar goes blank (issue 39). Swatches are filled with plain colours."""
    return alt.Legend(type="symbol", symbolType="square", symbolSize=150, **settings)


def method_legend(n_methods: int, *, title: str | None = "Method") -> alt.Legend:
    """A method legend for a line chart: a line sample in each method's colour and dash; past
    `LEVEL_LABEL_METHODS` methods under the chart in three columns, since a tall legend
    beside a short chart is clipped at the chart's height (14 methods showed 6)."""
    if n_methods <= LEVEL_LABEL_METHODS:
        return alt.Legend(title=title, symbolType="stroke", symbolStrokeWidth=2)
    return alt.Legend(
        title=title,
        symbolType="stroke",
        symbolStrokeWidth=2,
        orient="bottom",
        direction="vertical",
        columns=3,
        symbolLimit=0,
        labelLimit=140,
    )


def seed_tables(frame: pd.DataFrame, *, columns: int = 5) -> alt.FacetChart:
    """Small multiples of predicted KL × CPPD tables, one per seed.

    Args:
        frame: columns ``seed``, ``KL``, ``CPPD``, ``value`` (counts).
        columns: charts per row.
    """
    data = frame.assign(text=[f"{v:.0f}" for v in frame["value"]])
    base = alt.Chart().encode(
        x=alt.X("CPPD:O", title="CPPD", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("KL:O", title="KL"),
    )
    rect = base.mark_rect(stroke="white").encode(
        # No legend: every cell prints its count, and a legend would not fit beside 20 tables.
        color=alt.Color(
            "value:Q", title="Images", scale=alt.Scale(scheme="purples", domainMin=0), legend=None
        ),
        tooltip=["seed:Q", "KL:O", "CPPD:O", alt.Tooltip("value:Q", title="Images")],
    )
    text = base.mark_text(fontSize=10).encode(text="text:N")
    return (
        alt.layer(rect, text, data=data)
        .properties(width=alt.Step(26), height=alt.Step(22))
        .facet(facet=alt.Facet("seed:O", title="Seed"), columns=columns)
    )


def residual_small_multiples(
    frame: pd.DataFrame, *, limit: float | None = None, columns: int = 7
) -> alt.FacetChart:
    """Every method's residual table (:func:`residual_heatmap`'s scale) as one small-multiple
    figure with one colour legend: 14 methods take two rows, not four of separate charts.

    Args:
        frame: columns ``method``, ``KL``, ``CPPD``, ``value`` (predicted − true images).
        limit: the colour scale's ``±limit``; defaults to the largest absolute residual.
        columns: panels per row.
    """
    values = frame["value"].astype(float)
    top = float(limit if limit is not None else np.nanmax(np.abs(values)) if len(values) else 0)
    top = top if top > 0 else 1.0
    methods = order_methods(frame["method"])
    data = frame.assign(
        Method=frame["method"].map(method_title),
        text=[f"{v:+.1f}" for v in values],
        strong=np.abs(values) > 0.6 * top,
    )
    base = alt.Chart().encode(
        x=alt.X("CPPD:O", title="CPPD", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("KL:O", title="KL"),
    )
    rect = base.mark_rect(stroke="white").encode(
        color=alt.Color(
            "value:Q",
            title="Pred − true (images)",
            scale=alt.Scale(scheme="redblue", reverse=True, domain=[-top, top], domainMid=0),
            legend=alt.Legend(orient="bottom", direction="horizontal", gradientLength=180),
        ),
        tooltip=["Method:N", "KL:O", "CPPD:O", alt.Tooltip("value:Q", format="+.2f")],
    )
    text = base.mark_text(fontSize=9).encode(
        text="text:N",
        color=alt.condition("datum.strong", alt.value("white"), alt.value("#222222")),
    )
    order = [method_title(m) for m in methods]
    return (
        alt.layer(rect, text, data=data)
        .properties(width=alt.Step(26), height=alt.Step(22))
        .facet(facet=alt.Facet("Method:N", title=None, sort=order), columns=columns)
    )


def kld_parts_bars(data: pd.DataFrame, *, title: str = "KLD by the chain rule") -> alt.Chart:
    """Per method, its KLD as two stacked bars: the KL-marginal part and the CPPD-given-KL part.

    Args:
        data: ``pages.present.inference_tables.kld_parts_long`` (``method``, ``part``,
            ``nats``, ``order``).
        title: chart title.
    """
    methods = order_methods(data["method"])
    shown = data.assign(Method=data["method"].map(method_title))
    return (
        alt.Chart(shown)
        .mark_bar()
        .encode(
            y=alt.Y("Method:N", sort=[method_title(m) for m in methods], title=None),
            x=alt.X("nats:Q", stack="zero", title="KLD (nats)"),
            color=alt.Color(
                "part:N",
                title="Part",
                sort=KLD_PARTS.view_headers("parts"),
                scale=alt.Scale(range=["#4c78a8", "#f58518"]),
            ),
            order=alt.Order("order:Q"),
            tooltip=["Method:N", "part:N", alt.Tooltip("nats:Q", format=".4f")],
        )
        .properties(title=title, width=360, height=alt.Step(22))
    )


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _cell_numbers(base: alt.Chart, tooltip: list[alt.Tooltip]) -> alt.Chart:
    """A grid heatmap's numbers over its cells (column ``text``), white on the dark cells
    (column ``dark``) so they stay legible."""
    return base.mark_text(fontSize=13).encode(
        text="text:N",
        color=alt.condition("datum.dark", alt.value("white"), alt.value("#222222")),
        tooltip=tooltip,
    )


def _grid_base(data: pd.DataFrame) -> alt.Chart:
    """KL on the y axis (0 at the top), CPPD on the x axis."""
    return alt.Chart(data).encode(
        x=alt.X("CPPD:O", title="CPPD grade", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("KL:O", title="KL grade"),
    )


def _cell_text(value: float, normalised: bool, decimals: int) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "–"
    if normalised:
        return f"{value:.0%}"
    return f"{value:.{decimals}f}"
