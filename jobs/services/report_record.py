"""What the study report is written from: one frozen record per report, gathered by
`jobs.services.report_inputs` and formatted by `pages.present.report` (HTML and LaTeX).

This module reads nothing (no store, no git, no clock) and imports nothing heavy: it only
names the record's parts, so that presentation can import its types without reaching the
store, and the command line its error without loading the statistics. Each frame is what the
service that computes it returns (`jobs.services.study_analysis`, `grade_sets`, the store's
typed reads); the report formats them and computes nothing it would have to read for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

# Types only: the command line imports this module (its error) at start, before any command
# needs pandas or the statistics.
if TYPE_CHECKING:
    import pandas as pd

    from engine.analysis.budget import BudgetMatched


class ReportInputError(ValueError):
    """Input the report cannot be written from (its message is the one line shown)."""


@dataclass(frozen=True, eq=False)
class StudyReportInputs:
    """Everything the report says of one study.

    Attributes:
        study_id, name, notes, spec: the study's row (``spec`` as a mapping; ``notes`` "" when
            none).
        card: its export card (`jobs.services.export_cards.export_card`).
        imported_card: the card a study imported from a bundle came with, else None.
        dataset_kind, dataset_params: its dataset's kind and parameters (None and {} when the
            store does not record them).
        runs: every run (`store.runs.list_runs`).
        runs_lacking_test: succeeded runs without test predictions.
        budget_matched: the budget-matched check, or the sentence why it cannot run, or None
            where the report does not ask for it (no search, equal budgets, runs lacking
            test predictions, imported results: `engine.analysis.budget`'s
            `searched_configurations` says which).
        against_truth: the scores against the phantom's true grades (empty where none).
        unsized_tasks: tasks without split sizes (results imported without them).
        intervals: Table 4's means and corrected intervals of `STATS_METRICS`.
        latex_intervals: the same of the grade metrics (`METRICS`), the LaTeX Table 4.
        paired: the primary metric's paired table with the film-sampling bootstrap.
        kld_paired: the KL × CPPD divergence's paired table.
        factorial: whether the seeds cross split and init seeds.
        components: the primary metric's variance components (empty unless factorial).
        per_run: each selected run's test metrics.
        probabilities: the selected runs' test probabilities, one row per run and film.
        joint: the joint KL × CPPD predictions of seeds with both tasks.
        sets_summary: the grade sets at the default coverage, averaged over seeds.
        epochs: the selected runs' per-epoch metrics.
        split_sizes: films per split, task and seed.
    """

    study_id: str
    name: str
    notes: str
    spec: Mapping[str, Any]
    card: Mapping[str, str]
    imported_card: Mapping[str, Any] | None
    dataset_kind: str | None
    dataset_params: Mapping[str, Any]
    runs: pd.DataFrame
    runs_lacking_test: int
    budget_matched: BudgetMatched | str | None
    against_truth: pd.DataFrame
    unsized_tasks: tuple[str, ...]
    intervals: pd.DataFrame
    latex_intervals: pd.DataFrame
    paired: pd.DataFrame
    kld_paired: pd.DataFrame
    factorial: bool
    components: pd.DataFrame
    per_run: pd.DataFrame
    probabilities: pd.DataFrame
    joint: pd.DataFrame
    sets_summary: pd.DataFrame
    epochs: pd.DataFrame
    split_sizes: pd.DataFrame

    @property
    def imported_results(self) -> Mapping[str, Any] | None:
        """The ``imported_results`` part of the spec of results imported from another tool
        (`softgrade import-results`), else None."""
        source = self.spec.get("imported_results")
        return source if isinstance(source, Mapping) else None


@dataclass(frozen=True, eq=False)
class ReportInputs:
    """Everything one report says: its studies, in the order named, and what it was written
    with and when.

    Attributes:
        studies: each study's part.
        store_name: the store's file name (the report's subtitle names it).
        written_at: when the inputs were gathered (UTC).
        code: this checkout's version (`jobs.services.provenance.code_version`).
        analysis_software: (package, version) of each analysis package of this process.
        python: this process's Python version.
    """

    studies: tuple[StudyReportInputs, ...]
    store_name: str
    written_at: datetime
    code: Mapping[str, Any]
    analysis_software: tuple[tuple[str, str], ...]
    python: str

    @property
    def study_ids(self) -> tuple[str, ...]:
        """The studies' ids, in the report's order."""
        return tuple(s.study_id for s in self.studies)
