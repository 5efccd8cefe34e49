"""The report's Paired comparisons section: the primary endpoint in words and as a table,
every pair of methods on the primary metric with its reading, and the film-sampling
bootstrap.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

import pages.present.report.common as common
from engine.analysis import paired
from engine.analysis.compare import PAIR_ORDER_RULE
from engine.analysis.metrics import METRIC_LABELS
from engine.analysis.table_columns import ENDPOINT, PAIRED
from jobs.services.report_record import ReportInputs, StudyReportInputs
from pages.present import report_html as rh
from pages.present import reviewer_tables, tables, variance_tables
from pages.present.endpoint_text import endpoint_sentence
from pages.present.inference_tables import effect_text, interval_text, p_text
from pages.present.report.common import ALPHA, PRIMARY, per_study
from pages.present.reviewer_tables import PAIRED_HEADERS

#: The paired rows' columns, in order (headers: `reviewer_tables.PAIRED_HEADERS`; both declared
#: in `engine.analysis.table_columns.PAIRED`): the verdict first, so the report prints the
#: first :data:`COMPACT_PAIRED` as one table and the rest, keyed by task and pair, as a
#: second: each fits the page (a 20-column table did not, and print cut it).
PAIRED_SHOWN: tuple[str, ...] = PAIRED.view("report")
COMPACT_PAIRED: int = len(PAIRED.view("report_compact"))
#: The keys that name a row in the second table (task and pair).
ROW_KEYS: tuple[str, ...] = PAIRED.view("pair_row")
#: The primary endpoint's test columns before its Bayesian ones (the rest of its table names
#: the soft method and Nominal in A's and B's place).
ENDPOINT_TESTS: tuple[str, ...] = ENDPOINT.view("tests")
#: The film-sampling bootstrap's own table, apart from the paired rows.
BOOTSTRAP_SHOWN: tuple[str, ...] = PAIRED.view("report_bootstrap")


def paired_section(inputs: ReportInputs) -> list[str]:
    """The primary endpoint with its result in a sentence, then every pair of methods on the
    primary metric with its reading."""
    metric = METRIC_LABELS[PRIMARY]

    def part(study: StudyReportInputs) -> list[str]:
        table = study.paired
        if table.empty:
            return [rh.paragraph("No two methods have selected runs yet.", note=True)]
        endpoint = paired.primary_endpoint(table)
        body = reference_rows(table)
        return [
            rh.paragraph(tests_line(table, endpoint), note=True),
            rh.heading(f"Primary endpoint ({paired.PRIMARY_FAMILY})", 4),
            rh.paragraph(endpoint_sentence(endpoint)),
            *split_tables(endpoint_frame(endpoint), ENDPOINT_COMPACT, 2),
            *reference_parts(table, body, metric),
            rh.heading(
                "Film-sampling bootstrap (seeds taken as independent; not an interval for the "
                "comparison)",
                4,
            ),
            *bootstrap_part(body),
            *variance_parts(study, pairs=pair_keys(body)),
        ]

    notes = (
        f"Differences: {PAIR_ORDER_RULE}; {favours_a_text(PRIMARY, metric)}. "
        f"Corrected CI: {paired.MEAN_CI_KIND}; it assumes the between-seed correlation ρ "
        "shown (ρ assumed), which one dataset cannot measure, so each p is also given at "
        "ρ = 0, 0.09 and 0.17 (the variance's r = ρ/(1 − ρ) = 0, 0.1, 0.2) with the "
        "break-even ρ where it crosses 0.05. Wilcoxon: "
        "exact signed-rank over seeds (ties and zeros included), Holm-adjusted over the task's "
        "pairs; the reading compares it unadjusted with the unadjusted corrected p. "
        '"Consistent over seeds" (Wilcoxon) and "different by the corrected test" are '
        "different claims; each row's reading says which holds. "
        f"{paired.VERDICT_RULE} ROPE ± {paired.DEFAULT_ROPE:g} {metric}. "
        "Effect size dz: the mean difference over its "
        "standard deviation across seeds; rank-biserial r: the matched-pairs rank-biserial "
        f"correlation. Film-sampling bootstrap: {paired.BOOTSTRAP_CI_KIND}. The Compare page's "
        "Statistics tab and its exports give the same comparisons for every other metric."
    )
    return [*per_study(inputs, part), rh.paragraph(notes, note=True)]


def favours_a_text(metric: str, label: str) -> str:
    """Which sign of an A − B difference on ``metric`` (shown as ``label``) favours A."""
    lower = metric in paired.LOWER_BETTER
    return (
        f"{label} is {'lower' if lower else 'higher'} when better, so a "
        f"{'negative' if lower else 'positive'} difference favours A (against Nominal: the "
        "method)"
    )


def reference_method(table: pd.DataFrame) -> str:
    """The method every other is compared with in the report's body: Nominal when the study
    has it (the primary endpoint's baseline), else its first method."""
    methods = list(dict.fromkeys([*table["method_a"], *table["method_b"]]))
    return paired.BASELINE if paired.BASELINE in methods else str(methods[0])


def reference_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of the report's body: each method against the reference method (the other
    pairs go to the appendix table, :func:`appendix_rows`)."""
    if table.empty:
        return table
    reference = reference_method(table)
    return table[(table["method_a"] == reference) | (table["method_b"] == reference)]


def appendix_rows(table: pd.DataFrame) -> pd.DataFrame:
    """Every pair not against the reference method."""
    if table.empty:
        return table
    return table.drop(reference_rows(table).index)


def pair_keys(table: pd.DataFrame) -> set[tuple[str, str, str]]:
    """``(task, method_a, method_b)`` of each row."""
    return {(str(r.task), str(r.method_a), str(r.method_b)) for r in table.itertuples()}


def reference_parts(table: pd.DataFrame, body: pd.DataFrame, metric: str) -> list[str]:
    """Each method against the reference method, verdict first, with a reading per row, and
    a line saying where the other pairs are. With Nominal on the primary metric these are
    the primary endpoint's rows, so only their readings are added."""
    reference = tables.method_title(reference_method(table)) if len(table) else ""
    others = len(table) - len(body)
    where = (
        f"{others_text(others)} in the appendix table at the end of the report (verdict, "
        "difference and Holm p only; every column in Compare → Statistics and "
        "`softgrade stats`)."
        if others
        else ""
    )
    primary_only = set(body["family"]) == {paired.PRIMARY_FAMILY} if len(body) else True
    heading = rh.heading(
        f"Each method against {reference}, {metric}"
        + ("" if primary_only else " (exploratory: Holm within each task)"),
        4,
    )
    tables_part = [] if primary_only else split_tables(paired_frame(body), COMPACT_PAIRED, 3)
    parts = [heading, *tables_part, rh.bullets(paired_readings(body))]
    return [*parts, rh.paragraph(where, note=True)] if where else parts


