"""Altair charts of the probability and search-explorer views (the ranking's critical-
difference diagram is `pages.present.cd_diagram`).

Each function takes DataFrames (from `engine.analysis.probability_metrics`,
`engine.analysis.ranking` and
`engine.analysis.explorer`) and returns a chart; no streamlit here, so tests check a chart's data
and encodings without a browser.

* :func:`reliability_diagram` — observed frequency against mean predicted probability per
  bin, one line per method, the diagonal of perfect calibration; one panel per event
  (top label, or each ``grade > k``).
* :func:`configuration_strip` — every configuration a (task, method) search tried, its
  validation AMAE in each seed, the selected ones ringed.
* :func:`parameter_strip` — one hyper-parameter's values against validation AMAE, per method.
* :func:`learning_curves_chart` — train and validation loss and validation AMAE per epoch,
  lines coloured by method or seed, the best epoch marked, a running job's live point.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from engine.analysis import explorer
from engine.analysis.table_columns import CONFIGURATIONS
from engine.methods import method_sort_key, order_methods
from pages.present.charts import Scheme, method_legend
from pages.present.formatting import LEVEL_LABEL_METHODS
from pages.present.palette import method_dash_scale, method_scale
from pages.present.tables import method_title, param_label

DIAGONAL_COLOUR = "#888888"
BAR_COLOUR = "#222222"
LIVE_COLOUR = "#d62728"
SELECTED_STROKE = "#111111"
SCHEME: Scheme = "tableau10"
#: A learning curve's series as a reader reads them (`engine.analysis.explorer`, once).
SERIES_TITLES: dict[str, str] = dict(explorer.CURVE_LABELS)
VAL_AMAE_TITLE = SERIES_TITLES["val_amae"]
#: A run's configuration, epochs and fate read as in the Explorer's configurations table.
RUN_TITLES: dict[str, str] = CONFIGURATIONS.headers()


def _method_colour(methods: Sequence[str], *, legend: bool = True) -> alt.Color:
    titles = [method_title(m) for m in methods]
    return alt.Color(
        "Method:N",
        sort=titles,
        scale=method_scale(methods),
        legend=method_legend(len(methods)) if legend else None,
    )


def _method_dash(methods: Sequence[str]) -> alt.StrokeDash:
    """Each method's line dash (`pages.present.palette.method_dashes`): past the palette's
    first nine colours a line differs by dash too. Same field and title as `_method_colour`,
    so Vega-Lite draws one legend with both."""
    return alt.StrokeDash(
        "Method:N",
        sort=[method_title(m) for m in methods],
        scale=method_dash_scale(methods),
        legend=method_legend(len(methods)),
    )


# --------------------------------------------------------------------------------------------
# Reliability diagrams
# --------------------------------------------------------------------------------------------


def reliability_diagram(
    reliability: pd.DataFrame,
    *,
    title: str = "",
    size: int = 220,
    pooled_seeds: int | None = None,
    columns: int = 3,
    clickable: bool = True,
) -> alt.ConcatChart:
    """Reliability diagram(s) of one task.

    Args:
        reliability: `engine.analysis.probability_metrics.reliability_table` rows of one task
            (``method``, ``event``, ``threshold``, ``bin_low``, ``bin_high``, ``confidence``,
            ``accuracy``, ``count``); every event present gets its own panel, in threshold
            order (top label first).
        title: chart title.
        size: width and height of one panel in pixels.
        pooled_seeds: how many seeds' test films each method's bins pool, said in the size
            legend and the subtitle (a bin's count can then exceed the study's films).
        columns: panels per row.
        clickable: with many methods, the legend picks methods to follow (a page); False
            for a static figure (the report's SVG), which neither offers nor says so.

    Returns:
        Panels side by side; in each, the diagonal (perfect calibration) and, per method,
        a line through its bins with a point per bin sized by its number of films.
    """
    data = reliability.assign(Method=[method_title(m) for m in reliability["method"]])
    methods = order_methods(reliability["method"])
    colour = _method_colour(methods)
    events = (
        data.drop_duplicates("event").sort_values("threshold")["event"].tolist()
        if len(data)
        else []
    )
    # The subtitle's parts are lines of their own: a title is not wrapped, and one line ran
    # past a row of small panels (the report's) and was cut.
    films = "Films"
    subtitle = ["On the dashed diagonal, predicted probabilities match what happens"]
    if pooled_seeds is not None:
        films = f"Films, {pooled_seeds} seeds pooled"
        subtitle.append(
            f"Each method's test films of its {pooled_seeds} seeds pooled: a film counts "
            "once per seed that tested it"
        )
    diagonal = pd.DataFrame({"x": [0.0, 1.0], "y": [0.0, 1.0]})
    axis_scale = alt.Scale(domain=[0, 1], nice=False)
    # Many methods' lines cross into a tangle (issue 39, 14 methods): a click on the legend
    # picks methods to follow, and the others fade.
    many = clickable and len(methods) > LEVEL_LABEL_METHODS
    picked = alt.selection_point(fields=["Method"], bind="legend", name="reliability_pick")
    faded = alt.condition(picked, alt.value(1.0), alt.value(0.12)) if many else alt.Undefined
    if many:
        subtitle.append("To follow methods, click methods in the legend (shift-click for several)")
    panels = []
    for event in events:
        rows = data[data["event"] == event]
        x_title = (
            "Predicted P(top grade)" if rows["threshold"].iloc[0] < 0 else (f"Predicted P({event})")
        )
        y_title = "Share correct" if rows["threshold"].iloc[0] < 0 else f"Observed share {event}"
        base = alt.Chart(rows).encode(
            x=alt.X("confidence:Q", title=x_title, scale=axis_scale),
            y=alt.Y("accuracy:Q", title=y_title, scale=axis_scale),
            color=colour,
        )
        tooltip = [
            alt.Tooltip("Method:N"),
            alt.Tooltip("bin_low:Q", title="Bin from", format=".1f"),
            alt.Tooltip("bin_high:Q", title="Bin to", format=".1f"),
            alt.Tooltip("confidence:Q", title="Mean predicted", format=".3f"),
            alt.Tooltip("accuracy:Q", title="Observed", format=".3f"),
            alt.Tooltip("count:Q", title="Films"),
        ]
        panels.append(
            alt.layer(
                alt.Chart(diagonal)
                .mark_line(color=DIAGONAL_COLOUR, strokeDash=[4, 4])
                .encode(x=alt.X("x:Q", scale=axis_scale), y=alt.Y("y:Q", scale=axis_scale)),
                base.mark_line(strokeWidth=1.5).encode(
                    detail="Method:N",
                    order="bin:Q",
                    strokeDash=_method_dash(methods),
                    opacity=faded,
                ),
                base.mark_circle(opacity=0.9).encode(
                    size=alt.Size("count:Q", title=films, scale=alt.Scale(range=[15, 250])),
                    tooltip=tooltip,
                    opacity=faded,
                ),
            ).properties(title=str(event), width=size, height=size)
        )
    if many and panels:
        panels[0] = panels[0].add_params(picked)
    return alt.concat(*panels, columns=columns).properties(
        title=alt.TitleParams(title, subtitle=subtitle)
    )


# --------------------------------------------------------------------------------------------
# Search explorer
# --------------------------------------------------------------------------------------------


#: What became of a run of a search (`with_stopped`'s columns), in every tooltip that shows
#: one run: selected by its seed, stopped by the pruner, or gone non-finite.
RUN_FATE_TOOLTIPS: tuple[alt.Tooltip, ...] = (
    alt.Tooltip("selected:N", title=RUN_TITLES["selected"]),
    alt.Tooltip("stopped:N", title="Stopped by the pruner"),
    alt.Tooltip("went_non_finite:N", title="Diverged"),
)


def configuration_strip(
    search: pd.DataFrame, *, title: str = "", height: int = 300
) -> alt.LayerChart:
    """Every configuration one (task, method) search tried, with its validation AMAE.

    Args:
        search: `engine.analysis.explorer.search_table` rows of one task and method (any seeds).
        title: chart title.
        height: pixels.

    Returns:
        One column per configuration (best mean validation AMAE of its runs that trained to
        their end first; a configuration the pruner always stopped last), one point per
        seed's run coloured by seed, a cross where the pruner stopped the run; the run each
        seed selected is ringed in black.
    """
    data = with_stopped(search).assign(seed_label="seed " + search["seed"].astype(str))
    trained = data["val_amae"].where(~data["pruned"] & ~data["diverged"])
    means = trained.groupby(data["config_key"]).mean()
    order = means.sort_values(na_position="last").index.tolist()
    tooltip = [
        alt.Tooltip("config_key:N", title=RUN_TITLES["config_index"]),
        alt.Tooltip("seed:Q", title="Seed"),
        alt.Tooltip("val_amae:Q", title=VAL_AMAE_TITLE, format=".4f"),
        alt.Tooltip("rank:Q", title="Rank in its search"),
        alt.Tooltip("epochs_run:Q", title=RUN_TITLES["epochs_run"]),
        alt.Tooltip("best_epoch:Q", title=RUN_TITLES["best_epoch"]),
        *RUN_FATE_TOOLTIPS,
    ]
    x = alt.X(
        "config_key:N", sort=order, title=RUN_TITLES["config_index"], axis=alt.Axis(labelAngle=-35)
    )
    base = alt.Chart(data).encode(
        x=x,
        xOffset=alt.XOffset("seed_label:N"),
        y=alt.Y("val_amae:Q", title=VAL_AMAE_TITLE, scale=alt.Scale(zero=False)),
    )
    colour = alt.Color("seed_label:N", title="Seed", legend=None)
    points = base.transform_filter(TRAINED_ON).mark_circle(size=45, opacity=0.8)
    points = points.encode(color=colour, tooltip=tooltip)
    ring = base.transform_filter("datum.selected").mark_point(
        size=120, stroke=SELECTED_STROKE, strokeWidth=1.5, filled=False
    )
    layers = [points, ring]
    subtitle = "Ringed: the configuration each seed selected"
    if data["pruned"].any():
        layers.append(stopped_marks(base).encode(color=colour, tooltip=tooltip))
        subtitle += f" · {STOPPED_KEY}"
    if data["diverged"].any():
        layers.append(diverged_marks(base).encode(color=colour, tooltip=tooltip))
        subtitle += f" · {DIVERGED_KEY}"
    return alt.LayerChart(layer=layers).properties(
        title=alt.TitleParams(title, subtitle=subtitle),
        height=height,
        width=max(45 * len(order), 220),
    )


# Runs a pruned search stopped: their AMAE is their early epochs', so they are drawn apart
# (a cross) and left out of every mean. Runs that diverged (a loss went non-finite) likewise,
# as a triangle: their AMAE is their last finite epoch's.
TRAINED_ON = "!datum.pruned && !datum.diverged"
STOPPED_KEY = "×: stopped by the pruner (its early epochs' AMAE, in no mean)"
DIVERGED_KEY = "▼: diverged, its loss went non-finite (its last finite epoch's AMAE, in no mean)"


def with_stopped(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with booleans ``pruned`` and ``diverged`` (False where the columns are
    missing) and their words for a tooltip, ``stopped`` and ``went_non_finite``."""
    pruned, diverged = explorer.stopped_runs(frame), explorer.diverged_runs(frame)
    return frame.assign(
        pruned=pruned,
        stopped=np.where(pruned, "yes", "no"),
        diverged=diverged,
        went_non_finite=np.where(diverged, "yes", "no"),
    )


def diverged_marks(base: alt.Chart) -> alt.Chart:
    """The runs that diverged, as downward triangles."""
    return base.transform_filter("datum.diverged").mark_point(
        shape="triangle-down", size=60, filled=True, opacity=0.8
    )


def stopped_marks(base: alt.Chart) -> alt.Chart:
    """The runs a pruned search stopped, as crosses (×: Vega's cross is a +, turned)."""
    return base.transform_filter("datum.pruned").mark_point(
        shape="cross", angle=45, size=60, filled=True, opacity=0.8
    )


def parameter_strip(
    effects: pd.DataFrame,
    param: str,
    *,
    title: str = "",
    height: int = 260,
    value_width: int = 70,
    columns: int = 5,
) -> alt.FacetChart:
    """One hyper-parameter's values against validation AMAE, one panel per method.

    Args:
        effects: `engine.analysis.explorer.parameter_effects` rows of one task.
        param: a searched hyper-parameter's name (``"lr"``, ``"eta"``; its label from the
            method registry).
        title: chart title.
        height: pixels.
        value_width: pixels per value in a panel (a panel is at least 140): a facet chart
            does not shrink to its container, so a page narrows it to fit five methods.
        columns: panels per row; more methods wrap onto further rows (fourteen methods in
            one row would run past the page, which Streamlit clips).

    Returns:
        Per method (paper's order), one point per run at its parameter value (spread by
        seed), the mean validation AMAE per value as a black tick, selected runs ringed.
    """
    rows = with_stopped(effects[effects["param"] == param])
    methods = order_methods(rows["method"])
    data = rows.assign(
        Method=[method_title(m) for m in rows["method"]],
        value_label=[f"{v:g}" for v in rows["value"]],
        seed_label="seed " + rows["seed"].astype(str),
    )
    values = [f"{v:g}" for v in sorted(rows["value"].unique())]
    x = alt.X(
        "value_label:N",
        sort=values,
        title=param_label(param),
        axis=alt.Axis(labelAngle=0),
    )
    y = alt.Y("val_amae:Q", title=VAL_AMAE_TITLE, scale=alt.Scale(zero=False))
    tooltip = [
        alt.Tooltip("Method:N"),
        alt.Tooltip("value_label:N", title=param_label(param)),
        alt.Tooltip("seed:Q", title="Seed"),
        alt.Tooltip("config_key:N", title=RUN_TITLES["config_index"]),
        alt.Tooltip("val_amae:Q", title=VAL_AMAE_TITLE, format=".4f"),
        *RUN_FATE_TOOLTIPS,
    ]
    base = alt.Chart().encode(x=x, xOffset=alt.XOffset("seed_label:N"), y=y)
    colour = _method_colour(methods, legend=False)
    points = base.transform_filter(TRAINED_ON).mark_circle(size=35, opacity=0.6)
    points = points.encode(color=colour, tooltip=tooltip)
    ring = base.transform_filter("datum.selected").mark_point(
        size=90, stroke=SELECTED_STROKE, strokeWidth=1.2, filled=False
    )
    mean = (
        alt.Chart()
        .transform_filter(TRAINED_ON)
        .mark_tick(color=BAR_COLOUR, thickness=2, size=30)
        .encode(
            x=x,
            y=alt.Y("mean(val_amae):Q"),
            tooltip=[alt.Tooltip("mean(val_amae):Q", format=".4f")],
        )
    )
    layers = [points, ring, mean]
    subtitle = "Black tick: mean over every run · ringed: selected runs"
    keys = []
    if data["pruned"].any():
        layers.append(stopped_marks(base).encode(color=colour, tooltip=tooltip))
        keys.append(STOPPED_KEY)
    if data["diverged"].any():
        layers.append(diverged_marks(base).encode(color=colour, tooltip=tooltip))
        keys.append(DIVERGED_KEY)
    if keys:
        subtitle = " · ".join(
            ["Black tick: mean over the runs that trained to their end · ringed: selected runs"]
            + keys
        )
    return (
        alt.layer(*layers, data=data)
        .properties(height=height, width=max(value_width * len(values), 140))
        .facet(
            facet=alt.Facet("Method:N", sort=[method_title(m) for m in methods], title=None),
            columns=columns,
        )
        .properties(title=alt.TitleParams(title, subtitle=subtitle))
    )


# --------------------------------------------------------------------------------------------
# Learning curves
# --------------------------------------------------------------------------------------------


# How the learning curves mark an epoch drawn at a panel's ceiling: a triangle in its line's
# colour (the triangles encode the line, so the reader can tell whose epoch diverged).
CLIPPED_MARK = "triangles in the line's colour"


def learning_curves_chart(
    curves: pd.DataFrame,
    *,
    series: Sequence[str] = ("train_loss", "val_loss", "val_amae"),
    live: pd.DataFrame | None = None,
    title: str = "",
    width: int = 260,
    height: int = 220,
) -> alt.HConcatChart:
    """Learning curves side by side, one panel per series.

    Args:
        curves: `engine.analysis.explorer.overlay` rows (``line``, ``colour``, ``epoch``,
            ``series``, ``value``, ``best``, plus ``method``, ``seed``, ``config_index``
            for the tooltip).
        series: the panels, in order.
        live: optional `engine.analysis.explorer.in_flight_point` row(s): drawn as a red diamond on
            the validation AMAE panel.
        title: chart title.
        width: pixels per panel.
        height: pixels.

    Returns:
        For each series, one line per run coloured by ``colour`` and a point at each run's
        best epoch (the weights kept).
    """
    curves = relative_losses(explorer.clip_diverged(curves))
    relative = bool(curves["relative"].any()) if "relative" in curves else False
    curves = curves.assign(Line=[_line_title(c) for c in curves["colour"]])
    colours = sorted(curves["colour"].unique(), key=_colour_key) if len(curves) else []
    titles = [_line_title(c) for c in colours]
    by_seed = any(c.startswith("seed ") for c in colours)
    # Lines by method take the one method palette; lines by seed a categorical scheme with
    # enough colours for every seed (`line_scheme`).
    scale = (
        alt.Scale(scheme=line_scheme(titles), domain=titles) if by_seed else method_scale(colours)
    )
    legend = method_legend(len(titles), title=None)
    colour = alt.Color("Line:N", sort=titles, scale=scale, title=None, legend=legend)
    # Lines by method also differ by dash past the palette's first block (one legend).
    dash = (
        {}
        if by_seed
        else {
            "strokeDash": alt.StrokeDash(
                "Line:N",
                sort=titles,
                scale=method_dash_scale(colours),
                title=None,
                legend=legend,
            )
        }
    )
    tooltip = [
        alt.Tooltip("Line:N"),
        alt.Tooltip("method:N", title="Method"),
        alt.Tooltip("seed:Q", title="Seed"),
        alt.Tooltip("config_index:Q", title=RUN_TITLES["config_index"]),
        alt.Tooltip("epoch:Q", title="Epoch"),
        alt.Tooltip("value:Q", title="Value", format=".4f"),
    ]
    panels = []
    for name in series:
        rows = curves[curves["series"] == name]
        # Values above a diverged series' ceiling are drawn at it (`shown`) and marked, so
        # that they do not flatten every other curve; the tooltip keeps the real value.
        y_title = SERIES_TITLES.get(name, name)
        if relative and name in LOSS_SERIES:
            y_title += RELATIVE_SUFFIX
        y = alt.Y("shown:Q", title=y_title, scale=alt.Scale(zero=False))
        x = alt.X("epoch:Q", title="Epoch", axis=alt.Axis(tickMinStep=1, format="d"))
        base = alt.Chart(rows).encode(x=x, y=y, color=colour)
        layers = [
            base.mark_line(strokeWidth=1.2, opacity=0.7).encode(
                detail="line:N", tooltip=tooltip, **dash
            ),
            base.transform_filter("datum.best")
            .mark_point(size=50, filled=True, shape="circle", stroke="white", strokeWidth=0.8)
            .encode(tooltip=tooltip),
            base.transform_filter("datum.clipped")
            .mark_point(size=60, filled=True, shape="triangle-up")
            .encode(tooltip=tooltip),
        ]
        if live is not None and len(live) and name == "val_amae":
            layers.append(
                alt.Chart(live)
                .mark_point(size=110, shape="diamond", filled=True, color=LIVE_COLOUR)
                .encode(
                    x=x,
                    y=alt.Y("value:Q"),
                    tooltip=[
                        alt.Tooltip("run_id:N", title="Training now"),
                        alt.Tooltip("epoch:Q", title="Epoch"),
                        alt.Tooltip("value:Q", title=VAL_AMAE_TITLE, format=".4f"),
                    ],
                )
            )
        panels.append(
            alt.layer(*layers).properties(
                title=SERIES_TITLES.get(name, name), width=width, height=height
            )
        )
    subtitle = "Dots: each run's best epoch (its weights are kept)"
    if relative:
        subtitle += f" · {RELATIVE_NOTE}"
    if curves["clipped"].any():
        subtitle += f" · {CLIPPED_MARK}: diverged epochs, drawn at the panel's ceiling"
    if live is not None and len(live):
        subtitle += " · red diamond: the run training now"
    return alt.hconcat(*panels).properties(title=alt.TitleParams(title, subtitle=subtitle))


#: The panels that plot a method's own training loss.
LOSS_SERIES = ("train_loss", "val_loss")
RELATIVE_SUFFIX = " (÷ its epoch 1)"
RELATIVE_NOTE = (
    "methods minimise different losses, so each run's loss is shown relative to its first "
    "epoch (the tooltip keeps the value)"
)


def relative_losses(curves: pd.DataFrame) -> pd.DataFrame:
    """Loss panels on one scale when the lines are several methods: each method trains on
    its own loss (cross-entropy, CORN's, EMD, QWK loss, ...), whose values share no scale
    (issue 39: 14 kinds of loss on one axis), so each line's loss is divided by its first
    epoch's (a line whose first value is not positive is kept as it is). A column
    ``relative`` says which rows were. One method's lines are left alone."""
    if curves.empty or "method" not in curves or curves["method"].nunique() < 2:
        return curves.assign(relative=False)
    loss = curves["series"].isin(LOSS_SERIES)
    first = (
        curves[loss].sort_values("epoch").groupby(["line", "series"])["value"].transform("first")
    )
    scale = first.reindex(curves.index)
    usable = loss & (scale > 0)
    shown = curves["shown"].where(~usable, curves["shown"] / scale)
    return curves.assign(shown=shown, relative=usable)


def line_scheme(titles: Sequence[str]) -> Scheme:
    """A colour scheme with a distinct colour for every line: ``tableau20`` past ten lines
    (20 seeds drew with 10 colours, each twice)."""
    return SCHEME if len(titles) <= 10 else "tableau20"


def _colour_key(label: str) -> tuple[int, int, str]:
    """Methods in the paper's order, then seeds in numeric order."""
    if label.startswith("seed ") and label[5:].isdigit():
        return (1, int(label[5:]), label)
    return (0, method_sort_key(label)[0], label)


def _line_title(label: str) -> str:
    """``"beta"`` → ``"Beta"``; ``"seed 3"`` stays."""
    return label if label.startswith("seed ") else method_title(label)
