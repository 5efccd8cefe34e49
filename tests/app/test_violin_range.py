"""Violins stay within the data (issue 39: with 2-3 seeds they spread past it, below 0 for
AMAE): a method needs `MIN_VIOLIN_SEEDS` seeds for a violin, and it ends at its lowest and
highest seed."""

from __future__ import annotations

import pandas as pd

from pages.present import charts


def _violin(scores: pd.DataFrame) -> pd.DataFrame:
    spec = charts.violin_box(scores, value_title="AMAE").to_dict()
    areas = [layer for layer in spec["layer"] if layer["mark"]["type"] == "area"]
    if not areas:
        return pd.DataFrame(columns=["method", "value"])
    name = areas[0]["data"]["name"]
    return pd.DataFrame(spec["datasets"][name])


def test_two_or_three_seeds_draw_no_violin():
    few = pd.DataFrame(
        {"method": ["nominal"] * 3 + ["beta"] * 2, "seed": [0, 1, 2, 0, 1],
         "value": [0.02, 0.30, 0.05, 0.01, 0.4]}
    )  # fmt: skip
    assert _violin(few).empty


def test_a_violin_ends_at_its_lowest_and_highest_seed():
    values = [0.01, 0.02, 0.03, 0.5, 0.6]  # near 0: a kernel's tail would pass below it
    scores = pd.DataFrame({"method": "nominal", "seed": range(5), "value": values})
    violin = _violin(scores)
    assert not violin.empty
    assert violin["value"].min() == min(values) and violin["value"].max() == max(values)
