"""The study report: one self-contained HTML file of a study's analysis (issue 22).

``python -m pages.present.report STUDY_ID [STUDY_ID ...] -o report.html`` writes it; `python
-m jobs report` starts this module as a child process (jobs/ owns process control and never
imports pages/), and the Compare page's "Report" button calls :func:`build_report`.

Every number comes from `jobs.services.study_analysis` (one call per statistic) or the engine
functions the pages use; every chart is a `pages.present.charts` / `science_charts` builder
rendered to inline SVG (`pages.present.report_html.chart_svg`). The file fetches nothing.
"""

from __future__ import annotations

import importlib.metadata
import math
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine import methods as method_registry
from engine.analysis import budget, compare, explorer, kld_parts, paired, relationship
from engine.analysis import probability_metrics as pm
from engine.analysis.metrics import LOWER_IS_BETTER, METRIC_LABELS
from engine.analysis.ranking import BLOCKING_SENTENCE, CriticalDifference, critical_difference
from engine.analysis.results_file import PREDICTIONS_FORMAT
from engine.config import MAX_BUDGET
from engine.methods import order_methods
from engine.phantom.spec import PhantomSpec
from engine.vocab import SPLIT_RULE, TEST_FRACTION, VAL_FRACTION
from jobs.services import provenance, study_analysis
from jobs.services.export_cards import export_cards, field_label
from pages.present import (
    charts,
    explorer_views,
    imported_text,
    inference_tables,
    reviewer_tables,
    science_charts,
    stat_tables,
    tables,
    variance_tables,
)
from pages.present import protocol_text as protocol_text_of
from pages.present import report_html as rh
from pages.present.inference_tables import effect_text, interval_text, p_text
from pages.present.reviewer_tables import PAIRED_HEADERS
from store import analysis as store_analysis
from store import bundle as store_bundle
from store import datasets as store_datasets
from store import runs as store_runs
from store import studies as store_studies
from store.db import default_store_path

BAD_INPUT = 2
PRIMARY = paired.PRIMARY_METRIC
ALPHA = paired.ALPHA
#: The dataset kind of SoftGrade's synthetic knee phantom (`engine.config.DatasetSpec`).
PHANTOM = "phantom"
#: Hierarchical bootstrap replicates of the report's paired table (the CLI's default).
N_BOOT = study_analysis.DEFAULT_BOOTSTRAP
#: Random draws of the budget-matched check in the caveats (the Robustness tab's default).
N_DRAWS = budget.N_DRAWS
#: Every section of the report, in order: id -> heading (tests find each by its heading).
SECTIONS: dict[str, str] = {
    "studies": "Studies",
    "caveats": "Caveats",
    "table4": "Table 4: test metrics with 95 % confidence intervals",
    "paired": "Paired comparisons",
    "critical-difference": "Critical-difference diagram",
    "distributions": "Distributions over seeds",
    "reliability": "Reliability diagram",
    "kl-cppd": "KL × CPPD table, residuals and Kullback–Leibler divergence (KLD)",
    "curves": "Learning curves of the selected runs",
    "methods": "Methods",
}
#: The paired rows' columns, in order (headers: `reviewer_tables.PAIRED_HEADERS`).
PAIRED_SHOWN: tuple[str, ...] = (
    "task",
    "method_a",
    "method_b",
    "n_seeds",
    "mean_diff",
    "ci",
    "p_corrected",
    "rho_assumed",
    "p_strip",
    "r_break_even",
    "p_corrected_holm",
    "p_wilcoxon",
    "p_wilcoxon_holm",
    "d_z",
    "rank_biserial",
    "p_bayes_a_better",
    "p_bayes_equivalent",
    "p_bayes_b_better",
    "p_tost",
    "verdict",
)
#: The primary endpoint's test columns before its Bayesian ones (the rest of its table names
#: the soft method and Nominal in A's and B's place).
ENDPOINT_TESTS: tuple[str, ...] = PAIRED_SHOWN[
    PAIRED_SHOWN.index("ci") : PAIRED_SHOWN.index("rank_biserial") + 1
]
#: The film-sampling bootstrap's own table, apart from the paired rows.
BOOTSTRAP_SHOWN: tuple[str, ...] = (
    "task",
    "method_a",
    "method_b",
    "mean_diff",
    "boot_ci",
    "within_seed_sd",
)
#: Card fields that say what trained a study (its own worker's, or a bundle's).
TRAINING_CARD_FIELDS = (
    "code",
    "python",
    "torch",
    "CUDA",
    "cuDNN",
    "dlordinal",
    "bundle python",
    "bundle packages",
    "bundle cuda",
    "bundle gpus",
)
ANALYSIS_PACKAGES = ("numpy", "scipy", "pandas", "scikit-posthocs", "altair")


class ReportInputError(ValueError):
    """Input the report cannot be written from (its message is the one line shown)."""


def build_report(study_ids: Sequence[str], *, path: Path | str | None = None) -> str:
    """The report of ``study_ids`` as one HTML document.

    Raises:
        ReportInputError: no study named, or a study the store does not hold.
    """
    store = Path(path) if path is not None else default_store_path()
    check_studies(study_ids, store)
    sections = [
        rh.section(key, SECTIONS[key], build(study_ids, store)) for key, build in _BUILDERS.items()
    ]
    names = ", ".join(store_studies.get_study(s, path=store).name for s in study_ids)
    stamp = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    return rh.page(f"SoftGrade report: {names}", f"Written {stamp} from {store.name}.", sections)


def file_name(study_ids: Sequence[str]) -> str:
    """The report's download name: ``softgrade_report_<first study>[_and_N_more].html``."""
    more = f"_and_{len(study_ids) - 1}_more" if len(study_ids) > 1 else ""
    return f"softgrade_report_{study_ids[0] if study_ids else 'none'}{more}.html"


def check_studies(study_ids: Sequence[str], store: Path) -> None:
    """Raise `ReportInputError` unless every study is in the store."""
    if not study_ids:
        raise ReportInputError("name at least one study (`python -m jobs stats --list`)")
    if not store.exists():
        raise ReportInputError(f"no store at {store}")
    for study_id in study_ids:
        if not store_analysis.study_exists(study_id, path=store):
            raise ReportInputError(
                f"no study {study_id!r} in {store}; `python -m jobs stats --list` lists them"
            )


def _per_study(
    study_ids: Sequence[str], store: Path, part: Callable[[str, Path], list[str]]
) -> list[str]:
    """``part`` of each study, under the study's name when there are several."""
    out: list[str] = []
    for study_id in study_ids:
        if len(study_ids) > 1:
            name = store_studies.get_study(study_id, path=store).name
            out.append(rh.heading(f"{name} ({study_id})"))  # names need not be unique
        out.extend(part(study_id, store))
    return out


