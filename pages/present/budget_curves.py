"""The Robustness tab's "budgets compared fairly" view, without streamlit: the expected best
validation score against the number of configurations tried (Dodge et al. 2019;
`engine.analysis.expected_max`), the sentences that read it, and the coverage-matched table
(`engine.analysis.budget.coverage_matched_validation`).

Tests check the chart's data and the sentences without a browser.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from engine.analysis.inference_columns import (
    COVERAGE_MATCHED,
    EXPECTED_BEST,
    SELECTION_SCORE,
    one_per_rate_header,
)
from engine.analysis.metrics import SELECTION_METRIC, lower_is_better
from engine.methods import order_methods
from engine.vocab import TASKS
from pages.present.charts import method_legend
from pages.present.palette import method_dash_scale, method_scale
from pages.present.tables import method_title

SCORE = SELECTION_SCORE
DIRECTION = "lower" if lower_is_better(SELECTION_METRIC) else "higher"


def expected_best_chart(
    table: pd.DataFrame, *, replace: bool = False, width: int = 300, height: int = 240
) -> alt.HConcatChart:
    """One panel per task: each method's expected best validation score (mean over seeds)
    against configurations tried, a band of ± one sd over seeds, and a ring at the size of
    the method's own search.

    Args:
        table: `engine.analysis.expected_max.expected_best_table` rows.
        replace: the draws were with replacement (named in the subtitle).
        width: pixels per panel.
        height: pixels.
    """
    methods = order_methods(table["method"].unique())
    titles = [method_title(m) for m in methods]
    rows = table.assign(
        Method=table["method"].map(method_title),
        low=table["expected"] - table["seed_sd"].fillna(0.0),
        high=table["expected"] + table["seed_sd"].fillna(0.0),
        own=table["n"] == table["configs"],
    )
    colour = alt.Color(
        "Method:N", sort=titles, scale=method_scale(methods), legend=method_legend(len(methods))
    )
    dash = alt.StrokeDash(
        "Method:N",
        sort=titles,
        scale=method_dash_scale(methods),
        legend=method_legend(len(methods)),
    )
    # Whole configurations: integer ticks even where a search tried only one or two.
    x = alt.X("n:Q", title="Configurations tried", axis=alt.Axis(tickMinStep=1, format="d"))
    y = alt.Y("expected:Q", title=f"Expected best {SCORE}", scale=alt.Scale(zero=False))
    headers = EXPECTED_BEST.headers()
    tooltip = [
        alt.Tooltip("Method:N"),
        alt.Tooltip("n:Q", title=headers["n"]),
        alt.Tooltip("expected:Q", title=headers["expected"], format=".4f"),
        alt.Tooltip("seed_sd:Q", title=headers["seed_sd"], format=".4f"),
        alt.Tooltip("n_seeds:Q", title=headers["n_seeds"]),
        alt.Tooltip("configs:Q", title=headers["configs"]),
    ]
    panels = []
    present = set(rows["task"])
    for task in [t for t in TASKS if t in present] + sorted(present - set(TASKS)):
        part = rows[rows["task"] == task]
        base = alt.Chart(part).encode(x=x, color=colour)
        panels.append(
            alt.layer(
                base.mark_area(opacity=0.12).encode(y="low:Q", y2="high:Q"),
                base.mark_line(strokeWidth=1.6).encode(y=y, strokeDash=dash, tooltip=tooltip),
                base.mark_point(size=30, filled=True).encode(y=y, tooltip=tooltip),
                base.transform_filter("datum.own")
                .mark_point(size=140, filled=False, strokeWidth=1.5)
                .encode(y=y, tooltip=tooltip),
            ).properties(title=task, width=width, height=height)
        )
    how = "with replacement" if replace else "without replacement (distinct configurations)"
    # One line each: a single line runs past the right edge of two narrow panels.
    subtitle = [
        f"Mean over seeds of the expected best of n configurations ({DIRECTION} is better),",
        f"drawn {how} from each seed's search.",
        "Band: ± 1 sd over seeds; ring: the method's own search size.",
    ]
    return alt.hconcat(*panels).properties(
        title=alt.TitleParams(f"Expected best {SCORE} by configurations tried", subtitle=subtitle)
    )


def expected_best_sentence(table: pd.DataFrame, baseline: str, *, replace: bool = False) -> str:
    """What the curves show, with each method's value at the baseline's search size.

    Args:
        table: `engine.analysis.expected_max.expected_best_table` rows.
        baseline: the method whose search size the comparison is read at (nominal).
        replace: the draws were with replacement.
    """
    if table.empty:
        return ""
    mine = table[table["method"] == baseline]
    n = int(mine["configs"].max()) if len(mine) else int(table["configs"].min())
    lead = (
        f"Each curve is what a method's search would have found, on average, had it tried only "
        f"n of its configurations (Dodge et al. 2019, 'Show your work'): the expected best "
        f"{SCORE} of n configurations drawn "
        f"{'with' if replace else 'without'} replacement from each seed's search, averaged "
        "over seeds. A method that leads only at its own, larger search size owes part of its "
        "lead to the budget; where the curves cross, the ranking depends on how many "
        "configurations were tried; a curve still falling at its end would gain from a larger "
        "search."
    )
    at_n = table[table["n"] == n]
    if at_n.empty:
        return lead
    parts = []
    present = set(at_n["task"])
    for task in [t for t in TASKS if t in present] + sorted(present - set(TASKS)):
        rows = at_n[at_n["task"] == task]
        ordered = rows.set_index("method").loc[order_methods(rows["method"].unique())]
        values = ", ".join(f"{method_title(m)} {v:.3f}" for m, v in ordered["expected"].items())
        parts.append(f"{task}: {values}")
    who = method_title(baseline)
    return (
        f"{lead} At {n} configuration{'s' * (n != 1)} ({who}'s whole search): "
        + "; ".join(parts)
        + ". These are validation scores, the ones the search selects by: they say how the "
        "budget shapes selection, not how the selected models do on the test films."
    )


def expected_best_unavailable(n_scored: int, n_runs: int) -> str:
    """Why the curves cannot be drawn: the store lacks the runs' validation scores."""
    return (
        f"The expected best {SCORE} by configurations tried needs every run's {SCORE}, and "
        f"this study holds it for {n_scored} of its {n_runs} runs (results imported from "
        "another tool carry only each seed's selected model, with no validation scores and no "
        "search): it cannot show how the search budget shaped each method's selection, nor "
        "compare methods at matched coverage of the learning-rate grid."
    )


