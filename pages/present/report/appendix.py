"""The report's appendix: what the body names but does not spell out, so that a study of
many methods stays readable without dropping anything: every pair not against the
reference method as square verdict tables (`comparisons.pair_matrices_part`), then the
grade sets' shapes (`grade_sets.set_shapes_part`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pages.present import report_html as rh
from pages.present.report.common import per_study
from pages.present.report.comparisons import pair_matrices_part
from pages.present.report.grade_sets import set_shapes_part


def appendix_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """Each study's appendix parts, or one line saying the body holds everything."""

    def part(study_id: str, store: Path) -> list[str]:
        out = [*pair_matrices_part(study_id, store), *set_shapes_part(study_id, store)]
        everything = "Every pair and table is in the body of the report."
        return out or [rh.paragraph(everything, note=True)]

    return per_study(study_ids, store, part)
