"""pages.present.science_charts: each chart is a valid Vega-Lite spec showing the numbers given."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from engine.analysis import explorer, ranking
from engine.analysis import probability_metrics as pm
from engine.analysis.expected_max import expected_best_table
from pages.present import budget_curves, cd_diagram
from pages.present import science_charts as charts

METHODS = ["nominal", "binomial", "beta", "triangular", "exponential"]


def _datasets(spec: dict) -> dict[str, pd.DataFrame]:
    return {name: pd.DataFrame(rows) for name, rows in spec.get("datasets", {}).items()}


def _layer_frame(spec: dict, layer: dict, *parents: dict) -> pd.DataFrame:
    """The rows a layer draws: its own data, else its nearest parent's (Altair hoists it)."""
    for node in (layer, *reversed(parents), spec):
        if "data" in node:
            return pd.DataFrame(spec["datasets"][node["data"]["name"]])
    raise AssertionError("layer has no data")


def _mark(layer: dict) -> str:
    return layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"]


def _marks(layers: list[dict]) -> list[str]:
    return [_mark(layer) for layer in layers]


@pytest.fixture
def probability_frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    parts = []
    for method in ("nominal", "beta"):
        for seed in range(2):
            probs = rng.dirichlet(np.ones(4), size=80)
            part = pd.DataFrame(
                {
                    "study_id": "s",
                    "run_id": f"s-CPPD-{method}-s{seed}-c0",
                    "task": "CPPD",
                    "method": method,
                    "seed": seed,
                    "y_true": rng.integers(0, 4, 80),
                }
            )
            for g in range(4):
                part[f"p{g}"] = probs[:, g]
            parts.append(part)
    return pd.concat(parts, ignore_index=True)


def test_reliability_diagram_has_one_panel_per_event_with_the_bins_and_the_diagonal(
    probability_frame,
):
    table = pm.reliability_table(probability_frame)
    spec = charts.reliability_diagram(table, title="CPPD").to_dict()
    panels = spec["concat"]
    assert [p["title"] for p in panels] == ["top label", "grade > 0", "grade > 1", "grade > 2"]
    top = panels[0]
    assert _marks(top["layer"]) == ["line", "line", "circle"]
    diagonal = _layer_frame(spec, top["layer"][0])
    assert diagonal[["x", "y"]].to_numpy().tolist() == [[0.0, 0.0], [1.0, 1.0]]
    points = _layer_frame(spec, top["layer"][2])
    expected = table[table["event"] == pm.TOP_LABEL]
    assert len(points) == len(expected)
    assert sorted(points["accuracy"]) == pytest.approx(sorted(expected["accuracy"]))
    assert set(points["Method"]) == {"Nominal", "Beta"}
    colour = top["layer"][2]["encoding"]["color"]
    assert colour["scale"]["domain"] == ["Nominal", "Beta"]  # paper's order
    assert top["layer"][2]["encoding"]["size"]["field"] == "count"


def _cd_result(seed: int = 0) -> ranking.CriticalDifference:
    rng = np.random.default_rng(seed)
    means = np.array([0.70, 0.52, 0.50, 0.55, 0.45])
    matrix = means + rng.normal(0, 0.08, size=(20, 5))
    scores = pd.DataFrame(
        [
            {"method": m, "seed": s, "value": matrix[s, j]}
            for s in range(20)
            for j, m in enumerate(METHODS)
        ]
    )
    return ranking.critical_difference(scores, lower_is_better=True)


