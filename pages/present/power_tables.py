"""How many seeds? The power view of a study's pairs and the Launch page's answer at one
assumed ρ, as text and tables (no streamlit): seeds for 80 % power of the corrected test, or
the ceiling the assumed ρ puts on power (`engine.analysis.power`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from engine.analysis import power
from engine.analysis.inference_columns import POWER
from engine.analysis.table_columns import PAIRED
from pages.present.reviewer_tables import NOT_COMPUTED, number_text
from pages.present.tables import is_missing_value, method_title


def rho_column(rho: float, source: str, assumed: float | None = None) -> str:
    """The power view's column for one ρ: ``"Seeds at ρ = 0.3 (≈ assumed)"``."""
    label = f"Seeds at ρ = {rho:g}"
    if source == power.DESIGN:
        return f"{label} (design estimate)"
    if assumed is not None and abs(rho - assumed) < 0.005:
        return f"{label} (≈ the corrected test's)"
    return label


def power_view(plan: pd.DataFrame, target: float = 0.8) -> pd.DataFrame:
    """Seeds needed per pair over ρ (`power.power_table`) as text: a cell per ρ gives the
    seeds at the observed sd and at its upper bound, or the ceiling that ρ imposes."""
    if plan.empty:
        return pd.DataFrame(columns=POWER.view_headers("shown"))
    assumed = _assumed_rho(plan)
    rows = []
    keys = list(PAIRED.view("pair_row"))
    for _, part in plan.groupby(keys, sort=False):
        first = part.iloc[0]
        cells = {
            "task": first["task"],
            "pair": f"{method_title(str(first['method_a']))} − "
            f"{method_title(str(first['method_b']))}",
            "n_seeds": str(int(first["n_seeds"])),
            "sd": f"{number_text(first['sd_diff'])} ({number_text(first['sd_upper'])})",
        }
        row = POWER.headed(cells)
        for r in part.to_dict("records"):
            row[rho_column(float(r["rho"]), str(r["rho_source"]), assumed)] = _plan_cell(r, target)
        rows.append(row)
    return pd.DataFrame(rows)


def _assumed_rho(plan: pd.DataFrame) -> float | None:
    return float(plan["rho_assumed"].iloc[0]) if "rho_assumed" in plan else None


def _plan_cell(row: Mapping[str, Any], target: float) -> str:
    """``"12 (19 at the upper sd)"``, ``"not reachable: at most 45 % power (38 % at the
    upper sd)"`` when ρ caps power below the target, or ``"more than 500 seeds"`` when the
    cap allows it but the planner's limit comes first (never "at most 100 % power")."""
    seeds, upper = row["seeds"], row["seeds_sd_upper"]
    if not is_missing_value(seeds):
        tail = (
            str(int(upper))
            if not is_missing_value(upper)
            else _beyond(row.get("ceiling_sd_upper"), target)
        )
        return f"{int(seeds)} ({tail} at the upper sd)"
    if is_missing_value(row["ceiling"]):
        return NOT_COMPUTED
    if float(row["ceiling"]) >= target:
        return f"more than {power.MAX_SEEDS} seeds (the planner's limit)"
    return (
        f"not reachable: at most {float(row['ceiling']):.0%} power "
        f"({float(row['ceiling_sd_upper']):.0%} at the upper sd)"
    )


def _beyond(ceiling: Any, target: float) -> str:
    """Why no seed count is given: the planner's limit, or ρ's cap on power."""
    if not is_missing_value(ceiling) and float(ceiling) >= target:
        return f"more than {power.MAX_SEEDS}"
    return "not reachable"


POWER_NOTE = (
    "Seeds for {target} power of the corrected test (two-sided α = 0.05) to detect the "
    "smallest effect of interest, at each pair's observed sd of the differences and, in "
    "brackets, at its 80 % upper confidence bound (an sd from few seeds is itself "
    "uncertain). Each column assumes a between-seed correlation ρ. With ρ > 0 power has a "
    "ceiling more seeds cannot pass; that ceiling is a consequence of the assumed ρ, which "
    "one dataset cannot measure, not a property of the methods. Planned for an effect "
    "chosen before looking, never the observed one."
)


def seeds_plan_text(
    seeds: int | None,
    hours_per_seed: float | None,
    ceiling: float,
    rho: float,
    *,
    unit: str = "GPU hours",
) -> str:
    """The Launch page's answer at one assumed ρ: seeds for 80 % power and what they cost in
    ``unit`` (GPU hours, or CPU-slot hours for a CPU study), or the ceiling that ρ puts on
    power."""
    if seeds is None:
        if math.isnan(ceiling):
            return "Give an effect other than 0 and an sd above 0."
        if ceiling >= power.TARGET_POWER:
            return (
                f"At ρ = {rho:g}, 80 % power needs more than {power.MAX_SEEDS} seeds (the "
                "planner's limit): the effect is small against the sd of the differences."
            )
        return (
            f"At ρ = {rho:g}, no number of seeds reaches 80 % power: even unlimited seeds give "
            f"{ceiling:.0%}. That ceiling follows from the assumed ρ (seeds that resample the "
            "same films correlate), which one dataset cannot measure: at a smaller ρ fewer "
            "seeds may do, and more films always help."
        )
    text = f"**{seeds} seeds** give 80 % power with the corrected test at ρ = {rho:g}."
    if hours_per_seed is not None and hours_per_seed > 0:
        text += (
            f" At about {hours_per_seed:.1f} {unit} per seed (this study's estimate), "
            f"that is about {seeds * hours_per_seed:.0f} {unit}."
        )
    return text
