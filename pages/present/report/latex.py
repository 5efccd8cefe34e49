"""The report's tables as booktabs LaTeX (`python -m jobs report --latex-dir DIR`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pages.present.report.common as common
from engine.analysis import paired
from engine.analysis.metrics import METRIC_LABELS
from jobs.services import study_analysis
from pages.present import reviewer_tables, stat_tables, tables
from pages.present.report.common import PRIMARY, ReportInputError, check_studies
from pages.present.report.comparisons import bootstrap_frame, endpoint_frame
from pages.present.report.intervals import table4_frame
from store import studies as store_studies
from store.db import default_store_path
from store.outputs import OutputRefused, check_output, write_text


def report_latex(study_ids: Sequence[str], *, path: Path | str | None = None) -> dict[str, str]:
    """The report's tables as booktabs LaTeX, file name -> text: per study, Table 4 with its
    intervals, the primary endpoint, every pair on the primary metric (the pages'
    `reviewer_tables.paired_latex`) and the film-sampling bootstrap; tables without rows are
    left out.

    Raises:
        ReportInputError: no study named, or a study the store does not hold.
    """
    store = Path(path) if path is not None else default_store_path()
    check_studies(study_ids, store)
    out: dict[str, str] = {}
    metric = METRIC_LABELS[PRIMARY]
    for study_id in study_ids:
        name = store_studies.get_study(study_id, path=store).name
        label = re.sub(r"[^A-Za-z0-9]+", "-", study_id).strip("-")
        intervals = study_analysis.mean_intervals(study_id, path=store)
        table = study_analysis.paired_table(
            study_id, metrics=(PRIMARY,), n_boot=common.N_BOOT, path=store
        )
        endpoint = paired.primary_endpoint(table) if len(table) else table
        frames = {
            "table4": (table4_frame(intervals), f"Test metrics, {paired.MEAN_CI_KIND}"),
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


def write_latex(
    study_ids: Sequence[str],
    folder: Path,
    *,
    force: bool = False,
    path: Path | str | None = None,
) -> list[Path]:
    """Write `report_latex`'s tables into ``folder`` (made if missing); returns the files.
    Each goes through `store.outputs.write_text`: none through a link, none over an existing
    file unless ``force`` (every name is checked before the first is written).

    Raises:
        ReportInputError: bad studies, or a folder or file that cannot be written.
    """
    texts = report_latex(study_ids, path=path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name in texts:
            check_output(folder / name, force=force)
        written = []
        for name, text in texts.items():
            write_text(folder / name, text, force=force)
            written.append(folder / name)
    except OutputRefused as exc:
        raise ReportInputError(str(exc)) from exc
    except OSError as exc:
        raise ReportInputError(
            f"{str(folder)!r} cannot be written ({exc.strerror or exc})"
        ) from exc
    return written
