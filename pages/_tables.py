"""How the comparison pages write their numbers: Table 4 as text, LaTeX and CSV, p-values,
test tables, progress sentences and exports.

The numbers themselves come from ``engine.compare``, ``engine.stats`` and
``engine.relationship``; this module only turns them into what people read or download. It
imports no streamlit, so every format is unit-tested (tests/app/test_tables.py).

Conventions, shown next to the numbers in the UI:

* **Table 4 cells** (`format_summary`, `summary_latex`): ``"0.571 ± 0.177"`` (mean ± sample
  std over seeds), ``$0.571_{0.177}$`` in LaTeX; best bold, second italic, as ranked by
  `engine.compare.rank_marks`.
* **p-values**: ``"< 0.001"`` or three significant digits.
* **Method names**: ``"beta"`` reads ``"Beta"``; a label ``"beta · study"`` keeps its study.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from pandas.io.formats.style import Styler

from engine.compare import (
    AVERAGE,
    PUBLISHED_SEEDS,
    ROW_AVERAGE,
    ROW_PAPER,
    ROW_PAPER_AVERAGE,
    StudyProgress,
    sort_by_method,
)
from engine.metrics import LOWER_IS_BETTER, METRIC_LABELS
from engine.probability_metrics import PROBABILITY_LABELS, PROBABILITY_METRICS
from engine.stats import CORRECTIONS
from engine.vocab import LABEL_SEPARATOR
from jobs.csv_safe import escape_csv_cells
from store.bundle import REFERENCE_STUDY, read_card
from store.db import StoreError

if TYPE_CHECKING:
    from engine.stats import TestResult

# Column order of the paper's Table 4.
TABLE4_METRICS: tuple[str, ...] = ("qwk", "mae", "ms", "ba", "amae", "mmae")


# --------------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------------


def method_title(method: str) -> str:
    """Display name of a method or label: ``"beta"`` → ``"Beta"``, study suffix kept."""
    base, sep, rest = str(method).partition(LABEL_SEPARATOR)
    return base[:1].upper() + base[1:] + sep + rest


def metric_name(metric: str) -> str:
    """A metric as a picker reads it: ``"AMAE (lower is better)"``."""
    better = "lower" if metric in LOWER_IS_BETTER else "higher"
    return f"{METRIC_LABELS[metric]} ({better} is better)"


def metric_header(metric: str) -> str:
    """Column header with the better direction, e.g. ``"AMAE ↓"``."""
    return f"{METRIC_LABELS[metric]} {'↓' if metric in LOWER_IS_BETTER else '↑'}"


REFERENCE_MARK = "Bundled reference · "


@functools.cache
def reference_study_id() -> str | None:
    """The study id of the bundled reference study (examples/reference-study.zip), or None
    when the bundle is missing or unreadable (read once per process)."""
    try:
        return str(read_card(REFERENCE_STUDY)["study"]["study_id"])
    except (StoreError, KeyError, OSError):
        return None


def study_label(row: Mapping[str, Any]) -> str:
    """How a study reads in a picker: name, status, seeds and date; the bundled reference
    study is marked as such wherever it is listed."""
    spec = row["spec"] if isinstance(row["spec"], Mapping) else json.loads(row["spec"] or "{}")
    seeds = len(spec.get("seeds", []))
    created = pd.Timestamp(row["created_at"]).strftime("%Y-%m-%d %H:%M")
    mark = REFERENCE_MARK if row.get("study_id") == reference_study_id() else ""
    return f"{mark}{row['name']} · {row['status']} · {seeds} seed{'s' * (seeds != 1)} · {created}"


def progress_message(progress: StudyProgress) -> str | None:
    """A plain sentence for a partial study, None for a finished one."""
    if not progress.partial:
        return None
    done = f"{len(progress.finished)} of {len(progress.planned)} seeds finished"
    which = f" ({_seed_list(progress.finished)})" if progress.finished else ""
    name, status = progress.name, progress.status
    if status in ("running", "queued"):
        state = "is still running" if status == "running" else "has not started yet"
        if not progress.finished:
            return (
                f"Study “{name}” {state}: no seed has finished yet, so there is "
                "nothing to show for it. Figures appear as soon as its first seed is done."
            )
        return (
            f"Study “{name}” {state}: {done}{which}. The figures use those seeds "
            "only and are partial; they will change as more seeds finish."
        )
    return (
        f"Study “{name}” {status} before the end: {done}{which}. The figures use those seeds only."
    )


def _seed_list(seeds: Sequence[int]) -> str:
    """``"seed 3"`` or ``"seeds 0, 1, 2"``."""
    return ("seed " if len(seeds) == 1 else "seeds ") + ", ".join(str(s) for s in seeds)


# --------------------------------------------------------------------------------------------
# Table 4
# --------------------------------------------------------------------------------------------


def row_label(row: Mapping[str, Any]) -> str:
    """The Method cell of a Table 4 row, e.g. ``"Beta"`` or ``"Beta — paper (20 seeds)"``."""
    kind = row["row"]
    if kind == ROW_PAPER:
        return f"{method_title(row['base_method'])} — paper ({PUBLISHED_SEEDS} seeds)"
    if kind == ROW_PAPER_AVERAGE:
        return f"{AVERAGE} — paper"
    return method_title(str(row["method"]))


def format_summary(summary: pd.DataFrame, *, digits: int = 3) -> pd.DataFrame:
    """Table 4 as text cells ``"0.571 ± 0.177"``, columns in the paper's order.

    A missing std (one seed) shows as ``"0.571 ± –"``; a missing mean as ``"–"``.

    Returns:
        Columns ``Task``, ``Method``, ``Seeds``, then ``QWK ↑``, ``MAE ↓``, ... (the arrow
        says which way is better); same index as ``summary``.
    """
    out = pd.DataFrame(index=summary.index)
    out["Task"] = summary["task"].astype(str)
    out["Method"] = [row_label(row) for _, row in summary.iterrows()]
    out["Seeds"] = summary["n_seeds"].astype(int).astype(str)
    for metric in TABLE4_METRICS:
        out[metric_header(metric)] = [
            mean_std_text(mean, std, digits)
            for mean, std in zip(summary[f"{metric}_mean"], summary[f"{metric}_std"], strict=True)
        ]
    return out


def style_summary(summary: pd.DataFrame, marks: pd.DataFrame, *, digits: int = 3) -> Styler:
    """A pandas Styler of :func:`format_summary`: best bold, second italic, paper rows grey.

    Args:
        summary: from `engine.compare.summary_table` / `engine.compare.with_published`.
        marks: from `engine.compare.rank_marks` on the same summary.
        digits: decimals shown.
    """
    shown = format_summary(summary, digits=digits)
    css = pd.DataFrame("", index=shown.index, columns=shown.columns)
    for metric in TABLE4_METRICS:
        column = metric_header(metric)
        if metric in marks.columns:
            css.loc[marks[metric] == "best", column] = "font-weight: bold"
            css.loc[marks[metric] == "second", column] = "font-style: italic"
    paper = summary["row"].isin([ROW_PAPER, ROW_PAPER_AVERAGE]).to_numpy()
    average = (summary["row"] == ROW_AVERAGE).to_numpy()
    css.loc[paper, :] = css.loc[paper, :] + "; color: #6b6b6b; background-color: #f3f3f3"
    css.loc[average, :] = css.loc[average, :] + "; border-top: 1px solid #999"
    styler = shown.style.apply(lambda _: css, axis=None).hide(axis="index")
    # Keep "0.571 ± 0.177" on one line however narrow the page.
    return styler.set_table_styles([{"selector": "td, th", "props": "white-space: nowrap;"}])


def summary_csv(summary: pd.DataFrame) -> str:
    """Table 4 as CSV with full-precision numbers.

    ``row`` says what each line is: ``method`` (ours), ``average``, ``paper`` (the published
    value for ``method``) or ``paper average``.
    """
    columns = ["task", "method", "row", "n_seeds"]
    columns += [f"{m}_{s}" for m in TABLE4_METRICS for s in ("mean", "std")]
    out = summary[columns].copy()
    # Paper rows carry the plain method name; ``row`` tells them from ours.
    out.loc[summary["row"] == ROW_PAPER, "method"] = summary["base_method"]
    return escape_csv_cells(out).to_csv(index=False)


def summary_latex(
    summary: pd.DataFrame,
    marks: pd.DataFrame,
    *,
    digits: int = 3,
    caption: str = (
        r"Performance comparison ($Mean_{STD}$ over seeds) across soft-labelling strategies. "
        r"The best results are shown in bold, whereas the second-best results are shown in "
        r"italics."
    ),
    label: str = "tab:results",
) -> str:
    """Table 4 as a LaTeX ``table*`` in the paper's layout (booktabs).

    Cells are ``$0.571_{0.177}$``; best is ``$\\mathbf{...}$`` and second ``$\\mathit{...}$``,
    as in the paper (``\\textbf`` would not embolden the math-mode digits). Average rows
    sit under a ``\\midrule``; the paper's rows, if present, say "(paper)".
    """
    header = ["Dataset", "Soft-labelling", *(METRIC_LABELS[m] for m in TABLE4_METRICS)]
    lines = [
        r"\begin{table*}[!htbp]",
        r"\centering",
        r"\tiny",
        rf"\caption{{{caption}}}",
        rf"\label{{{label}}}",
        r"\begin{tabular}{ll" + "c" * len(TABLE4_METRICS) + "}",
        r"\toprule\toprule",
        " & ".join(header) + r" \\",
        r"\midrule",
    ]
    previous_task = None
    for index, row in summary.iterrows():
        if previous_task is not None and row["task"] != previous_task:
            lines.append(r"\midrule")
        if row["row"] == ROW_AVERAGE:
            lines.append(r"\midrule")
        previous_task = row["task"]
        name = row_label(row)
        if row["row"] == ROW_PAPER:
            name = f"{method_title(row['base_method'])} (paper)"
        elif row["row"] == ROW_PAPER_AVERAGE:
            name = f"{AVERAGE} (paper)"
        cells = [_latex_escape(str(row["task"])), _latex_escape(name)]
        for metric in TABLE4_METRICS:
            mark = marks.at[index, metric] if metric in marks.columns else ""
            cells.append(_latex_cell(row[f"{metric}_mean"], row[f"{metric}_std"], digits, mark))
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule\bottomrule", r"\end{tabular}", r"\end{table*}"]
    return "\n".join(lines) + "\n"


def missing_tasks_note(planned: set[str], present: Sequence[str]) -> str | None:
    """Which planned tasks have no predictions yet, or None when every one has some."""
    missing = sorted(planned - set(present))
    if not missing:
        return None
    return (
        f"No {' or '.join(missing)} predictions in these studies yet; showing "
        f"{' and '.join(present)} only."
    )


def table4_note(*, with_paper: bool) -> str:
    """The caption under Table 4: what the cells, marks and Average rows mean."""
    note = (
        "Mean ± standard deviation over seeds. Per task and metric, **bold** is the best "
        "method and *italics* the second (↑ higher is better, ↓ lower is better). "
        "The Average row is the mean of the methods' means and of their standard "
        "deviations, as in the paper."
    )
    if with_paper:
        note += (
            " Grey rows are the paper's published values (20 seeds on its private "
            "radiographs): a reference point, not a result these runs should reproduce."
        )
    return note


def titled(scores: pd.DataFrame) -> pd.DataFrame:
    """``scores`` in the paper's method order with display names in ``method``.

    ``"beta"`` becomes ``"Beta"``, so the tests' one-line readings name methods as people
    write them and list them in the paper's order.
    """
    out = sort_by_method(scores)
    return out.assign(method=out["method"].map(method_title)).reset_index(drop=True)


def seed_range(n_seeds: pd.Series) -> str:
    """Seeds per (task, method) as ``"3"`` or, when they differ, ``"2–3"``."""
    low, high = n_seeds.min(), n_seeds.max()
    return str(low) if low == high else f"{low}–{high}"


# --------------------------------------------------------------------------------------------
# Statistics and relationship exports
# --------------------------------------------------------------------------------------------


def method_test_tables(
    shapiro: TestResult,
    kruskal: TestResult,
    wilcoxon: TestResult,
    anova: TestResult,
    tukey: TestResult,
) -> dict[str, pd.DataFrame]:
    """The Statistics tab's tables for export, by name, from its `engine.stats.TestResult`s."""
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
        table: ``engine.stats.wilcoxon_pairwise(...).table`` (column ``n_seeds``).
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
        results: `engine.relationship.SeedRelationship` items.

    Returns:
        Columns ``method``, ``seed``, ``n_images``, ``kld``, ``mae`` and the 20 predicted
        cells ``pred_kl<i>_cppd<j>``.
    """
    rows = []
    for r in results:
        row = {"method": r.method, "seed": r.seed, "n_images": r.n_images, "kld": r.kld}
        row["mae"] = r.mae
        table = np.asarray(r.table)
        for i in range(table.shape[0]):
            for j in range(table.shape[1]):
                row[f"pred_kl{i}_cppd{j}"] = int(table[i, j])
        rows.append(row)
    return pd.DataFrame(rows)


def relationship_summary_frame(summary: pd.DataFrame) -> pd.DataFrame:
    """`engine.relationship.summarise_relationship` without its array columns (for CSV)."""
    keep = ["method", "n_seeds", "kld_mean", "kld_std", "mae_mean", "mae_std"]
    return summary[keep].copy() if not summary.empty else pd.DataFrame(columns=keep)


def kld_tests_frame(shapiro: Any, kruskal: Any, wilcoxon: Any) -> pd.DataFrame:
    """The paper's Table 7 from three `engine.stats.TestResult` objects.

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
    return pd.DataFrame(rows, columns=["test", "models", "statistic", "p"])