# -- sections ------------------------------------------------------------------------------


def studies_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """Each study's card (where and how it ran) with what its run counts mean, and its
    notes."""
    out: list[str] = []
    for study_id, card in zip(study_ids, export_cards(str(store), study_ids), strict=True):
        notes = store_studies.get_study(study_id, path=store).notes
        imported = store_bundle.imported_card(study_id, path=store)
        runs = store_runs.list_runs([study_id], path=store)
        shown = study_card(dict(card), imported is not None, runs, dataset_of(study_id, store))
        out += [rh.heading(card.get("study", study_id)), rh.card_html(shown)]
        out += [rh.paragraph(text, note=True) for text in run_count_notes(imported, runs)]
        out.append(rh.paragraph(f"Notes: {notes}" if notes else "No notes.", note=not notes))
    return out


def study_card(
    card: dict[str, str],
    imported: bool,
    runs: pd.DataFrame,
    dataset: tuple[str | None, Mapping[str, Any]] = (None, {}),
) -> dict[str, str]:
    """The card as the report shows it: the dataset in words (``dataset``: its kind and
    parameters), and an imported study's ``status`` as its import into this store (the job
    that trained it is the bundle's)."""
    kind, params = dataset
    if "dataset" in card:
        card["dataset"] = dataset_card_text(card["dataset"], kind, params)
    if imported and "status" in card:
        seeds = runs["seed"].nunique() if len(runs) else 0
        status = f"imported from a bundle: {len(runs)} runs of {seeds} seeds stored"
        card = {("status in this store" if k == "status" else k): v for k, v in card.items()}
        card["status in this store"] = status
    return card


#: A dataset parameter as the card names it.
DATASET_PARAM_LABELS: dict[str, str] = {
    "n_images": "films",
    "n_joint": "films with both grades",
    "seed": "generator seed",
    "annotation_noise": "annotation noise",
    "labels_csv": "labels file",
    "path": "folder",
}


def dataset_card_text(text: str, kind: str | None, params: Mapping[str, Any]) -> str:
    """The card's dataset line in words: ``"ds-1: synthetic knee phantom (films 2170, ...)"``
    rather than its key (``phantom(n_images=2170,...)``); the line as is when unknown."""
    if kind is None:
        return text
    dataset_id = text.split(" ", 1)[0]
    what = "synthetic knee phantom" if kind == PHANTOM else f"{kind} of imported films"
    values = ", ".join(
        f"{DATASET_PARAM_LABELS.get(k, field_label(k))} {v}" for k, v in sorted(params.items())
    )
    return f"{dataset_id}: {what}" + (f" ({values})" if values else "")


def run_count_notes(imported: Mapping[str, Any] | None, runs: pd.DataFrame) -> list[str]:
    """What the card's run counts mean for a study imported from a bundle, part by part for
    one run in parts (each part's own job, and the runs the bundle kept of it)."""
    if imported is None:
        return []
    text = (
        f"This study was trained elsewhere and imported from a bundle; the “bundle …” rows "
        f"are the card it came with. This store holds its {len(runs)} runs."
    )
    stored, jobs = imported.get("runs_stored"), imported.get("job")
    if not isinstance(stored, Mapping):
        return [text]
    parts = []
    for part, count in stored.items():
        seeds = _part_seeds(str(part))
        kept = int(runs["seed"].isin(seeds).sum()) if seeds else None
        job = jobs.get(part, {}) if isinstance(jobs, Mapping) else {}
        status = job.get("status") if isinstance(job, Mapping) else None
        ended = (
            f"its job ended {status} after storing {count} runs"
            if status
            else (f"its job stored {count} runs")
        )
        if kept is not None:
            ended += f"; the bundle keeps the {kept} runs of {part}"
            if isinstance(count, int) and count > kept:
                ended += (
                    f" (the other {count - kept} were runs of seeds outside {part}, which the "
                    "bundle takes from the part that completed them)"
                )
        parts.append(f"{part}: {ended}")
    text += (
        f" It was run in {len(stored)} parts, merged into one bundle; the “bundle job” and "
        f"“bundle runs stored by its job” rows describe each part's own job: {'; '.join(parts)}."
    )
    return [text]


def _part_seeds(part: str) -> list[int]:
    """The seeds a bundle part's key names: ``"seeds 0-12"`` -> 0..12 (either dash)."""
    found = re.fullmatch(r"seeds? (\d+)(?:[-–](\d+))?", part.strip())
    if not found:
        return []
    low = int(found.group(1))
    return list(range(low, int(found.group(2) or low) + 1))


def caveats_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """What limits every number below: the data, the search budgets, the labels' noise, the
    robustness checks, and which comparisons are confirmatory."""
    return _per_study(study_ids, store, lambda s, st: [rh.bullets(caveats(s, st))])


def caveats(study_id: str, store: Path) -> list[str]:
    """The study's caveats, one plain paragraph each."""
    kind, params = dataset_of(study_id, store)
    spec = store_studies.get_study(study_id, path=store).spec
    if isinstance(spec.get("imported_results"), Mapping):
        return imported_caveats(study_id, spec["imported_results"], store)
    out = [data_caveat(kind, params)]
    runs = store_runs.list_runs([study_id], path=store)
    out.append(budget_caveat(study_id, store, runs))
    out.append(noise_caveat(kind, params))
    out.append(truth_caveat(study_id, store))
    out.append(confirmatory_caveat(primary_endpoint(study_id, store)))
    return out


def imported_caveats(study_id: str, source: Mapping[str, Any], store: Path) -> list[str]:
    """The caveats of results imported from another tool: no provenance, which intervals the
    file's columns allow, and which comparisons are confirmatory."""
    out = [
        f"{str(source.get('provenance', 'imported')).capitalize()}: these results were "
        f"trained by another tool and imported from {source.get('file', 'a file')} "
        f"({source.get('format', 'results')}). SoftGrade cannot say what data, splits, "
        "search budgets or selection rule produced them; every number below is computed from "
        "the file's values as given."
    ]
    if source.get("format") != PREDICTIONS_FORMAT:
        out.append(
            "Per-seed metrics only: the film-sampling bootstrap, the reliability diagram, the "
            "probability metrics and the KL × CPPD table need per-film predictions, which "
            "the file did not give."
        )
    unsized = study_analysis.unsized_tasks(study_id, path=store)
    if unsized:
        out.append(f"No split sizes for {', '.join(unsized)}: {study_analysis.UNSIZED_NOTE}.")
    out.append(confirmatory_caveat(primary_endpoint(study_id, store)))
    return out


