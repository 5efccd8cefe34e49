"""How the Statistics tab writes the careful reviewer's analysis (issue 21): the paired
comparisons with the corrected resampled t-test, the primary endpoint, Friedman, the
seed-blocked ANOVA, seeds needed for power and Table 4's means with their interval.

The numbers come from ``engine.analysis.paired``, ``designs`` and ``power`` (through
``jobs.study_analysis``); what each test assumes is in docs/statistics.md. No streamlit, so
every format is unit-tested (tests/app/test_reviewer_tables.py). A cell that cannot be
computed says why ("needs 2 seeds"), never "None" or "± –".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from engine.analysis import paired
from pages.present.stat_tables import frame_latex
from pages.present.tables import is_missing_value, method_title, metric_header

ALPHA = 0.05
NEEDS_TWO_SEEDS = "needs 2 seeds"
NOT_COMPUTED = "n/a"
PRIMARY = "primary"
EXPLORATORY = "exploratory"

#: The Statistics tab's export of the paired table: `python -m jobs stats`'s columns, then the
#: bootstrap interval and the extras, as far as the table has them.
EXPORT_COLUMNS: tuple[str, ...] = (
    *paired.PAIRED_COLUMNS,
    "boot_ci_low",
    "boot_ci_high",
    "within_seed_sd",
    *paired.EXTRA_COLUMNS,
)

PAIRED_NOTE = (
    "Each row is method A − method B over the seeds both ran. **p (new patients)** is the "
    "corrected resampled t-test (Nadeau & Bengio 2003): the seeds resample the same films, so "
    "its variance adds n_test/n_train of the study's own splits; its 95 % CI is the "
    "“CI (new patients)”. The bootstrap CI resamples seeds, then patients within each test "
    "set; it treats the seeds as independent and is narrower. **Wilcoxon** answers “is A "
    "better on most seeds?” (consistent over seeds), Holm within the task and metric. "
    "d_z = mean / sd of the differences; r = matched-pairs rank-biserial. What each test "
    "assumes: docs/statistics.md."
)


def p_text(value: Any) -> str:
    """``"< 0.001"``, 3 significant digits, or ``"n/a"`` when the p-value is missing."""
    if is_missing_value(value):
        return NOT_COMPUTED
    return "< 0.001" if float(value) < 0.001 else f"{float(value):.3g}"


def number_text(value: Any, digits: int = 3) -> str:
    """A number with ``digits`` decimals, or ``"n/a"`` when missing."""
    return NOT_COMPUTED if is_missing_value(value) else f"{float(value):.{digits}f}"


def interval_text(low: Any, high: Any, digits: int = 3) -> str:
    """``"[-0.029, 0.159]"``, or ``"n/a"`` when either end is missing."""
    if is_missing_value(low) or is_missing_value(high):
        return NOT_COMPUTED
    return f"[{float(low):.{digits}f}, {float(high):.{digits}f}]"


def endpoint_label(family: Any) -> str:
    """``"primary"`` for the declared endpoint's family, else ``"exploratory"``."""
    return PRIMARY if family == paired.PRIMARY_FAMILY else EXPLORATORY


def row_reading(row: Mapping[str, Any], alpha: float = ALPHA) -> str:
    """The plain-words reading of one paired row (`engine.analysis.paired.reading`, which
    keeps "consistent over seeds" and "significant for new patients" apart), or why there is
    none (fewer than 2 seeds)."""
    if int(row["n_seeds"]) < 2 or is_missing_value(row["p_corrected"]):
        return f"Not computed: the corrected test {NEEDS_TWO_SEEDS} that ran both methods."
    shown = dict(row)
    shown["method_a"] = method_title(str(row["method_a"]))
    shown["method_b"] = method_title(str(row["method_b"]))
    if is_missing_value(shown.get("p_wilcoxon_holm")):
        shown["p_wilcoxon_holm"] = 1.0  # no Wilcoxon (all differences 0): not consistent
    return paired.reading(shown, alpha=alpha)


