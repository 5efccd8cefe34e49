"""The Attention page's tables and captions: method order, titles, averages over knees."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.gradcam import StressFilms
from pages.present.attention_tables import cooccurrence_summary, knee_caption, stress_summary


def _stress_rows() -> pd.DataFrame:
    # Two knees, two methods (given out of the paper's order), two CPPD levels.
    rows = []
    for knee in (0, 1):
        for method in ("triangular", "nominal"):
            for level in (1, 0):
                rows.append(
                    {
                        "knee": knee,
                        "method": method,
                        "level": level,
                        "predicted": 4 - knee,
                        "p_top": 0.5 + 0.1 * knee,
                        "lift_own": 2.0 + knee,
                        "lift_other": 1.0 / 3,
                    }
                )
    return pd.DataFrame(rows)


def test_stress_summary_averages_knees_in_the_papers_method_order():
    summary = stress_summary(_stress_rows(), "KL", "CPPD")
    assert summary["Method"].tolist() == ["Nominal", "Nominal", "Triangular", "Triangular"]
    assert summary["CPPD grade"].tolist() == [0, 1, 0, 1]
    assert summary["Mean predicted KL"].tolist() == [3.5] * 4
    assert summary["Mean P(KL 4)"].tolist() == pytest.approx([0.55] * 4)
    assert summary["Lift on KL signs"].tolist() == [2.5] * 4
    assert summary["Lift on CPPD signs"].tolist() == [0.333] * 4  # three decimals


def test_cooccurrence_summary_titles_name_the_top_grade():
    rows = [
        {"method": "beta", "level": 2, "films": 3, "p_top": 0.81234, "graded_top": 1.0},
        {"method": "nominal", "level": 2, "films": 3, "p_top": 0.5, "graded_top": 0.5},
    ]
    table = cooccurrence_summary(rows, "CPPD", "KL")
    assert list(table.columns) == [
        "Method",
        "KL grade",
        "Films",
        "Mean P(CPPD 3)",
        "Share graded CPPD 3",
    ]
    assert table["Method"].tolist() == ["Nominal", "Beta"]
    assert table["Mean P(CPPD 3)"].tolist() == [0.5, 0.812]


def _films(original_grade: int) -> StressFilms:
    empty = np.zeros((1, 4, 4), np.uint8)
    return StressFilms(
        fixed="KL",
        varied="CPPD",
        image_id="img-7",
        original_grade=original_grade,
        images=empty,
        masks=empty,
        levels=np.zeros(1, int),
    )


def test_knee_caption_names_the_films_own_grade_only_where_it_was_redrawn():
    assert knee_caption(_films(4)) == "knee of film img-7"
    assert knee_caption(_films(2)) == "knee of film img-7, KL 2 on film"