def data_caveat(kind: str | None, params: Mapping[str, Any]) -> str:
    """Synthetic or real films, and what that allows a reader to conclude."""
    if kind == PHANTOM:
        n = params.get("n_images", PhantomSpec().n_images)
        return (
            f"Synthetic data: all {n:,} films are synthetic, drawn by SoftGrade's knee phantom "
            "(bone outlines, joint-space narrowing, osteophytes and calcifications rendered "
            "from each film's grades), not radiographs of patients. The results compare the "
            "methods on the phantom; they are no evidence of how the methods grade real knees."
        )
    if kind is None:
        return "Data: the store does not record what kind of films this study used."
    return f"Data: real films imported from a {kind} dataset."


def budget_caveat(study_id: str, store: Path, runs: pd.DataFrame) -> str:
    """The methods' unequal search budgets, and what the budget-matched check found."""
    searched = runs[runs["val_amae"].notna()] if "val_amae" in runs else runs
    configs = searched.groupby("method")["config_index"].nunique()
    if configs.empty:
        return "Search budgets: no run is stored yet."
    counts = ", ".join(
        f"{tables.method_title(m)} {int(configs[m])}" for m in order_methods(configs.index)
    )
    text = (
        f"Unequal search budgets: each method kept the best of its own search ({counts} "
        "configurations per task and seed; the methods' grids differ in size). The best of "
        "more candidates looks better on the validation films by chance alone, so part of a "
        "method's lead may come from its larger search."
    )
    lacking = store_analysis.runs_lacking_test_predictions(study_id, path=store)
    if configs.nunique() == 1:
        return text.replace("Unequal search budgets", "Search budgets") + " Here they are equal."
    if lacking:
        return (
            f"{text} The budget-matched check (every method re-selected among one "
            "configuration per learning rate of Nominal's grid, Compare → Robustness) cannot "
            "run here: "
            f"{inference_tables.budget_unavailable_sentence(lacking, len(searched))}"
        )
    try:
        matched = study_analysis.budget_matched(study_id, n_draws=N_DRAWS, path=store)
    except budget.BudgetUnavailable as exc:
        return f"{text} The budget-matched check cannot run here: {exc}."
    found = inference_tables.budget_draws_sentence(matched.draws, matched.budget, grid=matched.grid)
    return (
        f"{text} Re-selecting every method among one configuration per learning rate of "
        f"Nominal's grid (Compare → Robustness): {found}"
    )


def noise_caveat(kind: str | None, params: Mapping[str, Any]) -> str:
    """The labels' annotation noise: the phantom's parameter, or unknown for real films."""
    if kind == PHANTOM:
        return (
            f"Annotation noise: the phantom moved each recorded grade to an adjacent grade with "
            f"probability {annotation_noise(params):g}, keeping the true grade beside it. Every "
            "metric in this report is scored against the recorded (noisy) grades, as it would "
            "be against real annotations."
        )
    return (
        "Annotation noise: the grades are the annotators'; their error rate is not known to "
        "SoftGrade, and every metric is scored against them."
    )


def truth_caveat(study_id: str, store: Path) -> str:
    """What scoring against the phantom's true grades found (the Robustness tab)."""
    table = study_analysis.against_truth(study_id, path=store)
    if table.empty:
        return f"Robustness against the true grade: {inference_tables.NO_TRUTH_REASON}"
    rows = table[(table["metric"] == PRIMARY) & table["shift_vs_nominal"].notna()]
    if rows.empty:
        return "Robustness against the true grade: no soft method to compare with Nominal."
    lower = PRIMARY in LOWER_IS_BETTER
    gains = (rows["shift_vs_nominal"] < 0) if lower else (rows["shift_vs_nominal"] > 0)
    significant = rows["p_corrected"] < ALPHA
    n, k = len(rows), int((gains & significant).sum())
    diffs = rows["shift_vs_nominal"]
    return (
        "Robustness against the true grade (Compare → Robustness): scored against the "
        f"phantom's noiseless grades instead of the recorded ones, a soft method gains "
        f"significantly more {METRIC_LABELS[PRIMARY]} than Nominal in {_count_of(k, n)} "
        f"comparisons (task × soft method; corrected test, α = {ALPHA:g}, not adjusted for "
        f"multiplicity): the differences of shifts run from {diffs.min():+.3f} to "
        f"{diffs.max():+.3f}, smallest corrected p = {p_text(rows['p_corrected'].min())}. "
        + (
            "No sign that soft labels absorb the annotation noise better."
            if k == 0
            else "See the Robustness tab for which."
        )
    )


def confirmatory_caveat(endpoint: pd.DataFrame) -> str:
    """Only the primary family is confirmatory."""
    n = len(endpoint)
    return (
        f"Only the primary endpoint is confirmatory: {paired.PRIMARY_FAMILY.split(': ', 1)[-1]}"
        f" ({n} comparisons, one Holm family on the corrected test; {endpoint_result(endpoint)})"
        ". Every other comparison in this report (the other pairs of methods, the other "
        "metrics, the critical-difference ranks, the KL × CPPD divergences and these robustness "
        "checks) is exploratory: a lead for a new study, not a finding."
        if n
        else "Only the primary endpoint would be confirmatory; this study has none to test yet."
    )


def table4_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """Table 4: mean and corrected 95 % interval per task, method and metric."""

    def part(study_id: str, store: Path) -> list[str]:
        intervals = study_analysis.mean_intervals(study_id, path=store)
        out = [rh.table_html(table4_frame(intervals))]
        if clipped := clipped_sentence(intervals):
            out.append(rh.paragraph(clipped, note=True))
        return out

    note = (
        f"{paired.MEAN_CI_KIND}. The interval is symmetric about the mean, so near a bound it "
        "can reach values the metric cannot take; such an end is shown at the bound (MS, BA "
        "and the errors cannot be below 0, QWK not below −1, none of MS, BA and QWK above 1)."
    )
    return [*_per_study(study_ids, store, part), rh.paragraph(note, note=True)]


def clip_interval(metric: str, low: float, high: float) -> tuple[float, float]:
    """``(low, high)`` clipped to the values ``metric`` can take (`tables.metric_bounds`)."""
    bottom, top = tables.metric_bounds(metric)
    return max(low, bottom), min(high, top)


