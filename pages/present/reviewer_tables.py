"""How the Statistics tab writes the careful reviewer's analysis (issue 21): the paired
comparisons with the corrected resampled t-test, the primary endpoint, Friedman, the
seed-blocked ANOVA and Table 4's means with their interval; the seeds needed for power are
`pages.present.power_tables`'.

The numbers come from ``engine.analysis.paired`` and ``designs`` (through
``jobs.services.study_analysis``); what each test assumes is in docs/statistics.md. No streamlit, so
every format is unit-tested (tests/app/test_reviewer_tables.py). A cell that cannot be
computed says why ("needs 2 seeds"), never "None" or "± –".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from engine.analysis import designs, paired
from engine.analysis.compare import PAIR_ORDER_RULE
from engine.analysis.metrics import METRIC_LABELS
from engine.analysis.table_columns import ANOVA, ENDPOINT, FRIEDMAN, PAIRED
from engine.analysis.table_vocabulary import TableVocabulary
from pages.present.stat_tables import frame_latex
from pages.present.tables import is_missing_value, method_title, metric_bounds, metric_header

ALPHA = 0.05
NEEDS_TWO_SEEDS = "needs 2 seeds"
NOT_COMPUTED = "n/a"
PRIMARY = "primary"
EXPLORATORY = "exploratory"

#: The Statistics tab's export of the paired table: `python -m jobs stats`'s columns, then the
#: bootstrap interval and the extras, as far as the table has them.
EXPORT_COLUMNS: tuple[str, ...] = PAIRED.view("export")

#: The paired tables' columns as a reader reads them, wherever a paired table is shown (the
#: Statistics tab's, the KL × CPPD page's and the report's): one header per quantity, so a
#: column reads the same on every page (declared in `engine.analysis.table_columns.PAIRED`).
#: ``ci`` and ``boot_ci`` are one ``[low, high]`` cell each, ``p_strip`` the corrected p
#: across :data:`engine.analysis.paired.R_STRIP` on the ρ scale (r is named only in the
#: tooltip, :data:`RHO_HELP`) and ``p_bayes`` the three Bayesian probabilities in one cell.
#: :func:`paired_headers` names the corrected test's assumed ρ and the verdict's ROPE in the
#: headers of one table.
PAIRED_HEADERS: dict[str, str] = PAIRED.headers()


#: The tooltip of the columns read on the ρ scale: r, the other scale, is named here only.
RHO_HELP = (
    "ρ: the between-seed correlation the corrected test assumes (n_test/n of the splits). "
    "The corrected variance uses r = ρ/(1 − ρ) (n_test/n_train): the strip's ρ = 0, 0.09, "
    "0.17 are r = 0, 0.1, 0.2, and the CSV's p_r0, p_r0.1, p_r0.2 and r_break_even are on r."
)


def pairs_heading(metric_label: str) -> str:
    """The pairs table's heading with its sign convention (issue 39: the table read the other
    way round from the primary endpoint above it): one rule for every table on the tab."""
    return (
        f"**{metric_label}: every pair of methods, paired by seed** — {PAIR_ORDER_RULE}, "
        f"so a negative difference means A's {metric_label} is lower"
    )


def paired_headers(table: pd.DataFrame, vocabulary: TableVocabulary = PAIRED) -> dict[str, str]:
    """The headers of ``vocabulary`` (the paired table's, or the primary endpoint's) for one
    table: the corrected interval and p named for the ρ they assume (:func:`rho_label`), the
    verdict for its ROPE (:func:`rope_text`)."""
    corrected = rho_label(table)
    headers = vocabulary.headers()
    for key in vocabulary.view("rho_named"):
        headers[key] = headers[key].replace("corrected", corrected)
    headers["verdict"] = f"{headers['verdict']} ({rope_text(table)})"
    return headers


PAIRED_NOTE = (
    f"Each row is method A − method B over the seeds both ran: {PAIR_ORDER_RULE}. **Corrected** "
    "is the corrected resampled t-test (Nadeau & Bengio 2003): it assumes the seeds' "
    "differences correlate by ρ = n_test/n of the study's own splits, a number one dataset "
    "cannot measure, since the same seed draws the split, the weights and the batch order "
    "(Bengio & Grandvalet 2004). So each corrected p is shown across ρ (0, 0.09, 0.17 and the "
    "assumed ρ) with the **break-even ρ** where it crosses 0.05: a difference significant only "
    "below the assumed ρ rests on that assumption. **Wilcoxon** (exact, ties and zeros "
    "included) answers “is A better on most seeds?”, taking seeds as independent. "
    f"{paired.VERDICT_RULE} Effect size dz = mean / sd of the differences; rank-biserial r = the"
    " matched-pairs rank-biserial correlation. What each test assumes: docs/statistics.md."
)
BOOTSTRAP_NOTE = (
    "The film-sampling bootstrap resamples seeds, then patients within each seed's test set, "
    "as if the seeds were independent draws. It measures how much these test films move the "
    "difference; it ignores the training films the seeds share, so it is narrower than the "
    "corrected interval and is not an interval for the comparison."
)
FRIEDMAN_NOTE = (
    "Friedman ranks the methods within each seed: no normality, but the seeds are taken as "
    "independent blocks, which they are not (they resample the same films), so its p is too "
    "small. Exploratory."
)
BLOCKED_ANOVA_NOTE = designs.SEEDS_INDEPENDENT
OLS_NOTE = (
    "Treats the runs as independent: the seed-to-seed variation is residual and the tasks' "
    "different scales (4 vs 5 grades) are pooled. As in the paper; exploratory."
)
CD_NOTE = (
    "Friedman and Nemenyi ranks over seeds taken as independent blocks: methods joined by a "
    "bar are not told apart, and bars drawn apart rest on that independence. Exploratory."
)
TUKEY_NOTE = (
    "Tukey HSD pools both tasks and takes every run as an independent sample (as in the "
    "paper); its subsets are exploratory."
)


def rho_label(table: pd.DataFrame) -> str:
    """``"corrected, NB ρ = 0.30"``: the corrected test named for the correlation it
    assumes (each task's ρ when they differ at two decimals)."""
    if "rho_assumed" not in table or table.empty:
        return "corrected"
    rhos = sorted({f"{float(v):.2f}" for v in table["rho_assumed"] if not is_missing_value(v)})
    return f"corrected, NB ρ = {' / '.join(rhos)}" if rhos else "corrected"


def p_strip_text(row: Mapping[str, Any]) -> str:
    """The corrected p at ρ = 0, 0.09, 0.17 (r = 0, 0.1, 0.2) and at the assumed ρ:
    ``"< 0.001 · 0.018 · 0.058 · 0.162 (ρ 0.30)"``."""
    strip = [p_text(row.get(paired.r_column(r))) for r in paired.R_STRIP]
    rho = paired.rho_of_ratio(float(row["test_train_ratio"]))
    used = f"{p_text(row.get('p_corrected'))} (ρ {rho:.2f})"
    return " · ".join([*strip, used])


def break_even_text(row: Mapping[str, Any]) -> str:
    """The break-even ρ (where the corrected p crosses 0.05), or why there is none."""
    value = row.get("r_break_even")
    if is_missing_value(row.get("p_corrected")):
        return NOT_COMPUTED
    if value is None or is_missing_value(value):
        return "none: p ≥ 0.05 even at ρ = 0"
    r = float(value)
    if math.isinf(r):
        return "any ρ"
    return f"{paired.rho_of_ratio(r):.2f}"


def bayes_text(a_better: Any, equivalent: Any, b_better: Any) -> str:
    """``"0.88 · 0.06 · 0.06"``: P(A better) · P(equivalent) · P(B better)."""
    values = (a_better, equivalent, b_better)
    if any(is_missing_value(v) for v in values):
        return NOT_COMPUTED
    return " · ".join(f"{float(v):.2f}" for v in values)


def verdict_text(verdict: Any) -> str:
    """The verdict with the method's display name (``"Binomial better"``)."""
    if is_missing_value(verdict):
        return NOT_COMPUTED
    text = str(verdict)
    method = paired.better_method(text)
    if method is None:
        return text
    return f"{method_title(method)} better{text.removeprefix(f'{method} better')}"


def rope_text(table: pd.DataFrame) -> str:
    """``"ROPE ± 0.01"`` of the table's rows (the values, when metrics differ)."""
    if "rope" not in table or table.empty:
        return f"ROPE ± {paired.DEFAULT_ROPE:g}"
    return "ROPE ± " + " / ".join(f"{v:g}" for v in sorted(set(table["rope"].astype(float))))


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
    compares the unadjusted corrected p with the unadjusted Wilcoxon p), or why there is
    none (fewer than 2 seeds)."""
    if int(row["n_seeds"]) < 2 or is_missing_value(row["p_corrected"]):
        return f"Not computed: the corrected test {NEEDS_TWO_SEEDS} that ran both methods."
    shown = dict(row)
    shown["method_a"] = method_title(str(row["method_a"]))
    shown["method_b"] = method_title(str(row["method_b"]))
    if is_missing_value(shown.get("p_wilcoxon")):
        shown["p_wilcoxon"] = 1.0  # no Wilcoxon (all differences 0): not consistent
    return paired.reading(shown, alpha=alpha)


#: The verdict-first table's columns (`engine.analysis.paired.VERDICT_FIRST_COLUMNS` as a
#: reader reads them: the pair in one cell, the difference with its interval in one): what
#: the Statistics tab and the report show first.
COMPACT_KEYS: tuple[str, ...] = PAIRED.view("compact")
#: The tests over seeds taken as independent and the effect sizes, in the order every paired
#: table shows them (the Statistics tab's and the report's).
SEED_TEST_KEYS: tuple[str, ...] = PAIRED.view("seed_tests")
#: Everything else of a paired row, one click (or one table) away from the verdict.
DETAIL_KEYS: tuple[str, ...] = PAIRED.view("details")
#: Every column of the full paired view, in order.
PAIRED_VIEW_KEYS: tuple[str, ...] = PAIRED.view("full")


def pair_text(row: Mapping[str, Any]) -> str:
    """``"Binomial − Nominal"``: a row's pair as the pages name the methods."""
    return f"{method_title(str(row['method_a']))} − {method_title(str(row['method_b']))}"


