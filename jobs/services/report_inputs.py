"""The study report's inputs: every read and statistic the report shows, gathered once for
one or several studies into a `jobs.services.report_record.ReportInputs`.

`pages.present.report` formats the record (HTML, LaTeX) and reads nothing itself; the
command line (`softgrade report`) and Compare's Report button call
:func:`gather_report_inputs` and hand the record on. Each number comes from the service
that computes it for the pages (`study_analysis`, `grade_sets`, `export_cards`,
`provenance`) or from the store's typed reads, so the report and the pages say the same.
"""

from __future__ import annotations

import importlib.metadata
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from engine.analysis import budget, conformal, paired
from engine.analysis.metrics import METRICS, STATS_METRICS
from engine.analysis.variance_components import COMPONENT_COLUMNS
from jobs.services import grade_sets, provenance, study_analysis
from jobs.services.export_cards import Card, export_cards
from jobs.services.report_record import ReportInputError, ReportInputs, StudyReportInputs
from store import analysis as store_analysis
from store import bundle as store_bundle
from store import datasets as store_datasets
from store import runs as store_runs
from store import studies as store_studies
from store.db import default_store_path

__all__ = ["ReportInputError", "gather_report_inputs", "study_report_inputs"]

PRIMARY = paired.PRIMARY_METRIC
#: The analysis packages whose versions the report's software paragraph names.
ANALYSIS_PACKAGES = ("numpy", "scipy", "pandas", "scikit-posthocs", "altair")


def gather_report_inputs(
    study_ids: Sequence[str],
    *,
    path: Path | str | None = None,
    n_boot: int = study_analysis.DEFAULT_BOOTSTRAP,
    n_draws: int = budget.N_DRAWS,
) -> ReportInputs:
    """Everything the report of ``study_ids`` says, in their order. ``n_boot``: the
    film-sampling bootstrap's replicates (the CLI's default); ``n_draws``: the
    budget-matched check's random draws (the Robustness tab's default).

    Raises:
        ReportInputError: no study named, no store, or a study the store does not hold.
    """
    store = Path(path) if path is not None else default_store_path()
    check_studies(study_ids, store)
    cards = export_cards(str(store), study_ids)
    studies = tuple(
        study_report_inputs(study_id, card, store, n_boot=n_boot, n_draws=n_draws)
        for study_id, card in zip(study_ids, cards, strict=True)
    )
    return ReportInputs(
        studies=studies,
        store_name=store.name,
        written_at=datetime.now(UTC),
        code=provenance.code_version(),
        analysis_software=tuple((p, package_version(p)) for p in ANALYSIS_PACKAGES),
        python=sys.version.split()[0],
    )


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


def study_report_inputs(
    study_id: str, card: Card, store: Path, *, n_boot: int, n_draws: int
) -> StudyReportInputs:
    """One study's part of the report's inputs (``card``: its export card)."""
    study = store_studies.get_study(study_id, path=store)
    kind, params = dataset_of(study.dataset_id, store)
    runs = store_runs.list_runs([study_id], path=store)
    lacking = store_analysis.runs_lacking_test_predictions(study_id, path=store)
    # Results imported from another tool: their caveats are the file's, not a search's.
    trained = not isinstance(study.spec.get("imported_results"), Mapping)
    factorial = study_analysis.is_factorial(study_id, path=store)
    intervals = study_analysis.mean_intervals(study_id, metrics=STATS_METRICS, path=store)
    # The grade metrics' rows of the same table: `mean_intervals` computes each (task,
    # method, metric) on its own, so these are what it gives for `METRICS` alone.
    grade_intervals = intervals[intervals["metric"].isin(METRICS)].reset_index(drop=True)
    return StudyReportInputs(
        study_id=study_id,
        name=study.name,
        notes=study.notes or "",
        spec=study.spec,
        card=card,
        imported_card=store_bundle.imported_card(study_id, path=store),
        dataset_kind=kind,
        dataset_params=params,
        runs=runs,
        runs_lacking_test=lacking,
        budget_matched=budget_check(study_id, runs, lacking, store, n_draws) if trained else None,
        against_truth=(
            study_analysis.against_truth(study_id, path=store) if trained else pd.DataFrame()
        ),
        unsized_tasks=(
            () if trained else tuple(study_analysis.unsized_tasks(study_id, path=store))
        ),
        intervals=intervals,
        latex_intervals=grade_intervals,
        paired=study_analysis.paired_table(study_id, metrics=(PRIMARY,), n_boot=n_boot, path=store),
        kld_paired=study_analysis.kld_paired_table(study_id, path=store),
        factorial=factorial,
        components=(
            study_analysis.components_table(study_id, metrics=(PRIMARY,), path=store)
            if factorial
            else pd.DataFrame(columns=list(COMPONENT_COLUMNS))
        ),
        per_run=study_analysis.per_run(study_id, path=store),
        probabilities=store_runs.selected_probabilities([study_id], path=store),
        joint=store_runs.joint_predictions([study_id], path=store),
        sets_summary=sets_summary(study_id, store),
        epochs=store_runs.study_epoch_metrics([study_id], selected_only=True, path=store),
        split_sizes=store_analysis.split_sizes(study_id, path=store),
    )


def dataset_of(dataset_id: str | None, store: Path) -> tuple[str | None, dict[str, Any]]:
    """The dataset's kind and parameters (``(None, {})`` when not recorded)."""
    found = store_datasets.dataset_params(dataset_id, path=store) if dataset_id else None
    return found if found else (None, {})


def budget_check(
    study_id: str, runs: pd.DataFrame, lacking: int, store: Path, n_draws: int
) -> budget.BudgetMatched | str | None:
    """The budget-matched check where the report's budget caveat asks for it (the methods
    searched unequal budgets and every run has test predictions), or the sentence why it
    cannot run; None where the caveat says enough without it."""
    _, configs = budget.searched_configurations(runs)
    if configs.empty or configs.nunique() == 1 or lacking:
        return None
    try:
        return study_analysis.budget_matched(study_id, n_draws=n_draws, path=store)
    except budget.BudgetUnavailable as exc:
        return str(exc)


def sets_summary(study_id: str, store: Path) -> pd.DataFrame:
    """The study's grade sets at the default coverage, averaged over seeds per task, method
    and score (`engine.analysis.conformal.method_summary`); empty without validation films."""
    per_run = grade_sets.study_sets(study_id, coverage=conformal.DEFAULT_COVERAGE, path=store)
    return conformal.method_summary(per_run) if not per_run.empty else per_run


def package_version(package: str) -> str:
    """An installed package's version, or "(not installed)"."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"
