"""One method palette: every chart that colours by method gives a method the same colour."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest

from engine.analysis import explorer
from engine.analysis import probability_metrics as pm
from engine.methods import PLUGIN_VARIABLE, method_names, paper_methods
from pages.present import charts, science_charts
from pages.present.palette import (
    BUILTIN_COLOUR_INDEX,
    METHOD_COLOURS,
    PALETTE,
    TOL_MUTED,
    TOL_VIBRANT_RED,
    colour_at,
    method_colours,
    method_dashes,
    method_scale,
)
from pages.present.tables import method_title
from tests.helpers.method_plugins import LAB_METHOD_SOURCE, write_method_package

METHOD_FIELDS = {"method", "Method", "Line"}


def _method_scales(spec: object) -> Iterator[dict[str, str]]:
    """Every colour encoding on a method field in a Vega-Lite spec, as domain -> range."""
    if isinstance(spec, dict):
        colour = spec.get("color")
        if isinstance(colour, dict) and colour.get("field") in METHOD_FIELDS:
            scale = colour.get("scale", {})
            assert "range" in scale, f"a method colour without the palette: {scale}"
            yield dict(zip(scale["domain"], scale["range"], strict=True))
        for value in spec.values():
            yield from _method_scales(value)
    elif isinstance(spec, list):
        for value in spec:
            yield from _method_scales(value)


def _probabilities(methods: list[str]) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    parts = []
    for method in methods:
        probs = rng.dirichlet(np.ones(4), size=40)
        part = pd.DataFrame(
            {
                "study_id": "s",
                "run_id": f"s-CPPD-{method}-s0-c0",
                "task": "CPPD",
                "method": method,
                "seed": 0,
                "y_true": rng.integers(0, 4, 40),
            }
        )
        for g in range(4):
            part[f"p{g}"] = probs[:, g]
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _curves(methods: list[str]) -> pd.DataFrame:
    rows = [
        {
            "study_id": "st",
            "run_id": f"st-KL-{method}-s0-c0",
            "task": "KL",
            "method": method,
            "seed": 0,
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
        for method in methods
        for epoch in range(1, 6)
    ]
    return explorer.learning_curves(pd.DataFrame(rows))


def _every_method_chart() -> dict[str, object]:
    """Each chart that encodes method, drawn on different subsets of the methods (a method's
    colour must not depend on which others are shown)."""
    scores = pd.DataFrame(
        {"method": ["triangular", "beta", "exponential"] * 3, "seed": range(9), "value": 0.5}
    )
    lifts = pd.DataFrame(
        {"method": ["binomial", "exponential"], "level": [0, 1], "knee": 1, "lift_own": 1.0}
    )
    return {
        "violin_box": charts.violin_box(scores, value_title="AMAE"),
        "stress_lift": charts.stress_lift(lifts, column="lift_own", title="t", level_title="KL"),
        "reliability": science_charts.reliability_diagram(
            pm.reliability_table(_probabilities(["beta", "nominal"]))
        ),
        "learning_curves": science_charts.learning_curves_chart(
            explorer.overlay(_curves(["exponential", "nominal", "binomial"]), "method", task="KL")
        ),
    }


def test_every_chart_that_encodes_method_uses_the_one_palette():
    palette = {method_title(m): colour for m, colour in METHOD_COLOURS.items()}
    seen: dict[str, str] = {}
    for name, chart in _every_method_chart().items():
        scales = list(_method_scales(chart.to_dict()))
        assert scales, f"{name} has no method colour"
        for scale in scales:
            for method, colour in scale.items():
                key = method_title(method)
                assert palette[key] == colour, (name, method, colour)
                assert seen.setdefault(key, colour) == colour, (name, method)
    assert set(seen) == {method_title(m) for m in paper_methods()}  # every method met


def test_a_second_label_of_a_method_gets_a_spare_colour():
    colours = method_colours(["beta · study A", "beta · study B", "nominal"])
    assert colours["nominal"] == METHOD_COLOURS["nominal"]
    assert colours["beta · study A"] == METHOD_COLOURS["beta"]
    assert colours["beta · study B"] not in METHOD_COLOURS.values()


def _names(n: int) -> list[str]:
    """``n`` names: registered methods first, then names this checkout does not know."""
    registered = list(method_names())
    return (registered + [f"imported_{k:02d}" for k in range(n)])[:n]


@pytest.mark.parametrize("n", [1, 14, 30])
def test_any_number_of_methods_gets_distinct_colours_and_a_dash(n):
    names = _names(n)
    colours = method_colours(names)
    dashes = method_dashes(names)
    assert set(colours) == set(names) == set(dashes)
    assert len(set(colours.values())) == n  # no two names share a colour
    assert all(re.fullmatch(r"#[0-9A-F]{6}", c) for c in colours.values())
    scale = method_scale(names).to_dict()
    assert len(scale["domain"]) == len(scale["range"]) == n


def test_a_registered_method_keeps_its_colour_whatever_else_is_shown():
    everything = method_colours(_names(30))
    for name in method_names():
        assert method_colours([name])[name] == everything[name] == METHOD_COLOURS[name]
        assert method_colours([name, "imported_00", "nominal"])[name] == METHOD_COLOURS[name]


def test_the_built_in_methods_have_fixed_colours_the_papers_five_first():
    assert list(METHOD_COLOURS) == list(method_names())
    for name in paper_methods():
        assert METHOD_COLOURS[name] == PALETTE[BUILTIN_COLOUR_INDEX[name]]
    assert [METHOD_COLOURS[m] for m in paper_methods()] == list(TOL_MUTED[:5])
    assert METHOD_COLOURS["corn"] == TOL_VIBRANT_RED


def test_adding_a_method_recolours_no_built_in_one(tmp_path, monkeypatch):
    before = method_colours(list(method_names()))
    package = f"labpkg_palette_{tmp_path.name}"
    write_method_package(tmp_path, package, {"mce_wk": LAB_METHOD_SOURCE})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(PLUGIN_VARIABLE, package)
    names = list(method_names())
    assert len(names) > len(before), "the plug-in package added a method"
    after = method_colours(names)
    assert {m: after[m] for m in before} == before
    assert len(set(after.values())) == len(after)


def _distance(a: str, b: str) -> float:
    rgb = [[int(c[i : i + 2], 16) for i in (1, 3, 5)] for c in (a, b)]
    return sum((x - y) ** 2 for x, y in zip(*rgb, strict=True)) ** 0.5


def test_no_two_built_in_methods_have_near_identical_colours():
    colours = list(METHOD_COLOURS.items())
    for i, (a, colour_a) in enumerate(colours):
        for b, colour_b in colours[i + 1 :]:
            assert _distance(colour_a, colour_b) > 40, (a, colour_a, b, colour_b)


def test_unknown_names_take_colours_no_built_in_method_holds_in_order():
    colours = method_colours(["zeta_loss", "alpha_loss", "beta"])
    first_spare = colour_at(len(BUILTIN_COLOUR_INDEX))
    assert colours["alpha_loss"] == first_spare  # sorted by name among the unknown
    assert colours["zeta_loss"] == colour_at(len(BUILTIN_COLOUR_INDEX) + 1)
    assert colours["beta"] == METHOD_COLOURS["beta"]
    assert set(colours.values()).isdisjoint(set(METHOD_COLOURS.values()) - {colours["beta"]})


def test_lines_past_the_muted_block_are_dashed():
    names = _names(20)
    dashes = method_dashes(names)
    assert dashes[names[0]] == [1, 0]  # solid
    assert dashes[names[len(TOL_MUTED)]] != [1, 0]
    assert dashes[names[len(PALETTE)]] not in (dashes[names[0]], dashes[names[len(TOL_MUTED)]])


def _dash_scales(spec: object) -> Iterator[dict[str, list[int]]]:
    """Every strokeDash encoding on a method field in a Vega-Lite spec, as domain -> range."""
    if isinstance(spec, dict):
        dash = spec.get("strokeDash")
        if isinstance(dash, dict) and dash.get("field") in METHOD_FIELDS:
            scale = dash["scale"]
            yield dict(zip(scale["domain"], map(tuple, scale["range"]), strict=True))
        for value in spec.values():
            yield from _dash_scales(value)
    elif isinstance(spec, list):
        for value in spec:
            yield from _dash_scales(value)


def test_line_charts_of_many_methods_tell_lines_apart_by_dash_too():
    names = list(method_names())
    lifts = pd.DataFrame({"method": names, "level": 0, "knee": 1, "lift_own": 1.0})
    charts_with_lines = {
        "stress_lift": charts.stress_lift(lifts, column="lift_own", title="t", level_title="KL"),
        "reliability": science_charts.reliability_diagram(
            pm.reliability_table(_probabilities(names))
        ),
        "learning_curves": science_charts.learning_curves_chart(
            explorer.overlay(_curves(names), "method", task="KL")
        ),
    }
    for name, chart in charts_with_lines.items():
        scales = list(_dash_scales(chart.to_dict()))
        assert scales, f"{name} has no dash per method"
        for scale in scales:
            assert len(scale) == len(names), name
            assert len(set(scale.values())) >= 2, name  # 14 methods span two blocks
