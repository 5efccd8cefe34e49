"""One method palette: every chart that colours by method gives a method the same colour."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from engine.analysis import explorer
from engine.analysis import probability_metrics as pm
from pages.present import charts, science_charts
from pages.present.palette import METHOD_COLOURS, method_colours
from pages.present.tables import method_title

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
    assert len(seen) == len(METHOD_COLOURS)  # every method met in some chart


def test_a_second_label_of_a_method_gets_a_spare_colour():
    colours = method_colours(["beta · study A", "beta · study B", "nominal"])
    assert colours["nominal"] == METHOD_COLOURS["nominal"]
    assert colours["beta · study A"] == METHOD_COLOURS["beta"]
    assert colours["beta · study B"] not in METHOD_COLOURS.values()
