"""The report's shared ground: its constants and sections, the error it raises (the
inputs' own, `jobs.services.report_record.ReportInputError`) and the helpers every section
uses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from engine.analysis import paired
from engine.phantom.spec import PhantomSpec
from jobs.services.report_record import ReportInputError, ReportInputs, StudyReportInputs
from pages.present import report_html as rh

__all__ = ["ReportInputError"]

BAD_INPUT = 2
PRIMARY = paired.PRIMARY_METRIC
ALPHA = paired.ALPHA
#: The dataset kind of SoftGrade's synthetic knee phantom (`engine.config.DatasetSpec`).
PHANTOM = "phantom"
#: Every section of the report, in order: id -> heading (tests find each by its heading).
SECTIONS: dict[str, str] = {
    "studies": "Studies",
    "caveats": "Caveats",
    "table4": "Table 4: test metrics with 95 % confidence intervals",
    "paired": "Paired comparisons",
    "critical-difference": "Critical-difference diagram",
    "distributions": "Distributions over seeds",
    "reliability": "Reliability diagram",
    "grade-sets": "Grade sets: conformal coverage and set size at 90 %",
    "kl-cppd": "KL × CPPD table, residuals and Kullback–Leibler divergence (KLD)",
    "curves": "Learning curves of the selected runs",
    "methods": "Methods",
    "appendix": "Appendix: every other pair of methods, and the detail tables",
}
#: Past this many rows a table or a list of readings is "long" (a 14-method study's body
#: has 26 pairs): its table is set compact, one line a row, and its readings are grouped.
MANY_ROWS = 8
#: Card fields that say what trained a study (its own worker's, or a bundle's).
TRAINING_CARD_FIELDS = (
    "code",
    "python",
    "torch",
    "CUDA",
    "cuDNN",
    "dlordinal",
    "bundle python",
    "bundle packages",
    "bundle cuda",
    "bundle gpus",
)


def per_study(inputs: ReportInputs, part: Callable[[StudyReportInputs], list[str]]) -> list[str]:
    """``part`` of each study, under the study's name when there are several."""
    out: list[str] = []
    for study in inputs.studies:
        if len(inputs.studies) > 1:
            out.append(rh.heading(f"{study.name} ({study.study_id})"))  # names need not be unique
        out.extend(part(study))
    return out


def table_of_rows(frame: pd.DataFrame, *, digits: int = 3) -> str:
    """``frame`` as a report table, set compact (one line a row) when it is long."""
    style = "compact" if len(frame) > MANY_ROWS else ""
    return rh.table_html(frame, digits=digits, css_class=style)


def tasks_side_by_side(frame: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """A table with a ``Task`` column as one row per ``keys`` (in their first order) and the
    other columns once per task, headed ``"KL · column"``: half the rows of a long table
    whose columns are narrow (a cell a task lacks is blank)."""
    tasks = list(dict.fromkeys(frame["Task"]))
    values = [c for c in frame.columns if c != "Task" and c not in keys]
    out = frame[list(keys)].drop_duplicates().reset_index(drop=True)
    for task in tasks:
        part = frame[frame["Task"] == task][[*keys, *values]]
        part = part.rename(columns={c: f"{task} · {c}" for c in values})
        out = out.merge(part, on=list(keys), how="left")
    return out.fillna("")


def annotation_noise(params: Mapping[str, Any]) -> float:
    """The phantom's annotation noise: its parameter, else the generator's default."""
    return float(params.get("annotation_noise", PhantomSpec().annotation_noise))