def clipped_sentence(intervals: pd.DataFrame) -> str | None:
    """Which intervals reached beyond their metric's range (and are shown clipped), or None."""
    parts = []
    for r in intervals.itertuples():
        shown = clip_interval(r.metric, r.ci_low, r.ci_high)
        if shown != (r.ci_low, r.ci_high):
            raw = f"[{r.ci_low:.3f}, {r.ci_high:.3f}]".replace("-", "−")
            parts.append(
                f"{r.task} {tables.method_title(r.method)} {METRIC_LABELS[r.metric]}: {raw}"
            )
    if not parts:
        return None
    return (
        f"Shown clipped at the metric's bound ({len(parts)} interval"
        f"{'s' * (len(parts) != 1)}; as computed): {'; '.join(parts)}."
    )


def table4_frame(intervals: pd.DataFrame) -> pd.DataFrame:
    """``mean [low, high]`` per task and method (rows) and metric (columns), each interval
    clipped to the values its metric can take."""
    if intervals.empty:
        return intervals
    cells = []
    for r in intervals.itertuples():
        low, high = clip_interval(r.metric, r.ci_low, r.ci_high)
        cells.append(f"{r.mean:.3f} [{low:.3f}, {high:.3f}]")
    cells = intervals.assign(
        cell=cells,
        header=intervals["metric"].map(tables.metric_header),
        Method=intervals["method"].map(tables.method_title),
    )
    wide = cells.pivot_table(
        index=["task", "Method", "n_seeds"],
        columns="header",
        values="cell",
        aggfunc="first",
        sort=False,
    )
    wide.columns.name = None
    headers = [tables.metric_header(m) for m in dict.fromkeys(intervals["metric"])]
    return wide[headers].reset_index().rename(columns={"task": "Task", "n_seeds": "Seeds"})


def paired_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """The primary endpoint with its result in a sentence, then every pair of methods on the
    primary metric with its reading."""
    metric = METRIC_LABELS[PRIMARY]

    def part(study_id: str, store: Path) -> list[str]:
        table = study_analysis.paired_table(study_id, metrics=(PRIMARY,), n_boot=N_BOOT, path=store)
        if table.empty:
            return [rh.paragraph("No two methods have selected runs yet.", note=True)]
        endpoint = paired.primary_endpoint(table)
        return [
            rh.paragraph(tests_line(table, endpoint), note=True),
            rh.heading(f"Primary endpoint ({paired.PRIMARY_FAMILY})", 4),
            rh.paragraph(endpoint_sentence(endpoint)),
            rh.table_html(endpoint_frame(endpoint)),
            rh.heading(f"Every pair of methods, {metric} (exploratory: Holm within each task)", 4),
            rh.table_html(paired_frame(table)),
            rh.bullets(paired_readings(table)),
            rh.heading(
                "Film-sampling bootstrap (seeds taken as independent; not an interval for the "
                "comparison)",
                4,
            ),
            rh.table_html(bootstrap_frame(table)),
            *variance_tables.report_parts(study_id, store, PRIMARY),
        ]

    notes = (
        f"Corrected CI: {paired.MEAN_CI_KIND}; it assumes the between-seed correlation ρ "
        "shown (ρ assumed), which one dataset cannot measure, so each p is also given at "
        "r = ρ/(1 − ρ) = 0, 0.1 and 0.2 with the break-even r where it crosses 0.05. Wilcoxon: "
        "exact signed-rank over seeds (ties and zeros included), Holm-adjusted over the task's "
        "pairs; the reading compares it unadjusted with the unadjusted corrected p. "
        '"Consistent over seeds" (Wilcoxon) and "different by the corrected test" are '
        "different claims; each row's reading says which holds. Verdict: the Bayesian "
        "correlated t-test (Corani & Benavoli 2015) on the corrected variance, "
        f"ROPE ± {paired.DEFAULT_ROPE:g} {metric}: better or equivalent at posterior "
        f"probability {paired.BAYES_THRESHOLD:g}, else inconclusive; TOST p is the "
        "equivalence test within the ROPE. Effect size dz: the mean difference over its "
        "standard deviation across seeds; rank-biserial r: the matched-pairs rank-biserial "
        f"correlation. Film-sampling bootstrap: {paired.BOOTSTRAP_CI_KIND}. The Compare page's "
        "Statistics tab and its exports give the same comparisons for every other metric."
    )
    return [*_per_study(study_ids, store, part), rh.paragraph(notes, note=True)]


def _count_of(k: int, n: int) -> str:
    """``"none of the 8"``, ``"all 8"``, ``"3 of the 8"``."""
    if k == 0:
        return f"none of the {n}"
    return f"all {n}" if k == n else f"{k} of the {n}"


def endpoint_result(endpoint: pd.DataFrame) -> str:
    """The primary endpoint's result in one clause: how many comparisons are significant
    after Holm, e.g. "none of the 8 primary comparisons is significant after Holm's
    correction (smallest Holm-adjusted p = 1)"."""
    n, k = len(endpoint), int(endpoint["significant"].sum())
    if endpoint["p_corrected_holm"].isna().all():  # imported results without split sizes
        return (
            f"the {n} primary comparison{'s' * (n != 1)} cannot be tested: the corrected "
            "resampled t-test needs the split sizes (n_train, n_test) these results lack"
        )
    verb = "is" if k in (0, 1) else "are"
    smallest = p_text(endpoint["p_corrected_holm"].min())
    return (
        f"{_count_of(k, n)} primary comparison{'s' * (n != 1)} {verb} significant after "
        f"Holm's correction (corrected resampled t-test, α = {ALPHA:g}; smallest "
        f"Holm-adjusted p = {smallest})"
    )


def endpoint_sentence(endpoint: pd.DataFrame) -> str:
    """The primary endpoint's result in plain words, with the numbers."""
    if endpoint.empty:
        return "The primary endpoint needs selected runs of Nominal and a soft method."
    metric = METRIC_LABELS[PRIMARY]
    lower = PRIMARY in LOWER_IS_BETTER
    text = f"Result: {endpoint_result(endpoint)}."
    significant = endpoint[endpoint["significant"]]
    if len(significant):
        named = "; ".join(
            f"{r.task} {tables.method_title(r.method)} {r.mean_diff:+.3f} "
            f"{interval_text(r.ci_low, r.ci_high)}, Holm p = {p_text(r.p_corrected_holm)}"
            for r in significant.itertuples()
        )
        text += f" Significant: {named}."
    n = len(endpoint)
    better = endpoint["mean_diff"] < 0 if lower else endpoint["mean_diff"] > 0
    zero = int(((endpoint["ci_low"] <= 0) & (endpoint["ci_high"] >= 0)).sum())
    word = "lower" if lower else "higher"
    low, high = endpoint["mean_diff"].abs().min(), endpoint["mean_diff"].abs().max()
    text += (
        f" In {_count_of(int(better.sum()), n)} comparisons the soft method's mean {metric} is "
        f"{word} than Nominal's (by {low:.3f} to {high:.3f} over the comparisons)"
    )
    if endpoint["ci_low"].isna().all():  # no split sizes: no corrected interval
        return text + "; the Wilcoxon below says how consistently, over seeds (exploratory)."
    text += f"; {_count_of(zero, n)} corrected 95 % intervals include 0."
    if significant.empty:
        text += (
            f" These seeds therefore do not show, at the corrected test's assumed ρ, that any "
            f"soft label changes {metric} (each row's verdict says whether the difference is "
            "inconclusive or within the ROPE); a difference that is consistent over seeds "
            "(Wilcoxon, below) is a weaker, exploratory claim."
        )
    return text


