"""The variance components as the pages, the report and the CLI write them."""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.analysis import variance_components as vc
from pages.present import variance_tables as vt


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    rows = []
    for s in range(4):
        for i in range(2):
            base = 0.4 + rng.normal(0, 0.02)
            for method, value in (("nominal", base), ("beta", base - 0.03 - 0.01 * s)):
                rows.append(
                    {"study_id": "s", "task": "KL", "method": method, "seed": s * 2 + i,
                     "split_seed": s, "init_seed": i, "amae": value}
                )  # fmt: skip
    return vc.components_table(pd.DataFrame(rows), {"KL": 0.43}, metrics=("amae",))


def test_components_view_has_human_headers_and_text_cells():
    view = vt.components_view(_table())
    assert list(view.columns) == list(vt.COMPONENT_HEADERS.values())
    row = view.iloc[0]
    assert row["A − B"] == "Beta − Nominal" and row["Splits × inits"] == "4 × 2"
    assert row["Share split / init / residual"].count("%") == 3
    assert row["95 % CI design-corrected (new patients)"].startswith("[")
    assert not any("_" in c for c in view.columns)


def test_the_interval_to_trust_comes_first_and_the_rest_splits_off():
    first, rest = vt.split_view(vt.components_view(_table()))
    assert list(first.columns) == [
        "Task",
        "A − B",
        "Splits × inits",
        "Mean A − B",
        "95 % CI design-corrected (new patients)",
        "p design-corrected",
    ]
    assert list(rest.columns[:2]) == ["Task", "A − B"]
    assert {"95 % CI factorial", "σ² split"} <= set(rest.columns)


def test_design_line_names_the_design_and_where_the_variance_comes_from():
    line = vt.design_line(_table())
    assert line.startswith("A factorial design: 4 splits × 2 inits")
    assert "% split" in line and "% init" in line


def test_an_empty_table_says_what_the_components_need():
    assert "2 splits and 2 inits" in vt.design_line(pd.DataFrame(columns=vc.COMPONENT_COLUMNS))
    assert vt.components_view(pd.DataFrame(columns=vc.COMPONENT_COLUMNS)).empty


def test_plain_text_drops_markdown_marks_for_the_terminal_and_report():
    text = vt.plain(vt.INTERVALS_NOTE + vt.NOT_FACTORIAL_NOTE)
    assert "*" not in text and "`" not in text and "Design-corrected" in text