def others_text(others: int) -> str:
    """``"The other 2 pairs of methods are"`` / ``"The other pair of methods is"``."""
    return (
        "The other pair of methods is"
        if others == 1
        else f"The other {others} pairs of methods are"
    )


#: At most this many columns after a split table's row name: few enough that no cell wraps
#: at the page's width (a wrapped row is two or three lines tall).
REST_COLUMNS = 6


def split_tables(frame: pd.DataFrame, compact: int, keys: int) -> list[str]:
    """A wide frame as tables that each fit the page: its first ``compact`` columns (the
    verdict's), then its first ``keys`` columns (the row's name) with the rest, at most
    :data:`REST_COLUMNS` more each. Past :data:`MAX_READINGS` rows the rest is merged first
    (:func:`merged_columns`) and set smaller, so it is one table of one-line rows."""
    if frame.empty:
        return [rh.table_html(frame)]
    many = len(frame) > MAX_READINGS
    if many:
        frame = merged_columns(frame)
    style = "compact" if many else ""
    rest = list(range(compact, frame.shape[1]))
    chunks = [rest[i : i + REST_COLUMNS] for i in range(0, len(rest), REST_COLUMNS)]
    return [rh.table_html(frame.iloc[:, :compact], css_class=style)] + [
        rh.table_html(frame.iloc[:, [*range(keys), *chunk]], css_class=style) for chunk in chunks
    ]