def tests_line(table: pd.DataFrame, endpoint: pd.DataFrame) -> str:
    """How many tests the section shows (corrected t, Wilcoxon and TOST per pair) and which
    family is confirmatory."""
    return reviewer_tables.tests_on_page_line(3 * len(table), len(endpoint), where="section")


def endpoint_frame(endpoint: pd.DataFrame) -> pd.DataFrame:
    """The primary endpoint's rows (soft − nominal) as a reader reads them: the paired
    columns (`reviewer_tables.PAIRED_HEADERS`) with the soft method in A's place and
    Nominal in B's."""
    h = PAIRED_HEADERS
    shown = _paired_cells(endpoint)
    return pd.DataFrame(
        {
            h["task"]: endpoint["task"],
            "Soft method": endpoint["method"].map(tables.method_title),
            h["n_seeds"]: endpoint["n_seeds"].astype(int),
            "Mean soft − nominal": [f"{v:.4f}" for v in endpoint["mean_diff"]],
            **{h[k]: shown[k] for k in ENDPOINT_TESTS if k in shown},
            "P(soft better)": _numbers(endpoint, "p_bayes_soft_better"),
            h["p_bayes_equivalent"]: _numbers(endpoint, "p_bayes_equivalent"),
            "P(Nominal better)": _numbers(endpoint, "p_bayes_baseline_better"),
            h["p_tost"]: shown.get("p_tost", [""] * len(endpoint)),
            h["verdict"]: shown["verdict"],
            "Significant after Holm": ["yes" if v else "no" for v in endpoint["significant"]],
        }
    )


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
    for key in ("p_corrected", "p_corrected_holm", "p_wilcoxon", "p_wilcoxon_holm", "p_tost"):
        if key in table:
            cells[key] = list(table[key].map(p_text))
    for key in ("d_z", "rank_biserial"):
        cells[key] = list(table[key].map(effect_text))
    for key in ("rho_assumed", "p_bayes_a_better", "p_bayes_equivalent", "p_bayes_b_better"):
        if key in table:
            cells[key] = _numbers(table, key)
    return cells


def _numbers(table: pd.DataFrame, column: str) -> list[str]:
    """A probability or correlation column to two decimals; blank when missing."""
    if column not in table:
        return [""] * len(table)
    return [effect_text(v) for v in table[column]]


def paired_readings(table: pd.DataFrame) -> list[str]:
    """Each paired row's reading (`engine.analysis.paired.reading`), named by its task."""
    rows = table.to_dict("records")
    for r in rows:
        r["method_a"], r["method_b"] = (tables.method_title(r[k]) for k in ("method_a", "method_b"))
    return [f"{r['task']}: {paired.reading(r)}" for r in rows]


def _intervals(table: pd.DataFrame, low: str, high: str) -> list[str]:
    return [interval_text(lo, hi, 4) for lo, hi in zip(table[low], table[high], strict=True)]


def critical_difference_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """Mean ranks of the primary metric over seeds per task, with the Nemenyi critical
    difference, read as exploratory beside the primary endpoint."""

    def part(study_id: str, store: Path) -> list[str]:
        per_run = study_analysis.per_run(study_id, path=store)
        endpoint = primary_endpoint(study_id, store)
        out = []
        for task in compare.task_order(per_run["task"]):
            scores = compare.score_frame(per_run, PRIMARY, [task])
            cd = critical_difference(scores, lower_is_better=PRIMARY in LOWER_IS_BETTER)
            out += [rh.heading(f"{METRIC_LABELS[PRIMARY]} on {task}", 4)]
            out += [rh.paragraph(text) for text in ranks_reading(cd, endpoint)]
            if math.isfinite(cd.cd):
                diagram = science_charts.critical_difference_diagram(cd.table, cd.groups, cd.cd)
                out.append(rh.chart_svg(diagram))
        return out

    return [*_per_study(study_ids, store, part), rh.paragraph(BLOCKING_SENTENCE, note=True)]


def primary_endpoint(study_id: str, store: Path) -> pd.DataFrame:
    """The study's primary endpoint (`engine.analysis.paired.primary_endpoint`; no bootstrap:
    its interval is not part of the endpoint)."""
    table = study_analysis.paired_table(study_id, metrics=(PRIMARY,), n_boot=0, path=store)
    return paired.primary_endpoint(table) if not table.empty else pd.DataFrame()


def ranks_reading(cd: CriticalDifference, endpoint: pd.DataFrame) -> list[str]:
    """The critical-difference result in words: exploratory, what it assumes (seeds as
    independent blocks), and how it stands to the primary endpoint."""
    if not math.isfinite(cd.p):
        return [_plain(cd.reading)]
    metric = METRIC_LABELS[PRIMARY]
    best = cd.table.iloc[0]
    test = f"Friedman χ² = {cd.statistic:.3g}, p = {p_text(cd.p)}"
    lead = (
        f"Exploratory. Within each of the {cd.n_blocks} seeds the methods are ranked by "
        f"{metric} (1 = best), and the ranks are compared over seeds; best mean rank: "
        f"{tables.method_title(best['method'])} ({best['mean_rank']:.2f})."
    )
    if cd.p >= cd.alpha:
        lead += f" The mean ranks do not differ ({test})."
    else:
        groups = [
            ", ".join(tables.method_title(m) for m in members) for members in cd.groups["methods"]
        ]
        lead += f" The mean ranks are not all equal ({test})."
        if groups:
            lead += (
                f" Methods within one of these groups cannot be told apart (Nemenyi, α = "
                f"{cd.alpha:g}, critical difference {cd.cd:.2f} mean ranks): "
                f"{'; '.join(groups)}. A method outside a group ranked worse (or better) "
                "than its members within more of these seeds than chance would give."
            )
    caution = (
        "Both tests treat the seeds as independent blocks, yet every seed resamples the same "
        "films: like the Wilcoxon, they describe how consistently a method ranks over these "
        "seeds, not whether it would be better for new patients."
    )
    if not endpoint.empty:
        caution += (
            " That question is the primary endpoint's (corrected test, at its assumed ρ), where "
            f"{endpoint_result(endpoint)}."
        )
        if cd.p < cd.alpha and not endpoint["significant"].all():
            caution += (
                " The two are consistent: a method can rank better on most seeds by margins "
                "too small, against the seed-to-seed variation, to carry to new patients."
            )
    return [lead, caution]


