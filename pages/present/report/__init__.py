"""The study report: one self-contained HTML file of a study's analysis (issue 22).

`python -m jobs report STUDY_ID [STUDY_ID ...] -o report.html` writes it
(`jobs.cli.report_command`, in process), and the Compare page's "Report" button downloads
it. Both gather the report's inputs first (`jobs.services.report_inputs`: every store read
and statistic, one frozen `ReportInputs` record) and hand them to :func:`build_report`, which
formats them and reads nothing: no store, no clock, no file. Writing the file is the
caller's (`store.outputs`, refusing to clobber a file or follow a link).

Every number comes from `jobs.services.study_analysis` (one call per statistic, through the
record) or the engine functions the pages use; every chart is a `pages.present.charts` /
`science_charts` builder rendered to inline SVG (`pages.present.report_html.chart_svg`). The
file fetches nothing.

The sections live in this package's modules, one concept each: `common` (constants, the
error, helpers), `studies`, `caveats`, `intervals` (Table 4), `comparisons` (paired tests and
the primary endpoint), `figures`, `grade_sets` (conformal grade sets), `methods_text`,
`appendix` (what the body names but does not spell out) and `latex`; this module assembles
them and re-exports the names callers use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from jobs.services.report_record import ReportInputs, StudyReportInputs
from pages.present import report_html as rh
from pages.present.endpoint_text import endpoint_result, endpoint_sentence
from pages.present.report.appendix import appendix_section
from pages.present.report.caveats import (
    budget_caveat,
    caveats,
    caveats_section,
    confirmatory_caveat,
    data_caveat,
    imported_caveats,
    noise_caveat,
    truth_caveat,
)
from pages.present.report.common import (
    ALPHA,
    BAD_INPUT,
    PHANTOM,
    PRIMARY,
    SECTIONS,
    ReportInputError,
)
from pages.present.report.comparisons import (
    BOOTSTRAP_SHOWN,
    ENDPOINT_TESTS,
    PAIRED_SHOWN,
    bootstrap_frame,
    endpoint_frame,
    paired_frame,
    paired_readings,
    paired_section,
    primary_endpoint,
    tests_line,
    verdict_matrix,
)
from pages.present.report.figures import (
    critical_difference_section,
    curves_section,
    distributions_section,
    kl_cppd_section,
    pooling_sentence,
    ranks_reading,
    reliability_section,
)
from pages.present.report.grade_sets import SHAPES_HEADING, grade_sets_section, set_shapes_part
from pages.present.report.intervals import table4_section
from pages.present.report.latex import report_latex
from pages.present.report.methods_text import (
    methods_section,
    protocol_text,
    software_text,
    statistics_text,
)
from pages.present.report.studies import (
    dataset_card_text,
    run_count_notes,
    studies_section,
    study_card,
)

__all__ = [
    "ALPHA",
    "BAD_INPUT",
    "BOOTSTRAP_SHOWN",
    "ENDPOINT_TESTS",
    "PAIRED_SHOWN",
    "PHANTOM",
    "PRIMARY",
    "SECTIONS",
    "SHAPES_HEADING",
    "ReportInputError",
    "ReportInputs",
    "StudyReportInputs",
    "bootstrap_frame",
    "budget_caveat",
    "build_report",
    "caveats",
    "appendix_section",
    "caveats_section",
    "confirmatory_caveat",
    "critical_difference_section",
    "curves_section",
    "data_caveat",
    "dataset_card_text",
    "distributions_section",
    "endpoint_frame",
    "endpoint_result",
    "endpoint_sentence",
    "file_name",
    "grade_sets_section",
    "imported_caveats",
    "kl_cppd_section",
    "methods_section",
    "noise_caveat",
    "paired_frame",
    "paired_readings",
    "paired_section",
    "pooling_sentence",
    "primary_endpoint",
    "protocol_text",
    "ranks_reading",
    "reliability_section",
    "set_shapes_part",
    "report_latex",
    "run_count_notes",
    "software_text",
    "statistics_text",
    "studies_section",
    "study_card",
    "table4_section",
    "tests_line",
    "truth_caveat",
    "verdict_matrix",
]

_BUILDERS: dict[str, Callable[[ReportInputs], list[str]]] = {
    "studies": studies_section,
    "caveats": caveats_section,
    "table4": table4_section,
    "paired": paired_section,
    "critical-difference": critical_difference_section,
    "distributions": distributions_section,
    "reliability": reliability_section,
    "grade-sets": grade_sets_section,
    "kl-cppd": kl_cppd_section,
    "curves": curves_section,
    "methods": methods_section,
    "appendix": appendix_section,
}


def build_report(inputs: ReportInputs) -> str:
    """The report of the studies ``inputs`` holds (`jobs.services.report_inputs`) as one
    HTML document."""
    sections = [rh.section(key, SECTIONS[key], build(inputs)) for key, build in _BUILDERS.items()]
    names = ", ".join(s.name for s in inputs.studies)
    stamp = f"{inputs.written_at:%Y-%m-%d %H:%M} UTC"
    subtitle = f"Written {stamp} from {inputs.store_name}."
    return rh.page(f"SoftGrade report: {names}", subtitle, sections)


def file_name(study_ids: Sequence[str]) -> str:
    """The report's download name: ``softgrade_report_<first study>[_and_N_more].html``."""
    more = f"_and_{len(study_ids) - 1}_more" if len(study_ids) > 1 else ""
    return f"softgrade_report_{study_ids[0] if study_ids else 'none'}{more}.html"
