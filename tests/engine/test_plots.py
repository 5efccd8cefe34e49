"""Display helpers: soft-label heatmaps, grade tables, gallery picks, overlays, job times."""

from __future__ import annotations

import numpy as np
import pytest

from engine.soft_labels import soft_label_matrix
from pages import _charts as plots


def test_soft_label_frame_holds_every_cell_of_the_matrix():
    matrix = soft_label_matrix("binomial", 4)
    frame = plots.soft_label_frame(matrix)
    assert len(frame) == 16
    cell = frame[(frame.true_grade == 1) & (frame.target_grade == 2)]
    assert cell.probability.item() == pytest.approx(matrix[1, 2])
    assert frame.groupby("true_grade").probability.sum().tolist() == pytest.approx([1.0] * 4)


def test_soft_label_frame_refuses_a_non_square_matrix():
    with pytest.raises(ValueError, match="square"):
        plots.soft_label_frame(np.ones((2, 3)))


def test_soft_label_heatmap_is_a_rect_chart_with_labels():
    spec = plots.soft_label_heatmap(
        plots.soft_label_frame(soft_label_matrix("beta", 5)), title="beta"
    ).to_dict()
    marks = [layer["mark"]["type"] for layer in spec["layer"]]
    assert marks == ["rect", "text"]
    assert spec["title"] == "beta"
    bare = plots.soft_label_heatmap(plots.soft_label_frame(np.eye(3)), values=False).to_dict()
    assert bare["mark"]["type"] == "rect"
