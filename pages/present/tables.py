"""How the comparison pages write their numbers: Table 4 as text, LaTeX and CSV, p-values,
progress sentences; the statistics, relationship and probability exports are in
``pages.present.stat_tables``.

The numbers themselves come from ``engine.analysis.compare``, ``engine.analysis.stats`` and
``engine.analysis.relationship``; this module only turns them into what people read or download. It
imports no streamlit, so every format is unit-tested (tests/app/test_tables.py).

Conventions, shown next to the numbers in the UI:

* **Table 4 cells** (`format_summary`, `summary_latex`): ``"0.571 ± 0.177"`` (mean ± sample
  std over seeds), ``$0.571_{0.177}$`` in LaTeX; best bold, second italic, as ranked by
  `engine.analysis.compare.rank_marks`.
* **p-values**: ``"< 0.001"`` or three significant digits.
* **Method names**: the registry's label (``"cdw_ce"`` reads ``"CDW-CE"``); a label
  ``"beta · study"`` keeps its study; an unknown name reads as given.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
from pandas.io.formats.style import Styler

from engine.analysis.compare import (
    AVERAGE,
    PUBLISHED_SEEDS,
    ROW_AVERAGE,
    ROW_PAPER,
    ROW_PAPER_AVERAGE,
    StudyProgress,
    sort_by_method,
)
from engine.analysis.metrics import (
    LOWER_IS_BETTER,
    METRIC_LABELS,
    PAPER_TABLE_ORDER,
    get_metric,
)
from engine.analysis.table_columns import TABLE4
from engine.analysis.table_vocabulary import TableVocabulary
from engine.methods import hyperparameters, is_registered, method_label, order_methods
from jobs.services.csv_safe import escape_csv_cells
from pages.present.user_text import plain

# Column order of the paper's Table 4 (declared with the metrics, in their registry).
TABLE4_METRICS: tuple[str, ...] = PAPER_TABLE_ORDER


# --------------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------------


def method_title(method: str) -> str:
    """Display name of a method or label from the registry (`engine.methods.method_label`):
    ``"cdw_ce"`` → ``"CDW-CE"``, study suffix kept; a name this checkout does not know (an
    imported result) reads as given."""
    return method_label(str(method))


def unknown_methods(methods: Iterable[str]) -> list[str]:
    """The methods (by name) this checkout's registry does not know, in display order."""
    return [m for m in order_methods(methods) if not is_registered(m)]


def unknown_methods_note(unknown: Sequence[str]) -> str:
    """What a page says about stored methods this checkout does not know."""
    names = ", ".join(f"**{plain(m)}**" for m in unknown)
    one = len(unknown) == 1
    return (
        f"{'Method' if one else 'Methods'} {names} {'is' if one else 'are'} not registered in "
        "this SoftGrade (imported results, or a store written by another version): shown by "
        f"name; this SoftGrade cannot train or grade with {'it' if one else 'them'}."
    )


def param_label(name: str) -> str:
    """A searched hyper-parameter as people read it, from the registry (``"alpha2"`` →
    ``"α₂"``); a name no registered method searches reads as given."""
    known = hyperparameters().get(name)
    return known.label if known else name


def metric_name(metric: str) -> str:
    """A metric as a picker reads it: ``"AMAE (lower is better)"``."""
    better = "lower" if metric in LOWER_IS_BETTER else "higher"
    return f"{METRIC_LABELS[metric]} ({better} is better)"


def metric_header(metric: str) -> str:
    """Column header with the better direction, e.g. ``"AMAE ↓"``."""
    return f"{METRIC_LABELS[metric]} {'↓' if metric in LOWER_IS_BETTER else '↑'}"


def metric_bounds(metric: str) -> tuple[float, float]:
    """The values a test metric can take, from its registry range: errors (MAE, AMAE, MMAE)
    are never negative (their top, J − 1, depends on the task, so it is left open), Cohen's
    kappa (QWK) lies in [−1, 1], the shares (MS, BA) in [0, 1], a set size from 1 grade up
    (its top, J, depends on the task too)."""
    record = get_metric(metric)
    low, high = record.range
    return (low, math.inf) if record.scales_with_grades or record.counts_grades else (low, high)


REFERENCE_MARK = "Bundled reference · "


def study_label(row: Mapping[str, Any], reference_id: str | None = None) -> str:
    """How a study reads in a picker: name, status, seeds and date; the bundled reference
    study (``reference_id``, which the caller reads) is marked as such wherever it is listed."""
    spec = row["spec"] if isinstance(row["spec"], Mapping) else json.loads(row["spec"] or "{}")
    seeds = len(spec.get("seeds", []))
    created = pd.Timestamp(row["created_at"]).strftime("%Y-%m-%d %H:%M")
    mark = REFERENCE_MARK if reference_id and row.get("study_id") == reference_id else ""
    return f"{mark}{row['name']} · {row['status']} · {seeds} seed{'s' * (seeds != 1)} · {created}"


