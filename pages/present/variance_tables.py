"""How the Statistics tab, `softgrade stats --components` and the report write the variance
components of a factorial seeds design (`engine.analysis.variance_components`, issue 29).

No streamlit: every text and table here is unit-tested. A study whose seeds are not a
factorial design gets :data:`NOT_FACTORIAL_NOTE` instead: one sentence saying why its design
cannot separate the parts and how to ask for a factorial study.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from engine.analysis import variance_components as vc
from engine.analysis.table_columns import COMPONENTS
from pages.present.reviewer_tables import interval_text, number_text, p_text, pair_text
from pages.present.tables import is_missing_value

SECTION_TITLE = "Variance components (factorial design)"

NOT_FACTORIAL_NOTE = (
    "Each seed of this study drew its split and its initialisation together, so its design "
    "cannot separate the variance the data make from the variance the training makes (nor "
    "measure the correlation the corrected test assumes); to separate them, launch a "
    "factorial study: `seeds: {splits: 10, inits: 2}` in the study file, or "
    "“Seeds: splits × inits” on the Launch page."
)

#: Which interval to trust when: the three intervals and what each assumes.
INTERVALS_NOTE = (
    "Three intervals for the mean difference over every split × init cell, each assuming "
    "something else. **Factorial** (σ²_split/S + σ²_init/I + σ²_res/(S·I), Satterthwaite df): "
    "new splits and initialisations of *these* films; it takes the splits as independent "
    "draws of data, which they are not (they share films), so it is too narrow for new "
    "patients. **Per split** (t on the S split means): splits independent and each split's "
    "inits averaged; it ignores an init effect shared by every split (too narrow when the "
    "init part is large and the inits few). **Design-corrected** (Nadeau–Bengio's "
    "n_test/n_train on the split part only): for new patients; it assumes their ρ for the "
    "data part only, while the training's part needs none (its sharing between runs, the same "
    "init seeds on every split, is in the design and estimated). Trust it for a claim about "
    "new patients, the factorial one for how far these films' splits and inits move a "
    "difference. ρ (design) is the correlation the independent-seeds corrected test would "
    "need to give the design-corrected variance."
)

#: The components table's columns in order (`engine.analysis.table_columns.COMPONENTS`,
#: view "shown"): the interval to trust for new patients (the design-corrected one) right
#: after the difference, the components and the other intervals after it
#: (:data:`COMPACT_COMPONENTS` of them shown first on the page).
COMPONENT_HEADERS: dict[str, str] = {
    k: COMPONENTS.column(k).header for k in COMPONENTS.view("shown")
}
#: How many of :data:`COMPONENT_HEADERS` the page and the report show first.
COMPACT_COMPONENTS = len(COMPONENTS.view("shown_first"))


def shares_text(row: Mapping[str, Any]) -> str:
    """``"62 % / 8 % / 30 %"``, or "n/a" when the differences do not vary."""
    shares = [row[k] for k in COMPONENTS.view("shares")]
    if any(is_missing_value(s) for s in shares):
        return "n/a (no variation)"
    return " / ".join(f"{100 * float(s):.0f} %" for s in shares)


def components_view(table: pd.DataFrame, digits: int = 4) -> pd.DataFrame:
    """The components table as the Statistics tab and the report show it: every cell text."""
    h = COMPONENT_HEADERS
    if table.empty:
        return pd.DataFrame(columns=list(h.values()))
    rows = []
    for row in table.to_dict("records"):
        rows.append(
            {
                h["task"]: row["task"],
                h["pair"]: pair_text(row),
                h["design"]: f"{int(row['n_splits'])} × {int(row['n_inits'])}",
                h["mean_diff"]: number_text(row["mean_diff"], digits - 1),
                h["ci_design"]: interval_text(
                    row["ci_design_low"], row["ci_design_high"], digits - 1
                ),
                h["p_design"]: p_text(row["p_design"]),
                h["var_split"]: _variance(row["var_split"]),
                h["var_init"]: _variance(row["var_init"]),
                h["var_residual"]: _variance(row["var_residual"]),
                h["shares"]: shares_text(row),
                h["ci_factorial"]: interval_text(
                    row["ci_factorial_low"], row["ci_factorial_high"], digits - 1
                ),
                h["p_factorial"]: p_text(row["p_factorial"]),
                h["ci_split_means"]: interval_text(
                    row["ci_split_means_low"], row["ci_split_means_high"], digits - 1
                ),
                h["rho_design"]: number_text(row["rho_design"], 2),
                h["estimator"]: row["estimator"],
            }
        )
    return pd.DataFrame(rows, columns=list(h.values()))


def _variance(value: Any) -> str:
    """A variance in scientific notation (AMAE differences give ~1e-4), "n/a" when missing."""
    return "n/a" if is_missing_value(value) else f"{float(value):.2e}"


def design_line(table: pd.DataFrame) -> str:
    """One sentence on the design and where the variance of the typical pair comes from."""
    if table.empty:
        return "No pair has 2 splits and 2 inits finished yet: the components need both."
    splits, inits = int(table["n_splits"].max()), int(table["n_inits"].max())
    shares = table[list(COMPONENTS.view("shares"))].median()
    if shares.isna().any():
        where = ""
    else:
        where = (
            f" Over these pairs the median share of one run's variance is "
            f"{100 * shares['share_split']:.0f} % split, {100 * shares['share_init']:.0f} % "
            f"init and {100 * shares['share_residual']:.0f} % residual (split × init)."
        )
    return (
        f"A factorial design: {splits} splits × {inits} inits, every split trained from every "
        f"initialisation, so each pair's difference has a split, an init and a residual "
        f"variance ({vc.ANOVA} when every cell is in, else {vc.REML}).{where}"
    )


def components_export(table: pd.DataFrame) -> pd.DataFrame:
    """The numeric components table for CSV and Parquet (its columns as computed)."""
    return table[list(vc.COMPONENT_COLUMNS)]


def split_view(view: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The components view as two tables that each fit a page: the difference with the
    interval to trust first, then the components and the other intervals (by task and pair)."""
    first = view.iloc[:, :COMPACT_COMPONENTS]
    rest = view.iloc[:, [0, 1, *range(COMPACT_COMPONENTS, view.shape[1])]]
    return first, rest


def plain(text: str) -> str:
    """Markdown's emphasis and code marks taken out, for the report's paragraphs and the
    terminal."""
    return text.replace("**", "").replace("*", "").replace("`", "")
