"""The report's "Grade sets" section: conformal grade sets' coverage and size per method at
90 % (`jobs.services.grade_sets`; the Compare tab's sentence and chart,
`pages.present.sets_tables`), one row per task and method with a column per score; the
sets' shapes (single grade, one range, the worst grade's coverage) go to the appendix."""

from __future__ import annotations

from engine.analysis import conformal
from jobs.services.report_record import ReportInputs, StudyReportInputs
from pages.present import report_html as rh
from pages.present import sets_tables
from pages.present.report.common import per_study

#: The appendix's heading of the sets' shapes (the body names it).
SHAPES_HEADING = "Grade sets: single-grade and range shares, worst grade's coverage"


def grade_sets_section(inputs: ReportInputs) -> list[str]:
    """Each study's grade sets at the default coverage, one threshold for all grades."""

    def part(study: StudyReportInputs) -> list[str]:
        summary = study.sets_summary
        if summary.empty:
            return [rh.paragraph(f"No grade sets: {conformal.NO_VALIDATION_NOTE}.", note=True)]
        coverage = conformal.DEFAULT_COVERAGE
        return [
            rh.paragraph(sets_tables.coverage_sentence(summary, coverage)),
            rh.table_html(sets_tables.sets_by_method(summary), css_class="compact"),
            rh.paragraph(
                "Each cell: the share of test films whose recorded grade is in its set "
                "(coverage) / the mean set size in grades, means over seeds. How often a set "
                "is a single grade or one range of grades, and each method's worst-covered "
                f"grade, are in the appendix (“{SHAPES_HEADING}”); every grade's coverage is "
                "in Compare → Grade sets and `softgrade sets`.",
                note=True,
            ),
            rh.chart_svg(sets_tables.coverage_size_chart(summary, coverage)),
            rh.paragraph(sets_tables.SETS_NOTE, note=True),
        ]

    return per_study(inputs, part)


def set_shapes_part(study: StudyReportInputs) -> list[str]:
    """The appendix's table of the sets' shapes, or nothing when the study has no sets."""
    summary = study.sets_summary
    if summary.empty:
        return []
    return [
        rh.heading(SHAPES_HEADING, 4),
        rh.table_html(sets_tables.set_shapes_by_method(summary), css_class="matrix"),
        rh.paragraph(
            "Each cell: the share of sets that are a single grade · the share that are one "
            "range of adjacent grades · the lowest coverage of any one grade, with that "
            "grade; means over seeds.",
            note=True,
        ),
    ]
