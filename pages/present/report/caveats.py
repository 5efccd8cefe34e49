"""The report's Caveats section: what limits every number (data, search budgets, label
noise, robustness, which comparisons are confirmatory).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from engine.analysis import budget, paired
from engine.analysis.metrics import LOWER_IS_BETTER, METRIC_LABELS
from engine.analysis.results_file import PREDICTIONS_FORMAT, UNSIZED_NOTE
from engine.methods import order_methods
from engine.phantom.spec import PhantomSpec
from jobs.services.report_record import ReportInputs, StudyReportInputs
from pages.present import inference_tables, tables
from pages.present import report_html as rh
from pages.present.endpoint_text import count_of, endpoint_result
from pages.present.inference_tables import p_text
from pages.present.report.common import (
    ALPHA,
    PHANTOM,
    PRIMARY,
    annotation_noise,
    per_study,
)
from pages.present.report.comparisons import primary_endpoint


def caveats_section(inputs: ReportInputs) -> list[str]:
    """What limits every number below: the data, the search budgets, the labels' noise, the
    robustness checks, and which comparisons are confirmatory."""
    return per_study(inputs, lambda study: [rh.bullets(caveats(study))])


def caveats(study: StudyReportInputs) -> list[str]:
    """The study's caveats, one plain paragraph each."""
    kind, params = study.dataset_kind, study.dataset_params
    if study.imported_results is not None:
        return imported_caveats(study, study.imported_results)
    return [
        data_caveat(kind, params),
        budget_caveat(study),
        noise_caveat(kind, params),
        truth_caveat(study.against_truth),
        confirmatory_caveat(primary_endpoint(study.paired)),
    ]


def imported_caveats(study: StudyReportInputs, source: Mapping[str, Any]) -> list[str]:
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
    if unsized := study.unsized_tasks:
        out.append(f"No split sizes for {', '.join(unsized)}: {UNSIZED_NOTE}.")
    out.append(confirmatory_caveat(primary_endpoint(study.paired)))
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


def budget_caveat(study: StudyReportInputs) -> str:
    """The methods' unequal search budgets, and what the budget-matched check found."""
    searched, configs = budget.searched_configurations(study.runs)
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
    if configs.nunique() == 1:
        return text.replace("Unequal search budgets", "Search budgets") + " Here they are equal."
    if lacking := study.runs_lacking_test:
        return (
            f"{text} The budget-matched check (every method re-selected among one "
            "configuration per learning rate of Nominal's grid, Compare → Robustness) cannot "
            "run here: "
            f"{inference_tables.budget_unavailable_sentence(lacking, len(searched))}"
        )
    matched = study.budget_matched
    if not isinstance(matched, budget.BudgetMatched):  # the reason it could not run
        return f"{text} The budget-matched check cannot run here: {matched}."
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


def truth_caveat(table: pd.DataFrame) -> str:
    """What scoring against the phantom's true grades found (the Robustness tab; ``table``:
    `jobs.services.study_analysis.against_truth`)."""
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
        f"significantly more {METRIC_LABELS[PRIMARY]} than Nominal in {count_of(k, n)} "
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
