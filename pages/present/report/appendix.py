"""The report's appendix: what the body names but does not spell out, so that a study of
many methods stays readable without dropping anything: every pair not against the
reference method as square verdict tables (`comparisons.pair_matrices_part`), then the
grade sets' shapes (`grade_sets.set_shapes_part`)."""

from __future__ import annotations

from jobs.services.report_record import ReportInputs, StudyReportInputs
from pages.present import report_html as rh
from pages.present.report.common import per_study
from pages.present.report.comparisons import pair_matrices_part
from pages.present.report.grade_sets import set_shapes_part


def appendix_section(inputs: ReportInputs) -> list[str]:
    """Each study's appendix parts, or one line saying the body holds everything."""

    def part(study: StudyReportInputs) -> list[str]:
        out = [*pair_matrices_part(study), *set_shapes_part(study)]
        everything = "Every pair and table is in the body of the report."
        return out or [rh.paragraph(everything, note=True)]

    return per_study(inputs, part)
