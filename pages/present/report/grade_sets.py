"""The report's "Grade sets" section: conformal grade sets' coverage and size per method at
90 % (`jobs.services.grade_sets`; the Compare tab's table, chart and sentence,
`pages.present.sets_tables`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from engine.analysis import conformal
from jobs.services import grade_sets
from pages.present import report_html as rh
from pages.present import sets_tables
from pages.present.report.common import per_study


def grade_sets_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """Each study's grade sets at the default coverage, one threshold for all grades."""
    coverage = conformal.DEFAULT_COVERAGE

    def part(study_id: str, store: Path) -> list[str]:
        per_run = grade_sets.study_sets(study_id, coverage=coverage, path=store)
        if per_run.empty:
            return [rh.paragraph(f"No grade sets: {grade_sets.NO_VALIDATION_NOTE}.", note=True)]
        summary = conformal.method_summary(per_run)
        return [
            rh.paragraph(sets_tables.coverage_sentence(summary, coverage)),
            rh.table_html(sets_tables.sets_frame(summary)),
            rh.chart_svg(sets_tables.coverage_size_chart(summary, coverage)),
            rh.paragraph(sets_tables.SETS_NOTE, note=True),
        ]

    return per_study(study_ids, store, part)
