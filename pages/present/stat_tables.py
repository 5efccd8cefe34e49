"""How the result pages write their statistics: test tables, corrections, the KL × CPPD
relationship and probability exports as text, CSV and LaTeX.

The numbers come from ``engine.analysis.stats``, ``engine.analysis.relationship`` and
``engine.analysis.probability_metrics``; the names, Table 4 and the shared cell formats are in
``pages.present.tables``. No streamlit, so every format is unit-tested
(tests/app/test_tables.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from engine.analysis.compare import sort_by_method
from engine.analysis.method_test_columns import (
    KLD_SENSITIVITY,
    KLD_TESTS,
    METHOD_TESTS,
    kld_at_eps_header,
)
from engine.analysis.metrics import MAE
from engine.analysis.probability_metrics import PROBABILITY_LABELS, PROBABILITY_METRICS
from engine.analysis.stats import CORRECTIONS
from engine.analysis.table_columns import RELATIONSHIP, TABLE4
from jobs.services.csv_safe import escape_csv_cells
from pages.present.tables import (
    is_missing_value,
    latex_cell,
    latex_escape,
    mean_std_text,
    method_title,
)

if TYPE_CHECKING:
    from engine.analysis.stats import TestResult, TukeyResult


# --------------------------------------------------------------------------------------------
# Statistics and relationship exports
# --------------------------------------------------------------------------------------------


def method_test_tables(
    shapiro: TestResult,
    kruskal: TestResult,
    wilcoxon: TestResult,
    anova: TestResult,
    tukey: TukeyResult,
) -> dict[str, pd.DataFrame]:
    """The Statistics tab's tables for export, by name, from its `stats.TestResult`s."""
    return {
        "shapiro": shapiro.table,
        "kruskal": kruskal.table,
        "wilcoxon": wilcoxon.table,
        "anova": anova.table,
        "tukey_pairs": tukey.table,
        "tukey_subsets": tukey.subsets,
    }


def wilcoxon_seed_shortfall(table: pd.DataFrame, alpha: float = 0.05) -> str | None:
    """Why no Wilcoxon p-value can be significant, or None when some pair can be.

    The exact two-sided signed-rank test on ``n`` paired seeds cannot give a p-value below
    ``2 / 2**n`` (every difference with the same sign), so with 5 seeds or fewer no pair
    can reach ``p < 0.05`` whatever the data: numbers then would only mislead.

    Args:
        table: ``engine.analysis.stats.wilcoxon_pairwise(...).table`` (column ``n_seeds``).
        alpha: significance level.

    Returns:
        A sentence saying how many seeds there are and how many are needed, or None.
    """
    if table.empty:
        return None
    most = int(table["n_seeds"].max())
    if 2.0 / 2**most < alpha:
        return None
    needed = int(math.floor(math.log2(2.0 / alpha))) + 1
    return (
        f"With {most} paired seed{'s' * (most != 1)} the Wilcoxon signed-rank test cannot "
        f"give p < {alpha:g} for any pair (the smallest possible p is {2.0 / 2**most:.3g}), "
        f"so no p-values are shown. It needs at least {needed} seeds per method."
    )


def relationship_seed_frame(results: Sequence[Any]) -> pd.DataFrame:
    """Per-seed KL × CPPD scores for export.

    Args:
        results: `engine.analysis.relationship.SeedRelationship` items.

    Returns:
        Columns ``method``, ``seed``, ``n_images``, ``kld``, ``mae`` and the 20 predicted
        cells ``pred_kl<i>_cppd<j>``.
    """
    rows = []
    for r in results:
        row = {"method": r.method, "seed": r.seed, "n_images": r.n_images, "kld": r.kld}
        row[MAE] = r.mae
        table = np.asarray(r.table)
        for i in range(table.shape[0]):
            for j in range(table.shape[1]):
                row[f"pred_kl{i}_cppd{j}"] = int(table[i, j])
        rows.append(row)
    return pd.DataFrame(rows)


#: The KL × CPPD summary's columns as a reader reads them (the page and the report), from
#: `engine.analysis.table_columns.RELATIONSHIP`.
RELATIONSHIP_HEADERS: dict[str, str] = {
    k: RELATIONSHIP.column(k).header for k in RELATIONSHIP.view("shown")
}
#: What the summary's two scores are, for a caption beside it.
RELATIONSHIP_NOTE = (
    "KLD = Kullback–Leibler divergence D_KL(true ‖ predicted) of the KL × CPPD table, in nats "
    "(0: the predicted table has the true proportions). Cell-count MAE = the mean absolute "
    "difference between the predicted and the true table's counts, in films per cell over "
    "the table's cells (not the grading MAE of Table 4). Both per seed, then mean and sd over "
    "seeds."
)