#: Width of the violins' plot area in the report (its page is 1100 px, axis title aside).
VIOLINS_PX = 940


def distributions_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """Fig. 5: AMAE over seeds per method, a violin and box per task."""

    def part(study_id: str, store: Path) -> list[str]:
        per_run = study_analysis.per_run(study_id, path=store)
        # The page is 1100 px wide: fourteen methods at the default 110 px a slot ran past it.
        slot = min(110, VIOLINS_PX // max(per_run["method"].nunique(), 1))
        return [
            rh.chart_svg(
                charts.violin_box(
                    compare.score_frame(per_run, PRIMARY, [task]),
                    value_title=tables.metric_name(PRIMARY),
                    title=task,
                    slot_width=slot,
                )
            )
            for task in compare.task_order(per_run["task"])
        ]

    return _per_study(study_ids, store, part)


def reliability_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """Reliability diagrams of the selected runs' test probabilities, per task, each
    method's films pooled over its seeds (said in the legend and below)."""

    def part(study_id: str, store: Path) -> list[str]:
        frame = store_runs.selected_probabilities([study_id], path=store)
        if frame.empty:
            return [rh.paragraph("No stored test probabilities.", note=True)]
        out = []
        for task in compare.task_order(frame["task"]):
            rows = frame[frame["task"] == task]
            diagram = science_charts.reliability_diagram(
                pm.reliability_table(rows),
                title=task,
                size=180,
                pooled_seeds=rows["seed"].nunique(),
            )
            out.append(rh.chart_svg(diagram))
        out.append(rh.paragraph(pooling_sentence(frame), note=True))
        return out

    return _per_study(study_ids, store, part)


def pooling_sentence(frame: pd.DataFrame) -> str:
    """How many test predictions each method's bins pool, per task (``frame``: the selected
    runs' test probabilities, one row per run and film)."""
    parts = []
    for task in compare.task_order(frame["task"]):
        rows = frame[frame["task"] == task]
        per_method = rows.groupby("method").size()
        seeds = rows["seed"].nunique()
        parts.append(
            f"{task}: {int(per_method.max()):,} predictions per method, {seeds} seeds × about "
            f"{int(per_method.max()) // max(seeds, 1):,} test films"
        )
    return (
        "Each method's points pool its test films of every seed: a film counts once per seed "
        "that tested it, so the film counts of the size legend add up to more than the "
        f"study's films ({'; '.join(parts)})."
    )


def kl_cppd_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """The true KL × CPPD table, each method's residuals, its KLD and the KLD's parts."""
    return _per_study(study_ids, store, _kl_cppd_part)


def _kl_cppd_part(study_id: str, store: Path) -> list[str]:
    joint = store_runs.joint_predictions([study_id], path=store)
    if joint.empty:
        return [rh.paragraph("No seed has selected runs of both tasks.", note=True)]
    truth, results = relationship.relationship_by_seed(joint)
    summary = relationship.summarise_relationship(results)
    out = [
        rh.chart_svg(
            charts.contingency_heatmap(
                compare.grid_frame(truth), decimals=1, title="True table (mean count per seed)"
            )
        ),
        rh.table_html(stat_tables.relationship_summary_shown(summary), digits=4),
        rh.paragraph(stat_tables.RELATIONSHIP_NOTE, note=True),
    ]
    residuals = {r.method: r.mean_table - r.mean_truth for r in summary.itertuples()}
    limit = max((float(np.abs(t).max()) for t in residuals.values()), default=1.0)
    heatmaps = []
    for row in summary.itertuples():
        subtitle = f"KLD {tables.mean_std_text(row.kld_mean, row.kld_std, 3)}"
        heat = charts.residual_heatmap(
            compare.grid_frame(residuals[row.method]),
            title=tables.method_title(row.method),
            subtitle=subtitle,
            limit=limit,
        )
        heatmaps.append(rh.chart_svg(heat))
    out.append(rh.row(heatmaps))
    parts = kld_parts.summarise(kld_parts.decompose(results))
    tables_of = summary.set_index("method")
    readings = [
        inference_tables.kld_part_reading(
            row,
            tables_of.loc[row["method"], "mean_table"],
            tables_of.loc[row["method"], "mean_truth"],
        )
        for row in parts.to_dict("records")
    ]
    out += [
        rh.paragraph(
            "Residual = mean predicted − mean true table over seeds (red: predicted more often "
            "than it occurs). KLD = Kullback–Leibler divergence D_KL(true ‖ predicted) in "
            "nats, per seed, mean ± sd.",
            note=True,
        ),
        rh.heading("The KLD's chain-rule decomposition", 4),
        rh.table_html(inference_tables.kld_parts_frame(parts), digits=3),
        rh.paragraph(inference_tables.KLD_PARTS_NOTE, note=True),
        rh.bullets(readings),
    ]
    kld_pairs = study_analysis.kld_paired_table(study_id, path=store)
    if not kld_pairs.empty:
        out += [
            rh.heading("KLD compared between methods, paired by seed", 4),
            rh.table_html(paired_frame(kld_pairs)),
            rh.bullets(paired_readings(kld_pairs)),
        ]
    return out


def curves_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """Every method's selected run on the first seed, per task, with how to read them (the
    declared early-stopping rule and the study's patience)."""

    def part(study_id: str, store: Path) -> list[str]:
        epochs = store_runs.study_epoch_metrics([study_id], selected_only=True, path=store)
        curves = explorer.learning_curves(epochs)
        if curves.empty:
            return [rh.paragraph("No per-epoch curves are stored for this study.", note=True)]
        seed = int(curves["seed"].min())
        out, clipped = [], []
        for task in compare.task_order(curves["task"]):
            lines = explorer.overlay(curves, "method", task=task, seed=seed)
            if not lines.empty:
                title = f"{task}: selected runs, seed {seed}"
                chart = science_charts.learning_curves_chart(lines, title=title, width=220)
                out.append(rh.chart_svg(chart))
                if sentence := explorer_views.clipped_sentence(lines):
                    clipped.append(f"{task}: {sentence}")
        spec = store_studies.get_study(study_id, path=store).spec
        seen = "Seed shown: the study's first; every seed is on the Search & learning curves page."
        notes = [explorer_views.curves_note(spec), *clipped, seen]
        return [*out, *(rh.paragraph(text, note=True) for text in notes)]

    return _per_study(study_ids, store, part)


def methods_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """A paragraph per study a PI can paste into a paper, then the statistics and software."""
    out = [rh.paragraph(protocol_text(s, store)) for s in study_ids]
    stats = statistics_text(study_ids, store)
    out += [rh.paragraph(stats), rh.paragraph(software_text(study_ids, store))]
    return ['<div class="methods">', *out, "</div>"]


# -- the methods paragraph -------------------------------------------------------------------


def statistics_text(study_ids: Sequence[str] = (), store: Path | None = None) -> str:
    """The statistics paragraph: what each test the report shows does and assumes, with the
    declared search-selection rule (`engine.protocol`); ``study_ids`` of imported results
    say their metrics are the file's (`pages.present.imported_text`)."""
    selected = (
        "Test metrics are computed per seed from each (task, method, seed)'s selected run "
        f"({protocol_text_of.selection_sentence()})."
    )
    opening = imported_text.metrics_source(selected, study_ids, store)
    return (
        f"Statistics. {opening} Means carry 95 % corrected "
        "resampled t intervals (Nadeau & Bengio 2003), which widen the ordinary interval by the "
        "test/train size ratio because the seeds resample the same films; they assume the "
        "per-seed values are roughly normal, and an interval is shown clipped to the values its "
        "metric can take. Pairs of methods are compared by the mean paired difference over "
        "seeds with the corrected resampled t-test, which assumes a between-seed correlation "
        "ρ = n_test/n (shown as ρ assumed) that one dataset cannot measure, so its p is also "
        "reported at r = ρ/(1 − ρ) = 0, 0.1 and 0.2 with the break-even r where it crosses "
        "0.05; by the Bayesian correlated t-test (Corani & Benavoli 2015) on the same corrected "
        f"variance, whose verdict is “better” or “equivalent” (|A − B| within a region of "
        f"practical equivalence, ROPE ± {paired.DEFAULT_ROPE:g}) when its posterior "
        f"probability reaches {paired.BAYES_THRESHOLD:g}, else “inconclusive”, with TOST as "
        "the frequentist test of equivalence within the ROPE; and by the exact Wilcoxon "
        "signed-rank test (ties and zeros included; symmetric differences, seeds treated as "
        "independent, hence read as consistency over seeds), Holm-adjusted within each task; "
        "effect sizes are Cohen's dz (mean difference over its standard deviation) and the "
        "matched-pairs rank-biserial r. Apart from these, a film-sampling bootstrap (seeds, "
        "then patients within each seed's test set, seeds taken as independent) measures how "
        "much the test films alone move a difference; it ignores the training films the seeds "
        "share, so it is not an interval for the comparison. The primary endpoint "
        f"({paired.PRIMARY_FAMILY}) is the one confirmatory family, Holm on the corrected p; "
        "every other comparison is exploratory. Methods are ranked per seed by the Friedman "
        "test with Nemenyi post-hoc comparisons (seeds as independent blocks; exploratory). "
        "The KL × CPPD agreement is the Kullback–Leibler divergence D_KL(true ‖ predicted) of "
        "the joint grade table per seed, decomposed by the chain rule into a KL-marginal and a "
        "CPPD-given-KL part."
    )


def protocol_text(study_id: str, store: Path) -> str:
    """The study's data, protocol, search space, budget, splits and initial weights in prose;
    early stopping and selection as the trainer and the search declare them
    (`engine.protocol`, worded by `pages.present.protocol_text`)."""
    spec = store_studies.get_study(study_id, path=store).spec
    if isinstance(spec.get("imported_results"), Mapping):
        return imported_text.protocol_paragraph(study_id, spec, store)
    methods = list(spec.get("methods", []))
    budget = int(spec.get("budget", MAX_BUDGET))
    seeds = list(spec.get("seeds", []))
    init = (
        "ImageNet weights read from a local file"
        if spec.get("weights_path")
        else "random initial weights"
    )
    return (
        f"Protocol ({spec.get('name', study_id)}). Data: {dataset_text(study_id, store)}. A "
        f"ResNet-18 was trained for each of the tasks {', '.join(spec.get('tasks', []))} with "
        f"{len(methods)} label methods ({', '.join(methods)}), from {init}, on "
        f"{spec.get('image_size', '?')}-pixel crops in batches of "
        f"{spec.get('batch_size', '?')} for {protocol_text_of.stopping_sentence(spec)}, over "
        f"{len(seeds)} seeds ({_seed_text(seeds)}). Search space per method (random search, "
        f"budget {budget} configurations per task, method and seed, a smaller grid searched "
        f"in full; the selected run is {protocol_text_of.selection_sentence()}): "
        f"{search_space_text(methods, budget)}. Splits: {SPLIT_RULE}; "
        f"{TEST_FRACTION:.0%} of patients held out for testing and {VAL_FRACTION:.0%} of the "
        f"rest for validation, drawn anew for every seed; {split_text(study_id, store)}."
        + (f" {pruned}" if (pruned := protocol_text_of.search_sentence(spec)) else "")
    )


def dataset_of(study_id: str, store: Path) -> tuple[str | None, dict[str, Any]]:
    """The study's dataset kind and parameters (``(None, {})`` when not recorded)."""
    dataset_id = store_studies.get_study(study_id, path=store).dataset_id
    found = store_datasets.dataset_params(dataset_id, path=store) if dataset_id else None
    return found if found else (None, {})


def annotation_noise(params: Mapping[str, Any]) -> float:
    """The phantom's annotation noise: its parameter, else the generator's default."""
    return float(params.get("annotation_noise", PhantomSpec().annotation_noise))


def dataset_text(study_id: str, store: Path) -> str:
    """The films in a phrase: synthetic phantom films (with their annotation noise) or
    imported films."""
    kind, params = dataset_of(study_id, store)
    if kind == PHANTOM:
        n = params.get("n_images", PhantomSpec().n_images)
        return (
            f"{n:,} synthetic knee films drawn by SoftGrade's phantom generator (seed "
            f"{params.get('seed', PhantomSpec().seed)}), not radiographs of patients; each "
            f"recorded grade was moved to an adjacent grade with probability "
            f"{annotation_noise(params):g} (annotation noise)"
        )
    if kind is None:
        return "films of a dataset whose kind the store does not record"
    return f"films imported from a {kind} dataset, graded by their annotators"


def search_space_text(methods: Sequence[str], budget: int) -> str:
    """Each method's grid (parameter values) and how many configurations were tried; a
    method this checkout does not register (imported results) is named as such."""
    parts = []
    for method in methods:
        if not method_registry.is_registered(method):
            parts.append(f"{method}: not registered in this SoftGrade, search space unknown")
            continue
        grid = method_registry.search_grid(method)
        axes = {k: sorted({g.as_dict()[k] for g in grid}) for k in grid[0].as_dict()}
        values = "; ".join(f"{k} ∈ {{{', '.join(f'{v:g}' for v in vs)}}}" for k, vs in axes.items())
        parts.append(f"{method}: {values} ({min(budget, len(grid))} of {len(grid)})")
    return "; ".join(parts)


def split_text(study_id: str, store: Path) -> str:
    """Films per split and task, over the seeds (mean, range)."""
    sizes = store_analysis.split_sizes(study_id, path=store)
    if sizes.empty:
        return "split sizes not recorded"
    parts = []
    for task, rows in sizes.groupby("task", sort=False):
        parts.append(
            f"{task}: {_range(rows['n_test'])} test and {_range(rows['n_fit'])} "
            "training + validation films per seed"
        )
    return "; ".join(parts)


def software_text(study_ids: Sequence[str], store: Path) -> str:
    """Training software from each study's card; analysis software from this process."""
    trained = []
    for card in export_cards(str(store), study_ids):
        known = [f"{k} {card[k]}" for k in TRAINING_CARD_FIELDS if k in card]
        trained.append(f"{card.get('study', '?')}: {'; '.join(known) or 'not recorded'}")
    code = provenance.code_version()
    commit = f" (commit {code['git_commit'][:10]})" if code.get("git_commit") else ""
    analysis = ", ".join(f"{p} {_version(p)}" for p in ANALYSIS_PACKAGES)
    return (
        f"Software. Training: {' | '.join(trained)}. Analysis and this report: SoftGrade "
        f"{code.get('code_version')}{commit} with {analysis}, Python {sys.version.split()[0]}."
    )


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


def _range(values: pd.Series) -> str:
    low, high = int(values.min()), int(values.max())
    return str(low) if low == high else f"{low}–{high}"


def _seed_text(seeds: Sequence[int]) -> str:
    if seeds and list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}–{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])
    return ", ".join(str(s) for s in seeds)