def relationship_latex(summary: pd.DataFrame, table7: pd.DataFrame, eps: float) -> str:
    """The KL × CPPD summary and its tests (the paper's Table 7) as two LaTeX tables.

    Args:
        summary: `engine.relationship.summarise_relationship`.
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
            headers={
                "method": "Model",
                "n_seeds": "Seeds",
                "kld_mean": "KLD mean",
                "kld_std": "KLD std",
                "mae_mean": "MAE mean",
                "mae_std": "MAE std",
            },
        )
        + "\n"
        + frame_latex(
            table7,
            caption="Statistical tests for KLD comparing the true contingency table with the "
            "ones obtained from the predictions.",
            label="tab:kld_stats",
            digits=3,
            headers={"test": "Statistical test", "models": "Model(s)", "statistic": "Statistic"},
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


# Column headers of the statistics tables as shown on the pages.
TEST_HEADERS: dict[str, str] = {
    "method": "Method",
    "n": "n",
    "normal": "Looks normal",
    "test": "Test",
    "methods": "Methods",
    "method_a": "Method A",
    "method_b": "Method B",
    "n_seeds": "Paired seeds",
    "median_diff": "Median A − B",
    "statistic": "Statistic",
    "p_adj": "Adjusted p",
    "correction": "Correction",
    "significant": "Differ (α = 0.05)",
    "factor": "Factor",
    "group1": "Method A",
    "group2": "Method B",
    "meandiff": "Mean B − A",
    "lower": "95% CI low",
    "upper": "95% CI high",
    "reject": "Differ (α = 0.05)",
    "mean": "Mean",
}


P_COLUMNS = frozenset({"p", "p_adj"})


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
            text = ["" if _is_missing(v) else ("yes" if v else "no") for v in values]
        elif pd.api.types.is_integer_dtype(values):
            text = [str(int(v)) for v in values]
        elif pd.api.types.is_numeric_dtype(values):
            text = ["" if _is_missing(v) else f"{float(v):.4g}" for v in values]
        else:
            text = ["" if _is_missing(v) else str(v) for v in values]
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
    names = [_latex_escape(headers.get(c, str(c))) for c in frame.columns]
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


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def mean_std_text(mean: Any, std: Any, digits: int) -> str:
    """``"0.571 ± 0.177"``; ``"0.571 ± –"`` without a std (one seed), ``"–"`` without a mean."""
    if _is_missing(mean):
        return "–"
    std_text = "–" if _is_missing(std) else f"{float(std):.{digits}f}"
    return f"{float(mean):.{digits}f} ± {std_text}"


def _is_missing(value: Any) -> bool:
    try:
        return value is None or value is pd.NA or math.isnan(float(value))
    except (TypeError, ValueError):
        return False


def _p_text(value: Any) -> str:
    if _is_missing(value):
        return ""
    return "< 0.001" if float(value) < 0.001 else f"{float(value):.3g}"


def _latex_cell(mean: Any, std: Any, digits: int, mark: str) -> str:
    if _is_missing(mean):
        return "--"
    body = f"{float(mean):.{digits}f}"
    if not _is_missing(std):
        body += f"_{{{float(std):.{digits}f}}}"
    if mark == "best":
        body = rf"\mathbf{{{body}}}"
    elif mark == "second":
        body = rf"\mathit{{{body}}}"
    return f"${body}$"


def _latex_value(value: Any, column: str, digits: int) -> str:
    if isinstance(value, str):
        return _latex_escape(value)
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if _is_missing(value):
        return "--"
    if isinstance(value, int | np.integer):
        return str(int(value))
    number = float(value)
    if column.lower() in ("p", "p_adj", "p-value", "p value"):
        return r"$<0.001$" if number < 0.001 else f"${number:.3g}$"
    return f"${number:.{digits}f}$"


_LATEX_SPECIAL = {
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\\": r"\textbackslash{}",
    "×": r"$\times$",
    "–": "--",
    "—": "---",
    "·": r"$\cdot$",
    "±": r"$\pm$",
    "α": r"$\alpha$",
    "Š": r"\v{S}",
    ">": r"$>$",
    "<": r"$<$",
}


def _latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


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
        sensitivity: ``engine.relationship.kld_sensitivity``'s rows (method, seed, eps, kld,
            missed_mass, kld_smoothed).
    """
    order = list(pd.unique(sensitivity["method"]))
    at_eps = sensitivity.pivot_table(index="method", columns="eps", values="kld", aggfunc="mean")
    at_eps = at_eps[sorted(at_eps.columns, reverse=True)]
    at_eps.columns = [f"KLD at ε = {eps:g}" for eps in at_eps.columns]
    per_seed = sensitivity.drop_duplicates(["method", "seed"]).groupby("method")
    extra = per_seed[["missed_mass", "kld_smoothed"]].mean()
    extra.columns = ["Missed share", "Smoothed KLD (Jeffreys)"]
    shown = at_eps.join(extra).loc[order].round(4).reset_index()
    return shown.assign(method=shown["method"].map(method_title)).rename(
        columns={"method": "Method"}
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
        summary: ``engine.probability_metrics.probability_summary``'s rows.
        digits: decimals of means and standard deviations.
    """
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
        summary: ``engine.probability_metrics.probability_summary``'s rows (task, method,
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
    names = ["Dataset", "Soft-labelling", "Seeds"]
    names += [PROBABILITY_LABELS[m] for m in PROBABILITY_METRICS]
    lines = [
        r"\begin{table*}[!htbp]",
        r"\centering",
        r"\tiny",
        rf"\caption{{{PROBABILITY_CAPTION}}}",
        rf"\label{{{label}}}",
        r"\begin{tabular}{llc" + "c" * len(PROBABILITY_METRICS) + "}",
        r"\toprule\toprule",
        " & ".join(_latex_escape(n) for n in names) + r" \\",
        r"\midrule",
    ]
    previous_task = None
    for _, row in summary.iterrows():
        if previous_task is not None and row["task"] != previous_task:
            lines.append(r"\midrule")
        previous_task = row["task"]
        cells = [_latex_escape(str(row["task"])), _latex_escape(method_title(row["method"]))]
        cells.append(str(int(row["n_seeds"])))
        for metric in PROBABILITY_METRICS:
            cells.append(_latex_cell(row[f"{metric}_mean"], row[f"{metric}_std"], digits, ""))
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule\bottomrule", r"\end{tabular}", r"\end{table*}"]
    return "\n".join(lines) + "\n"