def relationship_summary_frame(summary: pd.DataFrame) -> pd.DataFrame:
    """`engine.analysis.relationship.summarise_relationship` without its array columns (for CSV)."""
    keep = list(RELATIONSHIP_HEADERS)
    return summary[keep].copy() if not summary.empty else pd.DataFrame(columns=keep)


def relationship_summary_shown(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary to read: methods titled, :data:`RELATIONSHIP_HEADERS` as headers."""
    shown = relationship_summary_frame(summary)
    shown = shown.assign(method=shown["method"].map(method_title))
    return shown.rename(columns=RELATIONSHIP_HEADERS)


def kld_tests_frame(shapiro: Any, kruskal: Any, wilcoxon: Any) -> pd.DataFrame:
    """The paper's Table 7 from three `engine.analysis.stats.TestResult` objects.

    Returns:
        Columns ``test``, ``models``, ``statistic``, ``p`` (Wilcoxon: the adjusted p, the
        correction named in ``test``); only tests that produced numbers.
    """
    rows = []
    for r in shapiro.table.dropna(subset=["p"]).itertuples(index=False):
        rows.append(
            {
                "test": "Normality (Shapiro–Wilk)",
                "models": method_title(r.method),
                "statistic": r.W,
                "p": r.p,
            }
        )
    for r in kruskal.table.itertuples(index=False):
        rows.append(
            {"test": "Global (Kruskal–Wallis)", "models": "All models", "statistic": r.H, "p": r.p}
        )
    for r in wilcoxon.table.itertuples(index=False):
        rows.append(
            {
                "test": f"Pairwise (Wilcoxon, {r.correction})",
                "models": f"{method_title(r.method_a)} vs. {method_title(r.method_b)}",
                "statistic": r.statistic,
                "p": r.p_adj,
            }
        )
    return pd.DataFrame(rows, columns=list(KLD_TESTS.view("shown")))


def relationship_latex(summary: pd.DataFrame, table7: pd.DataFrame, eps: float) -> str:
    """The KL × CPPD summary and its tests (the paper's Table 7) as two LaTeX tables.

    Args:
        summary: `engine.analysis.relationship.summarise_relationship`.
        table7: :func:`kld_tests_frame`.
        eps: the ε given to empty predicted cells (named in the caption).
    """
    shown = relationship_summary_frame(summary)
    return (
        frame_latex(
            shown.assign(method=shown["method"].map(method_title)),
            caption=f"KLD and cell MAE of the predicted KL $\\times$ CPPD tables (mean and std "
            f"over seeds; $\\varepsilon = {eps:g}$).",
            label="tab:kld_summary",
            digits=4,
            headers=RELATIONSHIP.latex_headers(),
        )
        + "\n"
        + frame_latex(
            table7,
            caption="Statistical tests for KLD comparing the true contingency table with the "
            "ones obtained from the predictions.",
            label="tab:kld_stats",
            digits=3,
            headers=KLD_TESTS.headers(),
        )
    )


def no_joint_reason(tasks_run: set[str], partial: bool) -> str:
    """Why no test image has both a KL and a CPPD prediction of one method and seed.

    Args:
        tasks_run: tasks with stored runs in the picked studies.
        partial: whether some picked study is still running or stopped early.
    """
    both = {"KL", "CPPD"}
    if tasks_run and tasks_run != both:
        only, missing = " and ".join(sorted(tasks_run)), " and ".join(sorted(both - tasks_run))
        return (
            f"These studies have {only} predictions only. The relationship needs a KL model "
            f"and a CPPD model of the same method and seed: run a study with {missing} too."
        )
    if partial:
        return "No seed with both a KL and a CPPD model has finished yet."
    return (
        "No test image was graded by both a KL and a CPPD model of the same method and "
        "seed in these studies."
    )


#: Column headers of the statistics tables as shown on the pages
#: (`engine.analysis.method_test_columns.METHOD_TESTS`).
TEST_HEADERS: dict[str, str] = METHOD_TESTS.headers()


P_COLUMNS = frozenset(METHOD_TESTS.view("p_values"))


def format_test_table(table: pd.DataFrame) -> pd.DataFrame:
    """A statistics table as text for reading: p-values as ``"< 0.001"`` or 3 significant
    digits, other numbers with 4 significant digits, yes/no for booleans, blanks for
    missing cells, and plain-language headers (:data:`TEST_HEADERS`).
    """
    out = pd.DataFrame(index=table.index)
    for column in table.columns:
        values = table[column]
        if column in P_COLUMNS:
            text = [_p_text(v) for v in values]
        elif values.dtype == bool or str(values.dtype) == "boolean":
            text = ["" if is_missing_value(v) else ("yes" if v else "no") for v in values]
        elif pd.api.types.is_integer_dtype(values):
            text = [str(int(v)) for v in values]
        elif pd.api.types.is_numeric_dtype(values):
            text = ["" if is_missing_value(v) else f"{float(v):.4g}" for v in values]
        else:
            text = ["" if is_missing_value(v) else str(v) for v in values]
        out[TEST_HEADERS.get(str(column), str(column))] = text
    return out


# The pairwise tests' corrections as offered on the pages: SoftGrade's default first, the
# paper's (none) one click away, then the rest of statsmodels' methods.
_FIRST_CORRECTIONS = ("holm", "none")
CORRECTION_ORDER: tuple[str, ...] = (
    *_FIRST_CORRECTIONS,
    *(c for c in CORRECTIONS if c not in _FIRST_CORRECTIONS),
)
CORRECTION_CHOICES: dict[str, str] = {
    "holm": "Holm (SoftGrade's default)",
    "none": "none — as in the paper (unadjusted p-values)",
}


def correction_label(correction: str) -> str:
    """How a correction reads in a picker: ``"Holm (SoftGrade's default)"``, ``"none — as in
    the paper (unadjusted p-values)"``, else its statsmodels name (``"Bonferroni"``)."""
    return CORRECTION_CHOICES.get(correction, CORRECTIONS[correction])


def tables_csv(tables: Mapping[str, pd.DataFrame]) -> str:
    """Several result tables in one CSV: a ``table`` column names each row's table."""
    frames = [frame.assign(table=name) for name, frame in tables.items() if not frame.empty]
    if not frames:
        return "table\n"
    out = pd.concat(frames, ignore_index=True)
    return escape_csv_cells(out[["table", *(c for c in out.columns if c != "table")]]).to_csv(
        index=False
    )


def frame_latex(
    frame: pd.DataFrame,
    *,
    caption: str,
    label: str,
    digits: int = 3,
    headers: Mapping[str, str] | None = None,
) -> str:
    """Any small results frame as a booktabs LaTeX ``table`` in the paper's style.

    Numbers get ``digits`` decimals; p-values (columns named ``p``/``p_adj``/``p-value``)
    are written ``$<0.001$`` or with 3 significant digits; missing cells are ``--``.

    Args:
        frame: the rows to print.
        caption: table caption (LaTeX).
        label: ``\\label`` key.
        digits: decimals for other numbers.
        headers: column → header text (defaults to the column names).
    """
    headers = dict(headers or {})
    names = [latex_escape(headers.get(c, str(c))) for c in frame.columns]
    lines = [
        r"\begin{table}[!htbp]",
        r"\centering",
        rf"\caption{{{caption}}}",
        rf"\label{{{label}}}",
        r"\begin{tabular}{l" + "c" * (len(frame.columns) - 1) + "}",
        r"\toprule\toprule",
        " & ".join(rf"\textbf{{{n}}}" for n in names) + r" \\",
        r"\midrule",
    ]
    for _, row in frame.iterrows():
        cells = [_latex_value(row[c], str(c), digits) for c in frame.columns]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def stats_latex(tables: Mapping[str, pd.DataFrame], metric_label: str) -> str:
    """The statistics tables that have rows, one LaTeX table each, captioned with the metric.

    A comment line when no test could be run, so the download is never an empty file.
    """
    latex = "\n".join(
        frame_latex(table, caption=f"{name} ({metric_label})", label=f"tab:{name}")
        for name, table in tables.items()
        if not table.empty
    )
    return latex or "% no test could be run\n"


def _p_text(value: Any) -> str:
    if is_missing_value(value):
        return ""
    return "< 0.001" if float(value) < 0.001 else f"{float(value):.3g}"


def _latex_value(value: Any, column: str, digits: int) -> str:
    if isinstance(value, str):
        return latex_escape(value)
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if is_missing_value(value):
        return "--"
    if isinstance(value, int | np.integer):
        return str(int(value))
    number = float(value)
    if column.lower() in ("p", "p_adj", "p-value", "p value"):
        return r"$<0.001$" if number < 0.001 else f"${number:.3g}$"
    return f"${number:.{digits}f}$"


KLD_SENSITIVITY_NOTE = (
    "When a method never predicts a KL × CPPD combination that does occur, the KLD is "
    "infinite; the ε given to empty cells makes it finite but then decides the number: it "
    "grows by (missed share) × ln(1/ε), about 6.9 × the missed share per factor of 1000 in "
    "ε. The missed share is the fraction of the true table in cells the method leaves empty "
    "(0: ε does not matter). The smoothed KLD adds half an image to every predicted cell "
    "(Jeffreys' Dirichlet(1/2) prior), needs no ε and never diverges. Means over seeds."
)


def kld_sensitivity_frame(sensitivity: pd.DataFrame) -> pd.DataFrame:
    """Per method: mean KLD at each ε, the mean missed share and the mean smoothed KLD.

    Args:
        sensitivity: ``engine.analysis.relationship.kld_sensitivity``'s rows (method, seed,
            eps, kld,
            missed_mass, kld_smoothed).
    """
    order = list(pd.unique(sensitivity["method"]))
    at_eps = sensitivity.pivot_table(index="method", columns="eps", values="kld", aggfunc="mean")
    at_eps = at_eps[sorted(at_eps.columns, reverse=True)]
    at_eps.columns = [kld_at_eps_header(eps) for eps in at_eps.columns]
    per_seed = sensitivity.drop_duplicates(["method", "seed"]).groupby("method")
    extra = per_seed[list(KLD_SENSITIVITY.view("after_eps"))].mean()
    shown = at_eps.join(extra).loc[order].round(4).reset_index()
    return shown.assign(method=shown["method"].map(method_title)).rename(
        columns=KLD_SENSITIVITY.headers()
    )


# --------------------------------------------------------------------------------------------
# The probability metrics (Compare → Probabilities)
# --------------------------------------------------------------------------------------------

PROBABILITY_CAPTION = (
    r"Probability metrics ($Mean_{STD}$ over seeds) of each soft-labelling strategy: ranked "
    r"probability score (dlordinal's, not divided by $J-1$), expected calibration error of "
    r"the top label and of the events $P(\mathrm{grade} > k)$ (10 equal-width bins), share "
    r"of unimodal predicted distributions and accuracy within one grade."
)


def probability_summary_frame(summary: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """The Probabilities tab's table: Task, Method, Seeds and one ``mean ± sd`` text column
    per probability metric.

    Args:
        summary: ``engine.analysis.probability_metrics.probability_summary``'s rows.
        digits: decimals of means and standard deviations.

    Rows go by task, then methods in display order (registry order, then other names), as
    in Table 4, not alphabetically.
    """
    summary = sort_by_method(summary).sort_values("task", kind="stable")
    shown = summary[["task", "method", "n_seeds"]].copy()
    for metric in PROBABILITY_METRICS:
        means, sds = summary[f"{metric}_mean"], summary[f"{metric}_std"]
        shown[PROBABILITY_LABELS[metric]] = [
            mean_std_text(m, s, digits) for m, s in zip(means, sds, strict=True)
        ]
    shown["method"] = shown["method"].map(method_title)
    return shown.rename(columns={"task": "Task", "method": "Method", "n_seeds": "Seeds"})


def probability_csv(summary: pd.DataFrame) -> str:
    """The probability-metric table as CSV with full-precision numbers.

    Args:
        summary: ``engine.analysis.probability_metrics.probability_summary``'s rows (task, method,
            n_seeds, ``<metric>_mean`` / ``<metric>_std``).
    """
    columns = ["task", "method", "n_seeds"]
    columns += [f"{m}_{s}" for m in PROBABILITY_METRICS for s in ("mean", "std")]
    return escape_csv_cells(summary[columns]).to_csv(index=False)


def probability_latex(
    summary: pd.DataFrame,
    *,
    digits: int = 3,
    label: str = "tab:probabilities",
) -> str:
    """The probability-metric table as a booktabs LaTeX ``table*`` laid out like Table 4.

    Cells are ``$0.571_{0.177}$`` (mean and sample std over seeds); tasks are separated by a
    ``\\midrule``.

    Args:
        summary: as :func:`probability_csv`.
        digits: decimals.
        label: ``\\label`` key.
    """
    names = TABLE4.view_headers("rows_with_seeds")
    names += [PROBABILITY_LABELS[m] for m in PROBABILITY_METRICS]
    lines = [
        r"\begin{table*}[!htbp]",
        r"\centering",
        r"\tiny",
        rf"\caption{{{PROBABILITY_CAPTION}}}",
        rf"\label{{{label}}}",
        r"\begin{tabular}{llc" + "c" * len(PROBABILITY_METRICS) + "}",
        r"\toprule\toprule",
        " & ".join(latex_escape(n) for n in names) + r" \\",
        r"\midrule",
    ]
    previous_task = None
    for _, row in summary.iterrows():
        if previous_task is not None and row["task"] != previous_task:
            lines.append(r"\midrule")
        previous_task = row["task"]
        cells = [latex_escape(str(row["task"])), latex_escape(method_title(row["method"]))]
        cells.append(str(int(row["n_seeds"])))
        for metric in PROBABILITY_METRICS:
            cells.append(latex_cell(row[f"{metric}_mean"], row[f"{metric}_std"], digits, ""))
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule\bottomrule", r"\end{tabular}", r"\end{table*}"]
    return "\n".join(lines) + "\n"