#: Columns that :func:`merged_columns` shows as one (their cells joined by " · "), by the
#: header of the first; the corrected p and its ρ are the last entry of the p strip.
MERGED: tuple[tuple[str, ...], ...] = (
    (PAIRED_HEADERS["p_wilcoxon"], PAIRED_HEADERS["p_wilcoxon_holm"]),
    (PAIRED_HEADERS["d_z"], PAIRED_HEADERS["rank_biserial"]),
    (
        PAIRED_HEADERS["p_bayes_a_better"],
        PAIRED_HEADERS["p_bayes_equivalent"],
        PAIRED_HEADERS["p_bayes_b_better"],
    ),
    tuple(ENDPOINT.column(k).header for k in ENDPOINT.view("bayes")),
)
IN_THE_STRIP: tuple[str, ...] = (PAIRED_HEADERS["p_corrected"], PAIRED_HEADERS["rho_assumed"])


#: The merged columns' short headers (the section's note says what each test is).
MERGED_HEADERS: dict[str, str] = {
    PAIRED_HEADERS["p_wilcoxon"]: "p Wilcoxon (exact · Holm)",
    PAIRED_HEADERS["d_z"]: "dz · rank-biserial r",
    PAIRED_HEADERS["p_bayes_a_better"]: "P(A better · equivalent · B better)",
    ENDPOINT.column("p_bayes_soft_better").header: "P(method better · equivalent · Nominal better)",
}