def coverage_frame(table: pd.DataFrame, grid: Sequence[float]) -> pd.DataFrame:
    """`engine.analysis.budget.coverage_matched_validation` as a table to read."""
    methods = order_methods(table["method"].unique())
    order = {m: i for i, m in enumerate(methods)}
    table = table.sort_values(
        ["task", "method"], key=lambda c: c.map(order) if c.name == "method" else c
    )
    rates = ", ".join(f"{r:g}" for r in grid)
    cells = {
        "task": table["task"],
        "method": table["method"].map(method_title),
        "configs": table["configs"].astype(int),
        "own_best": table["own_best"].round(4),
        "uncovered": table["uncovered"].astype(int),
    }
    return pd.DataFrame(
        {
            **COVERAGE_MATCHED.headed(cells, "before_matched"),
            one_per_rate_header(rates): table["matched"].round(4),
            **COVERAGE_MATCHED.headed(cells, "after_matched"),
        }
    )


def coverage_sentence(grid: Sequence[float], baseline: str) -> str:
    """What the coverage-matched table is."""
    rates = ", ".join(f"{r:g}" for r in grid)
    return (
        f"At matched coverage, every method chooses among one configuration at each learning "
        f"rate of {method_title(baseline)}'s grid ({rates}; {len(grid)} configurations), drawn "
        "at random among its configurations at that rate: the same rates and the same number "
        "of candidates for every method, where a random subset of a larger search could miss "
        f"the rate a method trains best at. The value is the expected best {SCORE} (mean over "
        "draws and seeds)."
    )


def off_grid_sentence(methods: Sequence[str], grid: Sequence[float], baseline: str) -> str:
    """Which methods a coverage-matched table leaves out and why (``""`` when none is)."""
    if not methods:
        return ""
    rates = ", ".join(f"{r:g}" for r in grid)
    names = ", ".join(method_title(m) for m in methods)
    return (
        f"Left out here: {names}. None of {'its' if len(methods) == 1 else 'their'} "
        f"searches tried a learning rate of {method_title(baseline)}'s grid ({rates}), so "
        "there is nothing to re-select at matched coverage. With a small search budget each "
        "seed draws its own rate; a larger budget covers the grid. The expected-best curve "
        "above compares every method."
    )


def configs_per_search(runs: pd.DataFrame) -> dict[str, int]:
    """Configurations each method searched per task and seed (the most any of its searches
    tried), from its scored runs (``method``, ``task``, ``seed``, ``config_index``).

    Counted per search, not over the study: at a budget of 1 each seed samples its own
    configuration, so distinct configurations over seeds read "2 configurations per task and
    seed" where every search tried one (issue 39).
    """
    if runs.empty:
        return {}
    per_search = runs.groupby(["method", "task", "seed"])["config_index"].nunique()
    return {str(m): int(n) for m, n in per_search.groupby(level="method").max().items()}