def progress_message(progress: StudyProgress) -> str | None:
    """A plain sentence for a partial study, None for a finished one."""
    if not progress.partial:
        return None
    done = f"{len(progress.finished)} of {len(progress.planned)} seeds finished"
    which = f" ({_seed_list(progress.finished)})" if progress.finished else ""
    name, status = plain(progress.name), progress.status  # a study's name is typed by someone
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

    A missing std (one seed) shows the value alone (``"0.571"``); a missing mean ``"–"``.

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
        summary: from `engine.analysis.compare.summary_table` /
            `engine.analysis.compare.with_published`.
        marks: from `engine.analysis.compare.rank_marks` on the same summary.
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
    sit under a ``\\midrule``; the paper's rows, if present, say "(paper)" and the caption
    says how the protocols differ (:data:`PAPER_PROTOCOL_NOTE`).
    """
    header = [*TABLE4.view_headers("rows"), *(METRIC_LABELS[m] for m in TABLE4_METRICS)]
    if summary["row"].isin([ROW_PAPER, ROW_PAPER_AVERAGE]).any():
        caption = f"{caption} {latex_escape(PAPER_PROTOCOL_NOTE)}"
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
        cells = [latex_escape(str(row["task"])), latex_escape(name)]
        for metric in TABLE4_METRICS:
            mark = marks.at[index, metric] if metric in marks.columns else ""
            cells.append(latex_cell(row[f"{metric}_mean"], row[f"{metric}_std"], digits, mark))
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


def table4_note(*, with_paper: bool, one_seed: bool = False) -> str:
    """The caption under Table 4: what the cells, marks and Average rows mean.

    Args:
        with_paper: the paper's published rows are shown.
        one_seed: some row has a single seed, so its cells show the value alone.
    """
    note = (
        "Mean ± standard deviation over seeds. Per task and metric, **bold** is the best "
        "method and *italics* the second (↑ higher is better, ↓ lower is better). "
        "The Average row is the mean of the methods' means and of their standard "
        "deviations, as in the paper."
    )
    if with_paper:
        note += (
            " Grey rows are the paper's published values (20 seeds on its private "
            "radiographs): a reference point, not a result these runs should reproduce. "
            + PAPER_PROTOCOL_NOTE
        )
    if one_seed:
        note += " " + ONE_SEED_NOTE
    return note


# What differs between the paper's protocol and a SoftGrade study's, said wherever Table 4
# is set beside the published rows (issue 21, "say what was run").
PAPER_PROTOCOL_NOTE = (
    "Protocols differ: the paper's networks start from ImageNet weights and learn real "
    "radiographs; this study's weights init and films are on its study card (the bundled "
    "reference study trains from random weights on the phantom)."
)


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
# Helpers
# --------------------------------------------------------------------------------------------


def mean_std_text(mean: Any, std: Any, digits: int) -> str:
    """``"0.571 ± 0.177"``; the value alone without a std (``"0.571"``: one seed, whose
    spread a caption explains with `ONE_SEED_NOTE`), ``"–"`` without a mean."""
    if is_missing_value(mean):
        return "–"
    if is_missing_value(std):
        return f"{float(mean):.{digits}f}"
    return f"{float(mean):.{digits}f} ± {float(std):.{digits}f}"


# Said wherever a cell shows a mean without its standard deviation.
ONE_SEED_NOTE = (
    "With one seed a cell is that seed's value alone: a standard deviation needs at least 2 seeds."
)


def headed_frame(
    table: TableVocabulary, cells: Mapping[str, Any], view: str = "shown"
) -> pd.DataFrame:
    """A table to read: ``cells`` (key -> one column's values, already written as text or
    rounded) in the order of ``table``'s ``view``, under the headers the engine declares."""
    return pd.DataFrame(table.headed(cells, view))


def is_missing_value(value: Any) -> bool:
    """None, pandas' NA or a NaN; anything that is not a number is not missing."""
    try:
        return value is None or value is pd.NA or math.isnan(float(value))
    except (TypeError, ValueError):
        return False


def latex_cell(mean: Any, std: Any, digits: int, mark: str) -> str:
    """A Table 4 cell in LaTeX: ``$0.571_{0.177}$``, bold when best, italic when second."""
    if is_missing_value(mean):
        return "--"
    body = f"{float(mean):.{digits}f}"
    if not is_missing_value(std):
        body += f"_{{{float(std):.{digits}f}}}"
    if mark == "best":
        body = rf"\mathbf{{{body}}}"
    elif mark == "second":
        body = rf"\mathit{{{body}}}"
    return f"${body}$"


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


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters (and a few symbols) written as LaTeX."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)