def merged_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (the report's paired or endpoint columns, as text) with each group of
    :data:`MERGED` as one column (cells joined by " · ", :data:`MERGED_HEADERS`), the corrected p
    and ρ assumed left to the p strip that repeats them (when it is there): 14 columns of
    detail become 6, each row one line."""
    out = frame.copy()
    if PAIRED_HEADERS["p_strip"] in out:
        out = out.drop(columns=[c for c in IN_THE_STRIP if c in out])
    for group in MERGED:
        if all(c in out for c in group):
            joined = out[list(group)].astype(str).agg(" · ".join, axis=1)
            at = out.columns.get_loc(group[0])
            out = out.drop(columns=list(group))
            out.insert(int(at), MERGED_HEADERS[group[0]], joined)
    return out


def pair_matrices_part(study: StudyReportInputs) -> list[str]:
    """The appendix's pairs: every pair not against the reference method, on the primary
    metric and on the KLD, as one square verdict table per metric and task (no sentence per
    pair), after the note that says how to read them; nothing when the body has them all."""
    out = []
    for label, table in ((METRIC_LABELS[PRIMARY], study.paired), ("KLD", study.kld_paired)):
        rest = appendix_rows(table)
        for task, part in rest.groupby("task", sort=False):
            out += [
                rh.heading(f"{label}, {task}: every other pair (exploratory)", 4),
                rh.table_html(verdict_matrix(part), css_class="matrix"),
            ]
    return [rh.paragraph(appendix_note(), note=True), *out] if out else []


#: The appendix matrix's mark of each verdict, read from the row method's side.
ROW_BETTER, COLUMN_BETTER, SAME, UNDECIDED, NO_VERDICT = "▲", "▼", "≈", "·", "n/e"


def appendix_note() -> str:
    """What the appendix tables hold and how to read them."""
    return (
        "Pairs not against the reference method, one table per metric and task: the cell of "
        "row A and column B is the mean difference A − B over seeds and the verdict, "
        f"{ROW_BETTER} A better, {COLUMN_BETTER} B better, {SAME} equivalent, {UNDECIDED} "
        f"inconclusive, {NO_VERDICT} not estimable (too few seeds or no spread). Every pair "
        "here is exploratory, its “better” Holm-controlled within its task and metric; its "
        "interval and p are in Compare → Statistics and `softgrade stats`. "
        f"{paired.VERDICT_RULE}"
    )


def verdict_matrix(table: pd.DataFrame) -> pd.DataFrame:
    """One task's pairs as a square table, methods in their order: the cell of row A and
    column B reads the mean difference A − B and the verdict's mark (:data:`ROW_BETTER` ...);
    a pair not in ``table`` (the body's) is blank. 14 methods take 14 rows, not 91."""
    methods = list(dict.fromkeys([*table["method_a"], *table["method_b"]]))
    titles = [tables.method_title(m) for m in methods]
    cells = pd.DataFrame("", index=titles, columns=titles)
    for r in table.itertuples():
        said = str(r.verdict)
        winner = paired.better_method(said)
        a, b = tables.method_title(r.method_a), tables.method_title(r.method_b)
        cells.loc[a, b] = f"{r.mean_diff:+.3f} {_mark(said, winner, r.method_a)}"
        cells.loc[b, a] = f"{-r.mean_diff:+.3f} {_mark(said, winner, r.method_b)}"
    return cells.rename_axis("A \\ B").reset_index()


def _mark(said: str, winner: str | None, row_method: str) -> str:
    """The verdict's mark from the row method's side."""
    if winner is not None:
        return ROW_BETTER if winner == row_method else COLUMN_BETTER
    if said.startswith(paired.EQUIVALENT):
        return SAME
    return NO_VERDICT if said.startswith(paired.NOT_ESTIMABLE) else UNDECIDED


def variance_parts(
    study: StudyReportInputs, *, pairs: set[tuple[str, str, str]] | None = None
) -> list[str]:
    """The report's variance-components part of one study on the primary metric (HTML
    pieces): the table (of ``pairs``, ``(task, method_a, method_b)``, when given) and what
    each interval assumes for a factorial study, else the one sentence why there is none."""
    heading = rh.heading(variance_tables.SECTION_TITLE, 4)
    if not study.factorial:
        return [
            heading,
            rh.paragraph(variance_tables.plain(variance_tables.NOT_FACTORIAL_NOTE), note=True),
        ]
    table = study.components
    if pairs is not None:  # the report's body shows each method against the reference only
        keys = zip(table["task"], table["method_a"], table["method_b"], strict=True)
        table = table[[key in pairs for key in keys]]
    first, rest = variance_tables.split_view(variance_tables.components_view(table))
    return [
        heading,
        rh.paragraph(variance_tables.design_line(table)),
        rh.table_html(first),
        rh.table_html(rest),
        rh.paragraph(variance_tables.plain(variance_tables.INTERVALS_NOTE), note=True),
    ]


def tests_line(table: pd.DataFrame, endpoint: pd.DataFrame) -> str:
    """How many tests the section shows (corrected t, Wilcoxon and TOST per pair) and which
    family is confirmatory."""
    return reviewer_tables.tests_on_page_line(3 * len(table), len(endpoint), where="section")


def endpoint_frame(endpoint: pd.DataFrame) -> pd.DataFrame:
    """The primary endpoint's rows (method − nominal) as a reader reads them, under
    `engine.analysis.table_columns.ENDPOINT`'s headers (the paired table's where they share a
    column, `reviewer_tables.PAIRED_HEADERS`)."""
    shown = _paired_cells(endpoint)
    cells = {
        **shown,
        "method": list(endpoint["method"].map(tables.method_title)),
        "mean_diff": [f"{v:.4f}" for v in endpoint["mean_diff"]],
        "significant": ["yes" if v else "no" for v in endpoint["significant"]],
        **{k: _numbers(endpoint, k) for k in ENDPOINT.view("bayes")},
        "p_tost": shown.get("p_tost", [""] * len(endpoint)),
    }
    h = ENDPOINT.headers()
    return pd.DataFrame({h[k]: cells[k] for k in ENDPOINT.view("report") if k in cells})


#: The endpoint frame's verdict-first columns: task, method, seeds, mean, interval, verdict,
#: Holm p and whether it is significant after Holm.
ENDPOINT_COMPACT = len(ENDPOINT.view("report_compact"))


def paired_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The paired rows the report shows (`reviewer_tables.PAIRED_HEADERS`), each interval
    as one ``[low, high]`` cell, the corrected p across r as one strip and methods as the
    pages name them."""
    shown = _paired_cells(table)
    return pd.DataFrame({PAIRED_HEADERS[k]: shown[k] for k in PAIRED_SHOWN if k in shown})


def bootstrap_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The film-sampling bootstrap interval per pair, apart from the paired rows."""
    columns = [PAIRED_HEADERS[k] for k in BOOTSTRAP_SHOWN]
    if "boot_ci_low" not in table:
        return pd.DataFrame(columns=columns)
    shown = _paired_cells(table)
    return pd.DataFrame({PAIRED_HEADERS[k]: shown[k] for k in BOOTSTRAP_SHOWN if k in shown})


def bootstrap_part(body: pd.DataFrame) -> list[str]:
    """The film-sampling bootstrap table of the body's pairs; past
    :data:`common.MANY_ROWS` rows with the tasks side by side (its columns are narrow)."""
    frame = bootstrap_frame(body)
    if len(frame) > common.MANY_ROWS and PAIRED_HEADERS["task"] in frame:
        keys = [PAIRED_HEADERS["method_a"], PAIRED_HEADERS["method_b"]]
        frame = common.tasks_side_by_side(frame, keys)
    return [common.table_of_rows(frame)]


def _paired_cells(table: pd.DataFrame) -> dict[str, list[Any]]:
    """Every paired column the table has, as the text of its cells (key: the column's key in
    `reviewer_tables.PAIRED_HEADERS`)."""
    rows = table.to_dict("records")
    cells: dict[str, list[Any]] = {
        "ci": _intervals(table, "ci_low", "ci_high"),
        "verdict": [reviewer_tables.verdict_text(r.get("verdict")) for r in rows],
    }
    for key in ("task", "n_seeds"):
        if key in table:
            cells[key] = list(table[key].astype(int) if key == "n_seeds" else table[key])
    for key in ("method_a", "method_b"):
        if key in table:
            cells[key] = list(table[key].map(tables.method_title))
    if "mean_diff" in table:
        cells["mean_diff"] = [f"{v:.4f}" for v in table["mean_diff"]]
    if "boot_ci_low" in table:
        cells["boot_ci"] = _intervals(table, "boot_ci_low", "boot_ci_high")
    if "within_seed_sd" in table:
        cells["within_seed_sd"] = [
            "" if tables.is_missing_value(v) else f"{float(v):.4f}" for v in table["within_seed_sd"]
        ]
    if paired.r_column(paired.R_STRIP[0]) in table:
        cells["p_strip"] = [reviewer_tables.p_strip_text(r) for r in rows]
    if "r_break_even" in table:
        cells["r_break_even"] = [reviewer_tables.break_even_text(r) for r in rows]
    for key in PAIRED.view("p_values"):
        if key in table:
            cells[key] = list(table[key].map(p_text))
    for key in ("d_z", "rank_biserial"):
        cells[key] = list(table[key].map(effect_text))
    for key in ("rho_assumed", *PAIRED.view("bayes")):
        if key in table:
            cells[key] = _numbers(table, key)
    return cells


def _numbers(table: pd.DataFrame, column: str) -> list[str]:
    """A probability or correlation column to two decimals; blank when missing."""
    if column not in table:
        return [""] * len(table)
    return [effect_text(v) for v in table[column]]


#: Up to this many body rows each get a reading; past it only the rows with a claim or a
#: verdict to explain do, and the rest share one sentence per task and finding (a 14-method
#: study has 26 body rows: a sentence each made the report thousands of pixels taller).
MAX_READINGS = common.MANY_ROWS

#: What the tests say of a pair's two methods in a grouped reading (the rows not spelled out
#: one by one), keyed by (Wilcoxon separates, corrected test separates), both unadjusted.
FINDINGS: dict[tuple[bool, bool], str] = {
    (True, False): (
        "differ on most seeds (Wilcoxon, seeds taken as independent) but not by the corrected "
        "t-test at its assumed ρ, and the verdict is inconclusive"
    ),
    (False, False): (
        "are separated by neither the corrected test nor the Wilcoxon, and the verdict is "
        "inconclusive: no evidence of a difference, which is not evidence of none"
    ),
    (True, True): (
        "differ on most seeds (Wilcoxon) and by the corrected t-test, both p unadjusted, but "
        "not after Holm over the family (Holm p in the table), so the verdict stays "
        "inconclusive"
    ),
    (False, True): (
        "differ by the corrected t-test (unadjusted), not on most seeds (Wilcoxon) nor after "
        "Holm over the family (Holm p in the table), so the verdict stays inconclusive"
    ),
}


def paired_readings(table: pd.DataFrame) -> list[str]:
    """Each paired row's reading (`engine.analysis.paired.reading`), named by its task; with
    more than :data:`MAX_READINGS` rows, the inconclusive rows that Holm does not separate
    are grouped instead, one sentence per task and finding (:data:`FINDINGS`) naming every
    pair (the table above has each one's numbers)."""
    rows = table.to_dict("records")
    for r in rows:
        r["method_a"], r["method_b"] = (tables.method_title(r[k]) for k in ("method_a", "method_b"))
    if len(rows) <= MAX_READINGS:
        return [f"{r['task']}: {paired.reading(r)}" for r in rows]
    said = [f"{r['task']}: {paired.reading(r)}" for r in rows if _finding(r) is None]
    grouped: dict[tuple[str, tuple[bool, bool]], list[str]] = {}
    for r in rows:
        if (finding := _finding(r)) is not None:
            grouped.setdefault((str(r["task"]), finding), []).append(_pair_text(r))
    return said + [
        f"{task}: in {len(pairs)} pair{'s' * (len(pairs) != 1)} ({'; '.join(pairs)}) the two "
        f"methods {FINDINGS[finding]}."
        for (task, finding), pairs in grouped.items()
    ]


def _finding(row: dict[str, Any]) -> tuple[bool, bool] | None:
    """The row's key in :data:`FINDINGS` (does the Wilcoxon, does the corrected test
    separate it, unadjusted), or None for a row that keeps its own reading: a verdict other
    than inconclusive, or an inconclusive one whose Holm-adjusted corrected p is below α
    (its interval reaches into the ROPE: the reading says so)."""
    if str(row.get("verdict")) != paired.INCONCLUSIVE:
        return None
    holm = row.get("p_corrected_holm")
    holm_p = None if holm is None or tables.is_missing_value(holm) else float(holm)
    if holm_p is not None and holm_p < ALPHA:
        return None
    corrected = float(row.get("p_corrected", 1.0)) < ALPHA
    if corrected and holm_p is None:
        return None  # no Holm p to show why the verdict holds back
    return float(row.get("p_wilcoxon", 1.0)) < ALPHA, corrected


def _pair_text(row: dict[str, Any]) -> str:
    """``"Nominal − Beta"``: a grouped row's pair (its numbers are in the table above)."""
    return f"{row['method_a']} − {row['method_b']}"


def _intervals(table: pd.DataFrame, low: str, high: str) -> list[str]:
    return [interval_text(lo, hi, 4) for lo, hi in zip(table[low], table[high], strict=True)]


def primary_endpoint(table: pd.DataFrame) -> pd.DataFrame:
    """The primary endpoint (`engine.analysis.paired.primary_endpoint`) of a study's paired
    table on the primary metric (its bootstrap columns, if any, are not part of it)."""
    return paired.primary_endpoint(table) if not table.empty else pd.DataFrame()
