"""pages.present.charts: every chart is a valid Vega-Lite spec showing the numbers it was given."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.analysis import compare
from engine.methods import MethodParams, target_matrix
from pages.present import charts


def _spec(chart) -> dict:
    return chart.to_dict()  # validates against the Vega-Lite schema


def _layer_data(spec: dict, layer: dict) -> pd.DataFrame:
    name = layer.get("data", spec.get("data", {})).get("name")
    return pd.DataFrame(spec["datasets"][name])


def test_soft_label_frame_holds_every_cell_of_the_matrix():
    matrix = target_matrix("binomial", 4, MethodParams(lr=1e-3))
    frame = charts.soft_label_frame(matrix)
    assert len(frame) == 16
    cell = frame[(frame.true_grade == 1) & (frame.target_grade == 2)]
    assert cell.probability.item() == pytest.approx(matrix[1, 2])
    assert frame.groupby("true_grade").probability.sum().tolist() == pytest.approx([1.0] * 4)


def test_soft_label_frame_refuses_a_non_square_matrix():
    with pytest.raises(ValueError, match="square"):
        charts.soft_label_frame(np.ones((2, 3)))


def test_soft_label_heatmap_is_a_rect_chart_with_labels():
    spec = charts.soft_label_heatmap(
        charts.soft_label_frame(target_matrix("beta", 5, MethodParams(lr=1e-3))), title="beta"
    ).to_dict()
    marks = [layer["mark"]["type"] for layer in spec["layer"]]
    assert marks == ["rect", "text"]
    assert spec["title"] == "beta"
    bare = charts.soft_label_heatmap(charts.soft_label_frame(np.eye(3)), values=False).to_dict()
    assert bare["mark"]["type"] == "rect"


@pytest.fixture
def scores() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    frames = [
        pd.DataFrame({"method": m, "seed": range(8), "value": rng.normal(mu, 0.05, 8)})
        for m, mu in (("triangular", 0.45), ("nominal", 0.75), ("beta", 0.5))
    ]
    one = pd.DataFrame({"method": ["exponential"], "seed": [0], "value": [0.6]})
    return pd.concat([*frames, one], ignore_index=True)


def test_violin_box_shows_every_seed_and_the_right_summary(scores):
    spec = _spec(charts.violin_box(scores, value_title="AMAE", title="KL"))
    layers = spec["layer"]
    points = _layer_data(spec, layers[-1])
    assert len(points) == len(scores)
    tooltip = {t["field"] for t in layers[-1]["encoding"]["tooltip"]}
    assert {"seed", "value", "Method"} <= tooltip

    rules = [layer for layer in layers if layer["mark"]["type"] == "rule"]
    mean_rule = next(r for r in rules if r["encoding"]["y"]["field"] == "mean")
    median_rule = next(r for r in rules if r["encoding"]["y"]["field"] == "median")
    assert mean_rule["mark"]["color"] == charts.MEAN_COLOUR and mean_rule["mark"]["strokeDash"]
    assert "strokeDash" not in median_rule["mark"]
    summary = _layer_data(spec, median_rule).set_index("method")
    for method, rows in scores.groupby("method"):
        values = rows["value"].to_numpy()
        assert summary.loc[method, "median"] == pytest.approx(np.median(values))
        assert summary.loc[method, "mean"] == pytest.approx(values.mean())
        assert summary.loc[method, "q1"] == pytest.approx(np.percentile(values, 25))
        assert summary.loc[method, "q3"] == pytest.approx(np.percentile(values, 75))
        assert summary.loc[method, "whisker_low"] >= values.min()

    # Methods in the paper's order along x, labelled by name.
    assert list(summary.sort_values("slot").index) == [
        "nominal",
        "beta",
        "triangular",
        "exponential",
    ]
    assert "Exponential" in layers[-1]["encoding"]["x"]["axis"]["labelExpr"]

    violin = _layer_data(spec, layers[0])
    assert layers[0]["mark"]["type"] == "area"
    assert set(violin["method"]) == {"nominal", "beta", "triangular"}  # one seed: no violin
    assert (violin["x"] <= violin["x2"]).all()


def test_violin_box_without_violin_is_a_box_plot(scores):
    spec = _spec(charts.violin_box(scores, value_title="KLD", violin=False))
    assert all(layer["mark"]["type"] != "area" for layer in spec["layer"])


def test_violin_box_survives_identical_values():
    same = pd.DataFrame({"method": ["beta"] * 3, "seed": [0, 1, 2], "value": [0.5] * 3})
    _spec(charts.violin_box(same, value_title="x"))


def test_confusion_heatmap_counts_and_row_shares():
    cm = np.array([[8, 2, 0], [1, 3, 0], [0, 0, 0]])
    frame = compare.confusion_frame(cm)
    spec = _spec(charts.confusion_heatmap(frame, normalised=False, title="t"))
    data = _layer_data(spec, spec["layer"][1]).set_index(["true", "predicted"])
    assert data.loc[(0, 0), "text"] == "8"
    assert data.loc[(2, 2), "text"] == "0"
    assert spec["layer"][0]["encoding"]["color"]["field"] == "value"

    spec = _spec(charts.confusion_heatmap(frame, normalised=True, domain_max=1.0))
    data = _layer_data(spec, spec["layer"][1]).set_index(["true", "predicted"])
    assert data.loc[(0, 0), "text"] == "80%"
    assert data.loc[(1, 1), "text"] == "75%"
    assert data.loc[(2, 0), "text"] == "–"  # grade absent from the test set
    assert spec["layer"][0]["encoding"]["color"]["scale"]["domain"] == [0, 1.0]


def test_contingency_heatmap_prints_counts():
    table = np.arange(20).reshape(5, 4)
    spec = _spec(charts.contingency_heatmap(compare.grid_frame(table), title="truth"))
    data = _layer_data(spec, spec["layer"][1]).set_index(["KL", "CPPD"])
    assert data.loc[(4, 3), "text"] == "19"
    assert spec["layer"][0]["encoding"]["y"]["field"] == "KL"


def test_residual_heatmap_diverges_around_zero_red_for_over_estimation():
    residual = np.zeros((5, 4))
    residual[0, 0], residual[4, 3] = -3.0, 1.5
    spec = _spec(charts.residual_heatmap(compare.grid_frame(residual), title="Beta", limit=4.0))
    scale = spec["layer"][0]["encoding"]["color"]["scale"]
    assert scale["domainMid"] == 0 and scale["domain"] == [-4.0, 4.0]
    assert scale["scheme"] == "redblue" and scale["reverse"] is True  # high = red
    data = _layer_data(spec, spec["layer"][1]).set_index(["KL", "CPPD"])
    assert data.loc[(4, 3), "text"] == "+1.5"
    assert data.loc[(0, 0), "text"] == "-3.0"
    points = _spec(charts.residual_heatmap(compare.grid_frame(residual / 100), unit="points"))
    assert (
        _layer_data(points, points["layer"][1]).set_index(["KL", "CPPD"]).loc[(4, 3), "text"]
        == "+1.5"
    )


def test_seed_tables_facet_one_table_per_seed():
    frames = [compare.grid_frame(np.full((5, 4), s)).assign(seed=s) for s in range(3)]
    spec = _spec(charts.seed_tables(pd.concat(frames, ignore_index=True)))
    assert spec["facet"]["field"] == "seed"
    data = pd.DataFrame(spec["datasets"][spec["data"]["name"]])
    assert len(data) == 60


def test_stress_lift_draws_the_mean_over_knees_per_method_and_level():
    table = pd.DataFrame(
        {
            "method": ["beta", "beta", "nominal", "nominal", "beta", "nominal"],
            "level": [0, 0, 0, 0, 1, 1],
            "knee": [1, 2, 1, 2, 1, 1],
            "lift_other": [1.0, 3.0, 0.5, np.nan, 2.0, 4.0],
        }
    )
    spec = _spec(charts.stress_lift(table, column="lift_other", title="t", level_title="CPPD"))
    lines, rule = spec["layer"]
    data = _layer_data(spec, lines).set_index(["method", "level"])
    assert data.loc[("beta", 0), "lift"] == 2.0 and data.loc[("beta", 0), "knees"] == 2
    assert data.loc[("nominal", 0), "knees"] == 1  # a knee without the sign is left out
    assert data.loc[("nominal", 1), "lift"] == 4.0
    assert lines["encoding"]["color"]["sort"] == ["Nominal", "Beta"]
    assert _layer_data(spec, rule)["y"].tolist() == [1.0]


def _number_colour_legends(spec: object) -> list[dict]:
    """Every legend of a colour encoding over numbers (``quantitative``) in a spec."""
    found: list[dict] = []
    if isinstance(spec, dict):
        colour = spec.get("color")
        if isinstance(colour, dict) and colour.get("type") == "quantitative":
            found.append(colour.get("legend", {}))
        for value in spec.values():
            found.extend(_number_colour_legends(value))
    elif isinstance(spec, list):
        for value in spec:
            found.extend(_number_colour_legends(value))
    return found


def _heatmaps() -> list:
    cm = compare.confusion_frame(np.array([[8, 2], [1, 3]]))
    grid = compare.grid_frame(np.arange(20).reshape(5, 4) - 8)
    return [
        charts.confusion_heatmap(cm, normalised=False),
        charts.confusion_heatmap(cm, normalised=True),
        charts.contingency_heatmap(grid),
        charts.residual_heatmap(grid),
    ]


def test_heatmap_legends_are_swatches_not_a_gradient_the_address_can_blank():
    """Issue 39: Vega fills a gradient legend through url(<page address>#id); once the app
    rewrote the address the bar went blank. Every heatmap legend is swatches of colour."""
    import vl_convert as vlc

    for chart in _heatmaps():
        spec = _spec(chart)
        legends = [legend for legend in _number_colour_legends(spec) if legend is not None]
        assert legends, "each heatmap keeps a legend"
        assert all(legend.get("type") == "symbol" for legend in legends), legends
    drawn = vlc.vegalite_to_svg(_heatmaps()[0].to_json())
    assert "url(" not in drawn and "<rect" in drawn