def _titled(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with its methods as the pages title them."""
    return frame.assign(method=frame["method"].map(tables.method_title))


def _plain(markdown: str) -> str:
    """A page reading without its Markdown emphasis."""
    return markdown.replace("**", "").replace("`", "")


_BUILDERS: dict[str, Callable[[Sequence[str], Path], list[str]]] = {
    "studies": studies_section,
    "caveats": caveats_section,
    "table4": table4_section,
    "paired": paired_section,
    "critical-difference": critical_difference_section,
    "distributions": distributions_section,
    "reliability": reliability_section,
    "kl-cppd": kl_cppd_section,
    "curves": curves_section,
    "methods": methods_section,
}


# -- command line ----------------------------------------------------------------------------


def write_report(study_ids: Sequence[str], output: Path, *, path: Path | None = None) -> int:
    """Write the report; return its size in bytes.

    Raises:
        ReportInputError: bad studies, or an output that is not a writable ``.html`` file.
    """
    check_output(output)
    text = build_report(study_ids, path=path)
    output.write_text(text, encoding="utf-8")
    return len(text.encode("utf-8"))


def check_output(output: Path) -> None:
    """Raise `ReportInputError` unless ``output`` is an ``.html`` file that can be written."""
    if output.suffix.lower() not in (".html", ".htm"):
        raise ReportInputError(f"{str(output)!r}: -o writes an .html file")
    folder = output.parent if str(output.parent) else Path(".")
    if not folder.is_dir():
        raise ReportInputError(f"{str(output)!r}: no folder {str(folder)!r}")
    if output.is_dir() or not os.access(output if output.exists() else folder, os.W_OK):
        raise ReportInputError(f"{str(output)!r} cannot be written here")


# -- the report's tables as LaTeX ------------------------------------------------------------


def report_latex(study_ids: Sequence[str], *, path: Path | str | None = None) -> dict[str, str]:
    """The report's tables as booktabs LaTeX, file name -> text: per study, Table 4 with its
    intervals, the primary endpoint, every pair on the primary metric (the pages'
    `reviewer_tables.paired_latex`) and the film-sampling bootstrap; tables without rows are
    left out.

    Raises:
        ReportInputError: no study named, or a study the store does not hold.
    """
    store = Path(path) if path is not None else default_store_path()
    check_studies(study_ids, store)
    out: dict[str, str] = {}
    metric = METRIC_LABELS[PRIMARY]
    for study_id in study_ids:
        name = store_studies.get_study(study_id, path=store).name
        label = re.sub(r"[^A-Za-z0-9]+", "-", study_id).strip("-")
        intervals = study_analysis.mean_intervals(study_id, path=store)
        table = study_analysis.paired_table(study_id, metrics=(PRIMARY,), n_boot=N_BOOT, path=store)
        endpoint = paired.primary_endpoint(table) if len(table) else table
        frames = {
            "table4": (table4_frame(intervals), f"Test metrics, {paired.MEAN_CI_KIND}"),
            "primary-endpoint": (
                endpoint_frame(endpoint) if len(endpoint) else endpoint,
                f"Primary endpoint ({paired.PRIMARY_FAMILY})",
            ),
            "bootstrap": (  # per-seed metrics have no films to resample: no interval
                bootstrap_frame(table)
                if "boot_ci_low" in table and table["boot_ci_low"].notna().any()
                else table.head(0),
                f"Film-sampling bootstrap, {metric}: {paired.BOOTSTRAP_CI_KIND}",
            ),
        }
        for key, (frame, caption) in frames.items():
            if len(frame):
                out[f"{label}-{key}.tex"] = stat_tables.frame_latex(
                    frame,
                    caption=f"{tables.latex_escape(name)}: {tables.latex_escape(caption)}",
                    label=f"tab:{label}-{key}",
                )
        if len(table):
            out[f"{label}-paired.tex"] = reviewer_tables.paired_latex(table, metric).replace(
                r"\label{tab:paired}", rf"\label{{tab:{label}-paired}}"
            )
    return out


def write_latex(
    study_ids: Sequence[str], folder: Path, *, path: Path | str | None = None
) -> list[Path]:
    """Write `report_latex`'s tables into ``folder`` (made if missing); returns the files.

    Raises:
        ReportInputError: bad studies, or a folder that cannot be written.
    """
    texts = report_latex(study_ids, path=path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for name, text in texts.items():
            (folder / name).write_text(text, encoding="utf-8")
            written.append(folder / name)
    except OSError as exc:
        raise ReportInputError(
            f"{str(folder)!r} cannot be written ({exc.strerror or exc})"
        ) from exc
    return written
