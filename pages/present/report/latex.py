"""The report's tables as booktabs LaTeX (`python -m jobs report --latex-dir DIR`)."""

from __future__ import annotations

import re

from engine.analysis import paired
from engine.analysis.metrics import METRIC_LABELS
from jobs.services.report_record import ReportInputs
from pages.present import reviewer_tables, stat_tables, tables
from pages.present.report.common import PRIMARY
from pages.present.report.comparisons import bootstrap_frame, endpoint_frame


def report_latex(inputs: ReportInputs) -> dict[str, str]:
    """The report's tables as booktabs LaTeX, file name -> text: per study, Table 4 with its
    intervals, the primary endpoint, every pair on the primary metric (the pages'
    `reviewer_tables.paired_latex`) and the film-sampling bootstrap; tables without rows are
    left out. The command line writes them (`jobs.cli.report_command`)."""
    out: dict[str, str] = {}
    metric = METRIC_LABELS[PRIMARY]
    for study in inputs.studies:
        name = study.name
        label = re.sub(r"[^A-Za-z0-9]+", "-", study.study_id).strip("-")
        intervals = study.latex_intervals
        table = study.paired
        endpoint = paired.primary_endpoint(table) if len(table) else table
        frames = {
            "table4": (
                reviewer_tables.mean_ci_table(intervals),
                f"Test metrics, {paired.MEAN_CI_KIND}",
            ),
            "primary-endpoint": (
                endpoint_frame(endpoint) if len(endpoint) else endpoint,
                f"Primary endpoint ({paired.PRIMARY_FAMILY})",
            ),
            "bootstrap": (  # per-seed metrics have no films to resample: no interval
                bootstrap_frame(table)
                if "boot_ci_low" in table and table["boot_ci_low"].notna().any()
                else table.head(0),
                f"Film-sampling bootstrap, {metric}: {paired.BOOTSTRAP_CI_KIND}",
            ),
        }
        for key, (frame, caption) in frames.items():
            if len(frame):
                out[f"{label}-{key}.tex"] = stat_tables.frame_latex(
                    frame,
                    caption=f"{tables.latex_escape(name)}: {tables.latex_escape(caption)}",
                    label=f"tab:{label}-{key}",
                )
        if len(table):
            out[f"{label}-paired.tex"] = reviewer_tables.paired_latex(table, metric).replace(
                r"\label{tab:paired}", rf"\label{{tab:{label}-paired}}"
            )
    return out
