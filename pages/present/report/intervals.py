"""The report's Table 4: each metric's mean with its corrected 95 % interval, clipped to
the values the metric can take.
"""

from __future__ import annotations

import pandas as pd

from engine.analysis import paired
from engine.analysis.metrics import CALIBRATED_METRICS, METRIC_LABELS, get_metric
from jobs.services.report_record import ReportInputs, StudyReportInputs
from pages.present import report_html as rh
from pages.present import reviewer_tables
from pages.present.report.common import MANY_ROWS, per_study


def table4_section(inputs: ReportInputs) -> list[str]:
    """Table 4: mean and corrected 95 % interval per task, method and metric (the grade
    metrics, then the set size where the study has validation films)."""

    def part(study: StudyReportInputs) -> list[str]:
        intervals = study.intervals
        out = table4_tables(reviewer_tables.mean_ci_table(intervals))
        if clipped := reviewer_tables.clipped_sentence(intervals):
            out.append(rh.paragraph(clipped, note=True))
        return out

    note = (
        f"{paired.MEAN_CI_KIND}. The interval is symmetric about the mean, so near a bound it "
        "can reach values the metric cannot take; such an end is shown at the bound (MS, BA "
        "and the errors cannot be below 0, QWK not below −1, none of MS, BA and QWK above 1, "
        "a set size not below 1). "
        + " ".join(f"{METRIC_LABELS[m]}: {get_metric(m).meaning}" for m in CALIBRATED_METRICS)
    )
    return [*per_study(inputs, part), rh.paragraph(note, note=True)]


def table4_tables(frame: pd.DataFrame) -> list[str]:
    """Table 4 as one table; past `common.MANY_ROWS` rows compact and denser still, so that
    every row of seven intervals stays one line on the page (two tables of four metrics
    measured taller; in print its cells may wrap, never be cut)."""
    if len(frame) <= MANY_ROWS:
        return [rh.table_html(frame)]
    return [rh.table_html(frame, css_class="compact dense")]