def mean_ci_text(row: Mapping[str, Any], digits: int = 3) -> str:
    """``"-0.065 [-0.159, 0.029]"``: the mean difference with its corrected interval."""
    mean = number_text(row["mean_diff"], digits)
    interval = interval_text(row["ci_low"], row["ci_high"], digits)
    return mean if interval == NOT_COMPUTED else f"{mean} {interval}"


def _row_cells(row: Mapping[str, Any], digits: int) -> dict[str, str]:
    """Every paired view's cell of one row, keyed as :data:`PAIRED_HEADERS`."""
    return {
        "family": endpoint_label(row["family"]),
        "task": str(row["task"]),
        "pair": pair_text(row),
        "n_seeds": str(int(row["n_seeds"])),
        "mean_diff": number_text(row["mean_diff"], digits),
        "ci": interval_text(row["ci_low"], row["ci_high"], digits),
        "mean_ci": mean_ci_text(row, digits),
        "p_corrected": p_text(row["p_corrected"]),
        "p_strip": p_strip_text(row),
        "r_break_even": break_even_text(row),
        "p_corrected_holm": p_text(row.get("p_corrected_holm")),
        "p_wilcoxon": p_text(row["p_wilcoxon"]),
        "p_wilcoxon_holm": p_text(row["p_wilcoxon_holm"]),
        "d_z": number_text(row["d_z"], 2),
        "rank_biserial": number_text(row["rank_biserial"], 2),
        "p_bayes": bayes_text(
            row.get("p_bayes_a_better"), row.get("p_bayes_equivalent"), row.get("p_bayes_b_better")
        ),
        "verdict": verdict_text(row.get("verdict")),
        "p_tost": p_text(row.get("p_tost")),
        "reading": row_reading(row),
    }


