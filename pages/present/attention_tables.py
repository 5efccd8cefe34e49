"""The Attention page's tables and captions, built from plain frames. No streamlit, so they
are unit-tested."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from engine.methods import order_methods
from engine.vocab import TOP_GRADE
from pages.present.tables import method_title
from pages.present.user_text import plain

if TYPE_CHECKING:
    from engine.gradcam import StressFilms


def readable(table: pd.DataFrame, other: str, **titles: str) -> pd.DataFrame:
    """A per (method, level) table for people: paper's method order, 3 decimals, titles."""
    return (
        table.sort_values(["method", "level"], key=sort_methods)
        .round(3)
        .assign(method=lambda d: d["method"].map(method_title))
        .rename(columns={"method": "Method", "level": f"{other} grade", **titles})
    )


def sort_methods(column: pd.Series) -> pd.Series:
    """Sort key putting a ``method`` column in the paper's order (other columns unchanged)."""
    if column.name != "method":
        return column
    rank = {m: i for i, m in enumerate(order_methods(column))}
    return column.map(rank)


def knee_caption(films: StressFilms) -> str:
    """Which film's knee this is, and its own grade where it was redrawn at another."""
    top = TOP_GRADE[films.fixed]
    own = "" if films.original_grade == top else f", {films.fixed} {films.original_grade} on film"
    return f"knee of film {plain(films.image_id)}{own}"  # an image caption: markdown


def stress_summary(table: pd.DataFrame, task: str, other: str) -> pd.DataFrame:
    """The stress test per method and level of ``other``, averaged over the knees drawn.

    Args:
        table: One row per (knee, method, level): ``predicted``, ``p_top``, ``lift_own`` and
            ``lift_other`` (the rows of `engine.gradcam.stress_table`).
        task: The task whose models were tested.
        other: The pathology that was redrawn at every grade.
    """
    summary = table.groupby(["method", "level"], as_index=False).agg(
        predicted=("predicted", "mean"),
        p_top=("p_top", "mean"),
        lift_own=("lift_own", "mean"),
        lift_other=("lift_other", "mean"),
    )
    return readable(
        summary,
        other,
        predicted=f"Mean predicted {task}",
        p_top=f"Mean P({task} {TOP_GRADE[task]})",
        lift_own=f"Lift on {task} signs",
        lift_other=f"Lift on {other} signs",
    )


def cooccurrence_summary(rows: list[dict[str, Any]], task: str, other: str) -> pd.DataFrame:
    """How sure each model stays of ``task``'s top grade per grade of ``other``, for people.

    Args:
        rows: One per (method, level): ``films`` graded, mean ``p_top`` and the share
            ``graded_top``.
        task: The task whose models graded the films.
        other: The pathology the films are grouped by.
    """
    top = TOP_GRADE[task]
    return readable(
        pd.DataFrame(rows),
        other,
        films="Films",
        p_top=f"Mean P({task} {top})",
        graded_top=f"Share graded {task} {top}",
    )
