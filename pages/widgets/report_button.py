"""The Compare page's "Report" button: the picked studies' report as one HTML file, the
same file ``python -m jobs report`` writes: its inputs gathered by
``jobs.services.report_inputs``, formatted by ``pages.present.report``."""

from __future__ import annotations

import streamlit as st

from jobs.services.report_inputs import gather_report_inputs
from pages.present import report
from pages.widgets.reads import RESULTS_TTL_S

REPORT_HELP = (
    "The whole analysis of the picked studies (every task and method, whatever is picked "
    "here) as one HTML file that opens offline: cards and notes, Table 4 with 95 % CIs, "
    "paired comparisons, CD diagram, distributions, reliability, KL × CPPD, learning curves "
    "and a methods paragraph. Print it to PDF from the browser."
)


@st.cache_data(ttl=RESULTS_TTL_S, max_entries=4, show_spinner=False)
def cached_report(path: str, study_ids: tuple[str, ...]) -> str:
    """The report's HTML, built once per studies and store state (~10 s for 20 seeds)."""
    return report.build_report(gather_report_inputs(study_ids, path=path))


def report_button(path: str, study_ids: tuple[str, ...]) -> None:
    """A "Report" download whose HTML is built when clicked (not on every rerun)."""
    st.download_button(
        "Report",
        data=lambda: cached_report(path, study_ids),
        file_name=report.file_name(study_ids),
        mime="text/html",
        key="compare_report",
        icon=":material/summarize:",
        help=REPORT_HELP,
    )