def keyed_view(table: pd.DataFrame, keys: Sequence[str], digits: int = 3) -> pd.DataFrame:
    """The paired table's ``keys`` columns as text under their headers, primary rows first."""
    h = paired_headers(table)
    columns = [h[k] for k in keys]
    if table.empty:
        return pd.DataFrame(columns=columns)
    ordered = table.assign(_primary=table["family"] != paired.PRIMARY_FAMILY).sort_values(
        "_primary", kind="stable"
    )
    rows = [_row_cells(row, digits) for row in ordered.to_dict("records")]
    return pd.DataFrame([[cells[k] for k in keys] for cells in rows], columns=columns)


def paired_view(table: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """The paired table as the Statistics tab exports it: one row per task and pair, every
    cell text, primary rows first, the verdict-first columns (:data:`COMPACT_KEYS`) then the
    corrected test across r, the Wilcoxon, the Bayesian probabilities, TOST and a reading.
    The bootstrap is not here (:func:`bootstrap_view`)."""
    return keyed_view(table, PAIRED_VIEW_KEYS, digits)


def compact_view(table: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """The verdict first: task, pair, seeds, difference with its interval, verdict and the
    Holm-adjusted p (:data:`COMPACT_KEYS`)."""
    return keyed_view(table, COMPACT_KEYS, digits)


def details_view(table: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """The rest of each row (:data:`DETAIL_KEYS`), keyed by task and pair."""
    return keyed_view(table, DETAIL_KEYS, digits)


#: At most this many "better" pairs are named in the result sentence (the rest counted).
NAMED_IN_RESULT = 4


def result_sentence(table: pd.DataFrame, metric_label: str) -> str:
    """The picked metric's result in one sentence: how many pairs have each verdict, the
    first few "better" ones named."""
    if table.empty:
        return f"No pair of methods to compare on {metric_label}."
    rows = table.to_dict("records")
    better = [_better_clause(r) for r in rows if paired.better_method(str(r["verdict"]))]
    verdicts = [str(r["verdict"]) for r in rows]
    equivalent = sum(v.startswith(paired.EQUIVALENT) for v in verdicts)
    unestimable = sum(v.startswith(paired.NOT_ESTIMABLE) for v in verdicts)
    inconclusive = len(rows) - len(better) - equivalent - unestimable
    head = f"Result on {metric_label}: {len(better)} of {len(rows)} pairs name a better method"
    if better:
        more = len(better) - NAMED_IN_RESULT
        head += f" ({'; '.join(better[:NAMED_IN_RESULT])}{f'; {more} more' if more > 0 else ''})"
    tail = f", {equivalent} are equivalent within the ROPE, {inconclusive} inconclusive"
    if unestimable:
        tail += f" and {unestimable} not estimable (too few seeds or no spread)"
    return f"{head}{tail}."


def _better_clause(row: Mapping[str, Any]) -> str:
    """``"KL: Binomial better than Nominal"`` (and its "(exploratory)" label, if any)."""
    text = str(row["verdict"])
    winner = str(paired.better_method(text))
    loser = row["method_b"] if winner == row["method_a"] else row["method_a"]
    label = text.removeprefix(f"{winner} better")
    return f"{row['task']}: {method_title(winner)} better than {method_title(str(loser))}{label}"


def bootstrap_view(table: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """The film-sampling bootstrap interval per pair, apart from the paired table (see
    :data:`BOOTSTRAP_NOTE`); empty when the table has no bootstrap columns."""
    columns = PAIRED.view_headers("bootstrap")
    if table.empty or "boot_ci_low" not in table:
        return pd.DataFrame(columns=columns)
    rows = [
        [
            row["task"],
            f"{method_title(str(row['method_a']))} − {method_title(str(row['method_b']))}",
            number_text(row["mean_diff"], digits),
            interval_text(row["boot_ci_low"], row["boot_ci_high"], digits),
            number_text(row.get("within_seed_sd"), digits),
        ]
        for row in table.to_dict("records")
    ]
    return pd.DataFrame(rows, columns=columns)


#: The primary view's verdict-first columns: task, method, seeds, difference, interval,
#: verdict and Holm p (the rest of :func:`primary_view` is one click away on the page).
PRIMARY_COMPACT = len(ENDPOINT.view("page_compact"))


def primary_view(primary: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """The declared primary endpoint (`paired.primary_endpoint`: soft − nominal AMAE, both
    tasks, one Holm family) as text under `table_columns.ENDPOINT`'s headers: the corrected
    test named for its ρ and shown across r, the Bayesian probabilities and the verdict per
    row."""
    h = paired_headers(primary, ENDPOINT)
    keys = ENDPOINT.view("page")
    rows = []
    for row in primary.to_dict("records"):
        if is_missing_value(row["p_corrected_holm"]):
            test = f"not tested ({NEEDS_TWO_SEEDS})"
        elif row["significant"]:
            test = "lower AMAE" if row["mean_diff"] < 0 else "higher AMAE"
        else:
            test = "not significant at the assumed ρ"
        cells = {
            "task": row["task"],
            "method": method_title(str(row["method"])),
            "n_seeds": str(int(row["n_seeds"])),
            "mean_diff": number_text(row["mean_diff"], digits),
            "ci": interval_text(row["ci_low"], row["ci_high"], digits),
            "verdict": verdict_text(row.get("verdict")),
            "p_corrected_holm": p_text(row["p_corrected_holm"]),
            "test": test,
            "p_corrected": p_text(row["p_corrected"]),
            "p_strip": p_strip_text(row),
            "r_break_even": break_even_text(row),
            "p_wilcoxon": p_text(row["p_wilcoxon"]),
            "p_bayes": bayes_text(*(row.get(k) for k in ENDPOINT.view("bayes"))),
        }
        rows.append([cells[k] for k in keys])
    return pd.DataFrame(rows, columns=[h[k] for k in keys])


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
    """Friedman per task (`designs.friedman_table`) as text under `table_columns.FRIEDMAN`'s
    headers; untestable rows say why."""
    headers = FRIEDMAN.headers()
    rows = []
    for row in friedman.to_dict("records"):
        tested = not is_missing_value(row["p"])
        cells = {
            "task": row["task"],
            "n_methods": str(int(row["n_methods"])),
            "n_blocks": str(int(row["n_blocks"])),
            "chi2": number_text(row["chi2"], 2) if tested else NOT_COMPUTED,
            "p": p_text(row["p"]) if tested else "needs 3 methods and 2 seeds",
            "kendall_w": number_text(row["kendall_w"], 2) if tested else NOT_COMPUTED,
        }
        rows.append({headers[k]: cells[k] for k in FRIEDMAN.view("shown")})
    return pd.DataFrame(rows)


def anova_view(table: pd.DataFrame) -> pd.DataFrame:
    """An ANOVA table (seed-blocked or OLS, with ``partial_eta2``) as text under
    `table_columns.ANOVA`'s headers (a column it does not declare keeps its name)."""
    headers = ANOVA.headers()
    out = pd.DataFrame(index=table.index)
    for column in table.columns:
        values = table[column]
        if column in ANOVA.view("p_values"):
            text = ["" if is_missing_value(v) else p_text(v) for v in values]
        elif column in ANOVA.view("as_text"):
            text = [str(v) for v in values]
        else:
            text = ["" if is_missing_value(v) else f"{float(v):.4g}" for v in values]
        out[headers.get(str(column), str(column))] = text
    return out.reset_index(drop=True)


def clip_interval(metric: str, low: float, high: float) -> tuple[float, float]:
    """``(low, high)`` clipped to the values ``metric`` can take (`tables.metric_bounds`)."""
    bottom, top = metric_bounds(metric)
    return max(low, bottom), min(high, top)


def mean_ci_table(
    intervals: pd.DataFrame, metrics: Sequence[str] | None = None, digits: int = 3
) -> pd.DataFrame:
    """Table 4 as "mean [95 % CI]" per task, method and metric (`paired.mean_intervals`),
    each interval clipped to the values its metric can take (`clipped_sentence` says which);
    a one-seed mean says its interval needs 2 seeds. ``metrics`` defaults to the table's own,
    in order. The Statistics tab, the report and its LaTeX all show this one table."""
    if intervals.empty:
        return pd.DataFrame(columns=["Task", "Method", "Seeds"])
    if metrics is None:
        metrics = list(dict.fromkeys(intervals["metric"]))
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
            interval = interval_text(*clip_interval(metric, r["ci_low"], r["ci_high"]), digits)
            if interval == NOT_COMPUTED:
                interval = NEEDS_TWO_SEEDS
            row[metric_header(metric)] = f"{number_text(r['mean'], digits)} {interval}"
        wide.append(row)
    return pd.DataFrame(wide)


def clipped_sentence(intervals: pd.DataFrame) -> str | None:
    """Which intervals reached beyond their metric's range (and are shown clipped), or None."""
    parts = []
    for r in intervals.itertuples():
        shown = clip_interval(r.metric, r.ci_low, r.ci_high)
        if not is_missing_value(r.ci_low) and shown != (r.ci_low, r.ci_high):
            raw = f"[{r.ci_low:.3f}, {r.ci_high:.3f}]".replace("-", "−")
            label = METRIC_LABELS[str(r.metric)]
            parts.append(f"{r.task} {method_title(str(r.method))} {label}: {raw}")
    if not parts:
        return None
    return (
        f"Shown clipped at the metric's bound ({len(parts)} interval"
        f"{'s' * (len(parts) != 1)}; as computed): {'; '.join(parts)}."
    )


def mean_ci_note(intervals: pd.DataFrame) -> str:
    """Which interval the CI view shows (the table's ``ci_kind``)."""
    kinds = sorted(set(intervals["ci_kind"])) if "ci_kind" in intervals else []
    kind = kinds[0] if kinds else paired.MEAN_CI_KIND
    return (
        f"Each cell: mean over seeds [{kind}]. It counts the seeds' shared films, so it is "
        "wider than the naive mean ± t·sd/√n."
    )


def tests_on_page_line(n_tests: int, n_primary: int, *, where: str = "view") -> str:
    """The page-level count of tests and which family is confirmatory (``where``: "view"
    on the Statistics tab, which has the paper's expander below; "section" in the report)."""
    if n_primary:
        confirmatory = (
            f"only the {n_primary} of the primary endpoint ({paired.PRIMARY_FAMILY}) form the "
            "confirmatory family, Holm-adjusted"
        )
    else:
        confirmatory = "none is confirmatory (this study has no primary endpoint)"
    expander = (
        " (the “as in the paper” expander adds its own, exploratory too)" if where == "view" else ""
    )
    return (
        f"This {where} shows {n_tests} hypothesis tests: {confirmatory}; every other test is "
        f"exploratory, a lead rather than a finding{expander}."
    )


def paired_latex(table: pd.DataFrame, metric_label: str) -> str:
    """The paired comparisons as a booktabs LaTeX table (empty string when there are none)."""
    if table.empty:
        return ""
    cells = {
        "task": table["task"],
        "method_a": [method_title(str(m)) for m in table["method_a"]],
        "method_b": [method_title(str(m)) for m in table["method_b"]],
        "n_seeds": table["n_seeds"].astype(int),
        "mean_diff": table["mean_diff"],
        "ci_low": table["ci_low"],
        "ci_high": table["ci_high"],
        "p_corrected": [p_text(v) for v in table["p_corrected"]],
        "p_wilcoxon": [p_text(v) for v in table["p_wilcoxon"]],
        "p_wilcoxon_holm": [p_text(v) for v in table["p_wilcoxon_holm"]],
        "d_z": table["d_z"],
        "rank_biserial": table["rank_biserial"],
        "r_break_even": [
            paired.rho_of_ratio(float(v)) if not is_missing_value(v) else math.nan
            for v in table["r_break_even"]
        ],
        "verdict": [verdict_text(v) for v in table["verdict"]],
    }
    h = PAIRED.latex_headers()
    shown = pd.DataFrame({h[k]: cells[k] for k in PAIRED.view("latex")})
    caption = (
        f"Paired comparisons ({metric_label}): mean difference over seeds with the corrected "
        f"resampled t interval and p (Nadeau \\& Bengio 2003; {rho_label(table)}), the ρ "
        "at which that p crosses 0.05, exact Wilcoxon signed-rank p, and the Bayesian "
        f"correlated t-test's verdict ({rope_text(table)}, posterior "
        f"{paired.BAYES_THRESHOLD:g} and Holm for better, TOST for equivalent)"
    )
    return frame_latex(shown, caption=caption, label="tab:paired") + "\n"