def test_cd_diagram_places_each_method_at_its_mean_rank_and_draws_the_groups_and_cd():
    result = _cd_result()
    spec = cd_diagram.critical_difference_diagram(
        result.table, result.groups, result.cd, title="AMAE"
    ).to_dict()
    layers = spec["layer"]
    points = _layer_frame(spec, next(layer for layer in layers if _mark(layer) == "circle"))
    ranks = result.table.set_index("method")["mean_rank"]
    assert points.set_index("method")["mean_rank"].to_dict() == pytest.approx(ranks.to_dict())
    rules = {layer["mark"].get("strokeWidth"): layer for layer in layers if _mark(layer) == "rule"}
    bars = _layer_frame(spec, rules[4]).sort_values("low")
    expected = result.groups.sort_values("low")
    assert bars["low"].to_numpy() == pytest.approx(expected["low"].to_numpy())
    assert bars["high"].to_numpy() == pytest.approx(expected["high"].to_numpy())
    cd_rule = rules[2]
    cd = _layer_frame(spec, cd_rule)
    assert (cd["end"] - cd["start"]).item() == pytest.approx(result.cd)
    axis = _layer_frame(spec, layers[0])
    assert axis[["mean_rank", "end", "row"]].iloc[0].tolist() == [1.0, 5.0, 0.0]
    tick_labels = _layer_frame(spec, layers[2])
    assert tick_labels["mean_rank"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_cd_layout_labels_the_better_half_left_and_stacks_overlapping_bars():
    ranks = pd.DataFrame({"method": ["a", "b", "c", "d"], "mean_rank": [1.2, 2.0, 3.1, 3.7]})
    groups = pd.DataFrame(
        {
            "methods": [("a", "b"), ("b", "c"), ("c", "d")],
            "low": [1.2, 2.0, 3.1],
            "high": [2.0, 3.1, 3.7],
        }
    )
    labels, bars, _ = cd_diagram.critical_difference_layout(ranks, groups)
    assert labels.set_index("method")["side"].to_dict() == {
        "a": "left",
        "b": "left",
        "c": "right",
        "d": "right",
    }
    # a-b and c-d do not overlap: one row; b-c touches both: a second row.
    assert bars["row"].nunique() == 2
    assert (labels["row"] < bars["row"].min()).all()  # labels sit below every bar


# At least as wide as any 12 px sans-serif label measured in Chromium here (5.2-6.0 px a
# character on "Triangular (1.05)", "(4.75) Nominal", "CD = 1.36"); the builder reserves 6.5.
WIDE_CHAR_PX = 6.2
LONG_RANKS = pd.DataFrame(
    {
        "method": ["triangular", "exponential", "binomial", "beta", "nominal"],
        "mean_rank": [1.05, 2.35, 2.9, 3.95, 4.75],
    }
)


def _label_extents(spec: dict) -> list[tuple[str, float, float]]:
    """Each label's text with its left and right pixel, from the spec: the label's anchor on
    the plot's x scale, its alignment and offset, and ``WIDE_CHAR_PX`` a character."""
    width = spec["width"]
    extents = []
    for layer in spec["layer"]:
        if _mark(layer) != "text" or layer["encoding"]["x"]["field"] != "label_x":
            continue
        low, high = layer["encoding"]["x"]["scale"]["domain"]
        for row in _layer_frame(spec, layer).itertuples():
            anchor = (row.label_x - low) / (high - low) * width + layer["mark"]["dx"]
            size = len(row.text) * WIDE_CHAR_PX
            left = anchor - size if layer["mark"]["align"] == "right" else anchor
            extents.append((row.text, left, left + size))
    return extents


@pytest.mark.parametrize("width", [300, 420, 720])
def test_cd_labels_lie_inside_the_chart_with_room_to_spare(width):
    groups = pd.DataFrame({"methods": [("a",)], "low": [2.35], "high": [3.95]})
    spec = cd_diagram.critical_difference_diagram(LONG_RANKS, groups, 1.36, width=width).to_dict()
    extents = _label_extents(spec)
    assert len(extents) == 5
    assert {text for text, *_ in extents} >= {"Triangular (1.05)", "(4.75) Nominal"}
    for text, left, right in extents:
        assert left >= 0 and right <= spec["width"], (text, left, right, spec["width"])
    assert spec["width"] >= width  # widened, never cramped, when the ranks need more


def test_cd_diagram_renders_no_wider_than_it_says():
    """Rendered with real font metrics (vl-convert, as the report does): Vega-Lite grows a
    chart to hold marks past its plot, so a rendered width above the declared one (plus
    Vega's 5 px padding each side) means a label hangs outside, cut off in a page column."""
    vl_convert = pytest.importorskip("vl_convert")
    result = _cd_result()
    for ranks, groups, cd in (
        (LONG_RANKS, result.groups.iloc[:0], 4.6),
        (result.table, result.groups, result.cd),
    ):
        spec = cd_diagram.critical_difference_diagram(ranks, groups, cd).to_dict()
        svg = vl_convert.vegalite_to_svg(spec)
        rendered = float(re.search(r'<svg[^>]* width="([\d.]+)"', svg).group(1))
        assert rendered <= spec["width"] + 10, (rendered, spec["width"])


def test_cd_diagram_without_a_cd_or_groups_still_draws_the_ranks():
    ranks = pd.DataFrame({"method": ["a", "b"], "mean_rank": [1.25, 1.75]})
    empty = pd.DataFrame(columns=["group", "methods", "low", "high"])
    spec = cd_diagram.critical_difference_diagram(ranks, empty, float("nan")).to_dict()
    texts = [layer for layer in spec["layer"] if _mark(layer) == "text"]
    assert len(texts) == 3  # tick labels and the two label sides
    assert "CD =" not in json.dumps(spec)
    assert not [layer for layer in spec["layer"] if layer["mark"].get("strokeWidth") == 4]


def _search() -> pd.DataFrame:
    rows = []
    rng = np.random.default_rng(4)
    for seed in range(3):
        for i, (lr, eta) in enumerate([(0.001, 0.8), (0.01, 0.8), (0.001, 1.0)]):
            rows.append(
                {
                    "run_id": f"st-KL-beta-s{seed}-c{i}",
                    "study_id": "st",
                    "task": "KL",
                    "method": "beta",
                    "seed": seed,
                    "config_index": i,
                    "config": {"lr": lr, "eta": eta},
                    "selected": False,
                    "best_epoch": 4,
                    "epochs_run": 9,
                    "val_amae": float(rng.uniform(0.3, 0.7)),
                    "duration_s": 1.0,
                }
            )
    frame = pd.DataFrame(rows)
    best = frame.groupby("seed")["val_amae"].idxmin()
    frame.loc[best, "selected"] = True
    return explorer.search_table(frame)


def test_configuration_strip_has_a_point_per_run_and_rings_the_selected_ones():
    search = _search()
    spec = charts.configuration_strip(search, title="KL · Beta").to_dict()
    points, ring = spec["layer"]
    data = _layer_frame(spec, points)
    assert len(data) == len(search)
    assert ring["transform"] == [{"filter": "datum.selected"}]
    order = points["encoding"]["x"]["sort"]
    means = search.groupby("config_key")["val_amae"].mean()
    assert order == list(means.sort_values().index)


def test_parameter_strip_facets_by_method_with_points_ring_and_mean_tick():
    effects = explorer.parameter_effects(_search())
    spec = charts.parameter_strip(effects, "lr", title="Learning rate").to_dict()
    layers = spec["spec"]["layer"]
    assert _marks(layers) == ["circle", "point", "tick"]
    assert layers[2]["encoding"]["y"]["aggregate"] == "mean"
    data = _datasets(spec)[spec["data"]["name"]]
    assert set(data["param"]) == {"lr"} and len(data) == 9
    assert sorted(set(data["value_label"])) == ["0.001", "0.01"]
    assert spec["facet"]["field"] == "Method"


def test_parameter_strip_wraps_many_methods_onto_rows():
    from engine.methods import method_names

    effects = explorer.parameter_effects(_search())
    many = pd.concat([effects.assign(method=m) for m in method_names()], ignore_index=True)
    spec = charts.parameter_strip(many, "lr").to_dict()
    assert spec["columns"] == 5
    assert _datasets(spec)[spec["data"]["name"]]["Method"].nunique() == len(method_names())


def test_parameter_strip_panels_narrow_with_the_value_width_down_to_140_px():
    effects = explorer.parameter_effects(_search())  # two learning rates
    assert charts.parameter_strip(effects, "lr").to_dict()["spec"]["width"] == 140
    wide = charts.parameter_strip(effects, "lr", value_width=100).to_dict()
    assert wide["spec"]["width"] == 200
    assert charts.parameter_strip(effects, "lr", value_width=45).to_dict()["spec"]["width"] == 140


def _curves() -> pd.DataFrame:
    rows = []
    for method, seed in (("beta", 0), ("nominal", 0), ("beta", 1)):
        for epoch in range(1, 6):
            rows.append(
                {
                    "study_id": "st",
                    "run_id": f"st-KL-{method}-s{seed}-c0",
                    "task": "KL",
                    "method": method,
                    "seed": seed,
                    "config_index": 0,
                    "selected": True,
                    "best_epoch": 3,
                    "epochs_run": 5,
                    "epoch": epoch,
                    "train_loss": 1 / epoch,
                    "val_loss": 1.1 / epoch,
                    "val_amae": 0.5,
                    "duration_s": 0.1,
                }
            )
    return explorer.learning_curves(pd.DataFrame(rows))


def test_learning_curves_chart_has_a_panel_per_series_lines_per_run_and_best_epochs():
    shown = explorer.overlay(_curves(), "method", task="KL")
    live = explorer.in_flight_point("st-KL-beta-s2-c1", 4, 0.47)
    spec = charts.learning_curves_chart(shown, live=live, title="KL").to_dict()
    panels = spec["hconcat"]
    assert [p["title"] for p in panels] == ["Training loss", "Validation loss", "Validation AMAE"]
    lines, best = panels[0]["layer"][:2]
    assert lines["encoding"]["detail"]["field"] == "line"
    train = _layer_frame(spec, lines, panels[0])
    assert set(train["series"]) == {"train_loss"} and len(train) == 15
    assert best["transform"] == [{"filter": "datum.best"}]
    colour = lines["encoding"]["color"]
    assert colour["scale"]["domain"] == ["Nominal", "Beta"]
    # lines, best epochs, diverged epochs (none here), and the live point on AMAE only
    assert panels[0]["layer"][2]["transform"] == [{"filter": "datum.clipped"}]
    assert len(panels[0]["layer"]) == 3 and len(panels[2]["layer"]) == 4
    diamond = _layer_frame(spec, panels[2]["layer"][3], panels[2])
    assert diamond[["epoch", "value"]].iloc[0].tolist() == [4, 0.47]


def test_learning_curves_count_epochs_in_whole_numbers():
    spec = charts.learning_curves_chart(explorer.overlay(_curves(), "method", task="KL")).to_dict()
    for panel in spec["hconcat"]:
        axis = panel["layer"][0]["encoding"]["x"]["axis"]
        assert axis["format"] == "d" and axis["tickMinStep"] == 1


def test_learning_curves_by_seed_order_the_seeds_numerically():
    rows = []
    for seed in (10, 2, 1):
        rows.append(
            {
                "study_id": "st",
                "run_id": f"r{seed}",
                "task": "KL",
                "method": "beta",
                "seed": seed,
                "config_index": 0,
                "selected": True,
                "best_epoch": 1,
                "epochs_run": 1,
                "epoch": 1,
                "train_loss": 1.0,
                "val_loss": 1.0,
                "val_amae": 0.5,
                "duration_s": 0.1,
            }
        )
    shown = explorer.overlay(
        explorer.learning_curves(pd.DataFrame(rows)), "seed", task="KL", method="beta"
    )
    spec = charts.learning_curves_chart(shown).to_dict()
    domain = spec["hconcat"][0]["layer"][0]["encoding"]["color"]["scale"]["domain"]
    assert domain == ["seed 1", "seed 2", "seed 10"]


def test_the_expected_best_chart_counts_configurations_whole_and_wraps_its_subtitle():
    runs = pd.DataFrame(
        {
            "task": ["KL"] * 4,
            "method": ["nominal", "nominal", "beta", "beta"],
            "seed": [0, 0, 0, 0],
            "val_amae": [0.5, 0.4, 0.45, 0.6],
        }
    )
    table = expected_best_table(runs, "val_amae", lower_is_better=True)
    spec = budget_curves.expected_best_chart(table).to_dict()
    panel = spec["hconcat"][0]
    axis = panel["layer"][0]["encoding"]["x"]["axis"]
    assert axis["format"] == "d" and axis["tickMinStep"] == 1
    # A subtitle of several short lines: one long line ran past two narrow panels
    subtitle = spec["title"]["subtitle"]
    assert isinstance(subtitle, list) and len(subtitle) >= 2
    assert all(len(line) <= 80 for line in subtitle)


def _pruned_search() -> pd.DataFrame:
    """`_search` where the pruner stopped every seed's config 2 (η = 1) at a low AMAE."""
    search = _search()
    search["pruned"] = search["config_index"] == 2
    search.loc[search["pruned"], "val_amae"] = 0.05  # its early epochs': better than any
    search.loc[search["pruned"], "selected"] = False
    return search


def test_parameter_strip_draws_stopped_runs_as_crosses_left_out_of_the_mean():
    effects = explorer.parameter_effects(_pruned_search())
    spec = charts.parameter_strip(effects, "eta").to_dict()
    layers = spec["spec"]["layer"]
    assert _marks(layers) == ["circle", "point", "tick", "point"]
    assert (layers[3]["mark"]["shape"], layers[3]["mark"]["angle"]) == ("cross", 45)  # an ×
    assert layers[3]["transform"] == [{"filter": "datum.pruned"}]
    for trained_only in (layers[0], layers[2]):  # the dots and the mean tick
        assert trained_only["transform"] == [{"filter": "!datum.pruned && !datum.diverged"}]
    assert "stopped by the pruner" in spec["title"]["subtitle"]
    data = _datasets(spec)[spec["data"]["name"]]
    assert set(data.loc[data["pruned"], "stopped"]) == {"yes"}


def test_a_full_searchs_strip_has_no_crosses_and_says_every_run():
    spec = charts.parameter_strip(explorer.parameter_effects(_search()), "eta").to_dict()
    assert _marks(spec["spec"]["layer"]) == ["circle", "point", "tick"]
    assert "mean over every run" in spec["title"]["subtitle"]


def test_configuration_strip_ranks_a_configuration_the_pruner_always_stopped_last():
    search = _pruned_search()
    spec = charts.configuration_strip(search).to_dict()
    points = spec["layer"][0]
    order = points["encoding"]["x"]["sort"]
    stopped_key = search.loc[search["config_index"] == 2, "config_key"].iloc[0]
    assert order[-1] == stopped_key  # despite its 0.05, the best AMAE drawn
    assert _mark(spec["layer"][2]) == "point" and spec["layer"][2]["mark"]["shape"] == "cross"


def _diverged_search() -> pd.DataFrame:
    """`_search` where every seed's config 1 diverged, its last finite AMAE the best."""
    search = _search()
    search["diverged_epoch"] = np.where(search["config_index"] == 1, 4.0, np.nan)
    search.loc[search["config_index"] == 1, "val_amae"] = 0.01
    search.loc[search["config_index"] == 1, "selected"] = False
    return search


def test_runs_that_diverged_are_drawn_as_triangles_and_left_out_of_the_mean():
    search = _diverged_search().assign(diverged=lambda f: f["diverged_epoch"].notna())
    effects = explorer.parameter_effects(search)
    spec = charts.parameter_strip(effects, "eta").to_dict()
    layers = spec["spec"]["layer"]
    assert _marks(layers) == ["circle", "point", "tick", "point"]
    assert layers[3]["mark"]["shape"] == "triangle-down"
    assert layers[3]["transform"] == [{"filter": "datum.diverged"}]
    assert "diverged, its loss went non-finite" in spec["title"]["subtitle"]
    strip = charts.configuration_strip(search).to_dict()
    diverged_key = search.loc[search["config_index"] == 1, "config_key"].iloc[0]
    assert strip["layer"][0]["encoding"]["x"]["sort"][-1] == diverged_key
