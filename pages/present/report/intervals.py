"""The report's Table 4: each metric's mean with its corrected 95 % interval, clipped to
the values the metric can take.
"""

from __future__ import annotations

import pandas as pd

from engine.analysis import paired
from engine.analysis.metrics import CALIBRATED_METRICS, METRIC_LABELS, get_metric
from jobs.services.report_record import ReportInputs, StudyReportInputs
from pages.present import report_html as rh
from pages.present import tables
from pages.present.report.common import MANY_ROWS, per_study


def table4_section(inputs: ReportInputs) -> list[str]:
    """Table 4: mean and corrected 95 % interval per task, method and metric (the grade
    metrics, then the set size where the study has validation films)."""

    def part(study: StudyReportInputs) -> list[str]:
        intervals = study.intervals
        out = table4_tables(table4_frame(intervals))
        if clipped := clipped_sentence(intervals):
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