def paired_view(table: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """The paired table as the Statistics tab shows it: one row per task and pair, every
    cell text, primary rows first, each with its endpoint label and reading."""
    columns = [
        "Endpoint",
        "Task",
        "A − B",
        "Seeds",
        "Mean difference",
        "CI (new patients)",
        "p (new patients)",
        "p (Holm, family)",
        "Bootstrap CI",
        "Wilcoxon p",
        "Wilcoxon p (Holm)",
        "d_z",
        "r",
        "Reading",
    ]
    if table.empty:
        return pd.DataFrame(columns=columns)
    ordered = table.assign(_primary=table["family"] != paired.PRIMARY_FAMILY).sort_values(
        "_primary", kind="stable"
    )
    rows = []
    for row in ordered.to_dict("records"):
        rows.append(
            [
                endpoint_label(row["family"]),
                row["task"],
                f"{method_title(str(row['method_a']))} − {method_title(str(row['method_b']))}",
                str(int(row["n_seeds"])),
                number_text(row["mean_diff"], digits),
                interval_text(row["ci_low"], row["ci_high"], digits),
                p_text(row["p_corrected"]),
                p_text(row.get("p_corrected_holm")),
                interval_text(row.get("boot_ci_low"), row.get("boot_ci_high"), digits),
                p_text(row["p_wilcoxon"]),
                p_text(row["p_wilcoxon_holm"]),
                number_text(row["d_z"], 2),
                number_text(row["rank_biserial"], 2),
                row_reading(row),
            ]
        )
    return pd.DataFrame(rows, columns=columns)


def primary_view(primary: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """The declared primary endpoint (`paired.primary_endpoint`: soft − nominal AMAE, both
    tasks, one Holm family) as text, with a verdict per row."""
    columns = [
        "Task",
        "Soft method − Nominal",
        "Seeds",
        "AMAE difference",
        "CI (new patients)",
        "p (new patients)",
        "p (Holm over the family)",
        "Wilcoxon p",
        "Verdict (α = 0.05, Holm)",
    ]
    rows = []
    for row in primary.to_dict("records"):
        if is_missing_value(row["p_corrected_holm"]):
            verdict = f"not tested ({NEEDS_TWO_SEEDS})"
        elif row["significant"]:
            verdict = "lower AMAE" if row["mean_diff"] < 0 else "higher AMAE"
        else:
            verdict = "no difference shown"
        rows.append(
            [
                row["task"],
                method_title(str(row["method"])),
                str(int(row["n_seeds"])),
                number_text(row["mean_diff"], digits),
                interval_text(row["ci_low"], row["ci_high"], digits),
                p_text(row["p_corrected"]),
                p_text(row["p_corrected_holm"]),
                p_text(row["p_wilcoxon"]),
                verdict,
            ]
        )
    return pd.DataFrame(rows, columns=columns)


def paired_export(table: pd.DataFrame) -> pd.DataFrame:
    """The paired table's columns for the CSV/LaTeX exports, in `jobs stats`'s order."""
    return table[[c for c in EXPORT_COLUMNS if c in table.columns]].reset_index(drop=True)


def seed_shortfall(n_seeds: int) -> str | None:
    """What cannot be computed with this few seeds, or None from 3 seeds up."""
    if n_seeds < 2:
        return (
            "One seed: no paired difference has a spread, so the corrected test, its CI, the "
            "Wilcoxon, d_z, Friedman, the ANOVAs and the seeds-for-power need at least 2 "
            "seeds; only the means are shown."
        )
    if n_seeds < 3:
        return (
            "Two seeds: the corrected test has 1 degree of freedom, so its intervals are very "
            "wide, and no Wilcoxon p-value can fall below 0.5; treat every row as a sketch."
        )
    return None


def friedman_view(friedman: pd.DataFrame) -> pd.DataFrame:
    """Friedman per task (`designs.friedman_table`) as text; untestable rows say why."""
    rows = []
    for row in friedman.to_dict("records"):
        tested = not is_missing_value(row["p"])
        rows.append(
            {
                "Task": row["task"],
                "Methods": str(int(row["n_methods"])),
                "Seeds (blocks)": str(int(row["n_blocks"])),
                "χ²": number_text(row["chi2"], 2) if tested else NOT_COMPUTED,
                "p": p_text(row["p"]) if tested else "needs 3 methods and 2 seeds",
                "Kendall's W": number_text(row["kendall_w"], 2) if tested else NOT_COMPUTED,
            }
        )
    return pd.DataFrame(rows)


def anova_view(table: pd.DataFrame) -> pd.DataFrame:
    """An ANOVA table (seed-blocked or OLS, with ``partial_eta2``) as text."""
    headers = {
        "factor": "Factor",
        "F": "F",
        "num_df": "df",
        "den_df": "df (error)",
        "df": "df",
        "SS": "Sum of squares",
        "p": "p",
        "partial_eta2": "partial η²",
    }
    out = pd.DataFrame(index=table.index)
    for column in table.columns:
        values = table[column]
        if column == "p":
            text = ["" if is_missing_value(v) else p_text(v) for v in values]
        elif column == "factor":
            text = [str(v) for v in values]
        else:
            text = ["" if is_missing_value(v) else f"{float(v):.4g}" for v in values]
        out[headers.get(str(column), str(column))] = text
    return out.reset_index(drop=True)


CHOSEN_POWER_COLUMN = "Seeds for 80% (chosen effect)"


def power_view(power: pd.DataFrame, target: float = 0.8) -> pd.DataFrame:
    """Seeds needed per pair (`power.power_table`) as text; an unreachable target says more
    films, not more seeds, are needed."""
    percent = f"{target:.0%}"
    rows = []
    for row in power.to_dict("records"):
        rows.append(
            {
                "Task": row["task"],
                "A − B": f"{method_title(str(row['method_a']))} − "
                f"{method_title(str(row['method_b']))}",
                "Seeds run": str(int(row["n_seeds"])),
                "Power now": number_text(row["power_now"], 2),
                f"Seeds for {percent} (observed effect)": _seeds_text(
                    row["seeds_observed"], row["ceiling_observed"]
                ),
                f"Seeds for {percent} (chosen effect)": _seeds_text(
                    row["seeds_chosen"], row["ceiling_chosen"]
                ),
            }
        )
    return pd.DataFrame(rows)


def _seeds_text(seeds: Any, ceiling: Any) -> str:
    if not is_missing_value(seeds):
        return str(int(seeds))
    if is_missing_value(ceiling):
        return NOT_COMPUTED
    return f"not reachable (at most {float(ceiling):.0%} power: more films needed)"


def mean_ci_table(intervals: pd.DataFrame, metrics: Sequence[str], digits: int = 3) -> pd.DataFrame:
    """Table 4 as "mean [95 % CI]" per task, method and metric (`paired.mean_intervals`);
    a one-seed mean says its interval needs 2 seeds."""
    if intervals.empty:
        return pd.DataFrame(columns=["Task", "Method", "Seeds"])
    wide = []
    for (task, method), part in intervals.groupby(["task", "method"], sort=False):
        by_metric = part.set_index("metric")
        row = {
            "Task": task,
            "Method": method_title(str(method)),
            "Seeds": str(int(part["n_seeds"].max())),
        }
        for metric in metrics:
            r = by_metric.loc[metric]
            interval = interval_text(r["ci_low"], r["ci_high"], digits)
            if interval == NOT_COMPUTED:
                interval = NEEDS_TWO_SEEDS
            row[metric_header(metric)] = f"{number_text(r['mean'], digits)} {interval}"
        wide.append(row)
    return pd.DataFrame(wide)


def mean_ci_note(intervals: pd.DataFrame) -> str:
    """Which interval the CI view shows (the table's ``ci_kind``)."""
    kinds = sorted(set(intervals["ci_kind"])) if "ci_kind" in intervals else []
    kind = kinds[0] if kinds else paired.MEAN_CI_KIND
    return (
        f"Each cell: mean over seeds [{kind}]. It counts the seeds' shared films, so it is "
        "wider than the naive mean ± t·sd/√n."
    )


def seeds_plan_text(seeds: int | None, hours_per_seed: float | None, ceiling: float) -> str:
    """The Launch page's answer: seeds for 80 % power and what they cost in GPU hours."""
    if seeds is None:
        if math.isnan(ceiling):
            return "Give an effect other than 0 and an sd above 0."
        return (
            f"No number of seeds reaches 80 % power: even unlimited seeds give {ceiling:.0%}, "
            "because every seed resamples the same films. A larger dataset is needed."
        )
    text = f"**{seeds} seeds** give 80 % power with the corrected test."
    if hours_per_seed is not None and hours_per_seed > 0:
        text += (
            f" At about {hours_per_seed:.1f} GPU hours per seed (this study's estimate), "
            f"that is about {seeds * hours_per_seed:.0f} GPU hours."
        )
    return text


def paired_latex(table: pd.DataFrame, metric_label: str) -> str:
    """The paired comparisons as a booktabs LaTeX table (empty string when there are none)."""
    if table.empty:
        return ""
    shown = pd.DataFrame(
        {
            "Task": table["task"],
            "A": [method_title(str(m)) for m in table["method_a"]],
            "B": [method_title(str(m)) for m in table["method_b"]],
            "Seeds": table["n_seeds"].astype(int),
            "A − B": table["mean_diff"],
            "CI low": table["ci_low"],
            "CI high": table["ci_high"],
            "p corrected": [p_text(v) for v in table["p_corrected"]],
            "p Wilcoxon": [p_text(v) for v in table["p_wilcoxon"]],
            "p Wilcoxon (Holm)": [p_text(v) for v in table["p_wilcoxon_holm"]],
            "d_z": table["d_z"],
            "r": table["rank_biserial"],
        }
    )
    caption = (
        f"Paired comparisons ({metric_label}): mean difference over seeds with the corrected "
        "resampled t interval and p (Nadeau \\& Bengio 2003), Wilcoxon signed-rank p"
    )
    return frame_latex(shown, caption=caption, label="tab:paired") + "\n"
