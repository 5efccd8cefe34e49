"""The Launch page's import of a folder of films: the folder and its layout, the check with a
progress bar, one table of every problem (each cell in full), and registering the good films;
the problems table is shared with the Data page. What is shown is built in
``pages/present/import_view.py``.

Nothing is queued while the folder's problems are unresolved: the Launch page asks
`import_dataset` for the dataset, which it gives only once the films are registered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from engine.config import SpecError
from engine.films import ImportSourceError, check_import
from jobs.services import lab
from jobs.services.importer import ImportRefused, import_detector
from jobs.services.page_store import StoreError
from jobs.services.review import reviewed_spec
from pages.present.import_view import (
    LAYOUT_LABELS,
    SPLIT_LABELS,
    ImportRequest,
    ProgressThrottle,
    counts_text,
    graded_counts,
    import_blocker,
    left_out_text,
    planned_detector_text,
    problems_csv,
    problems_cut_text,
    problems_shown,
    resolve_import_path,
)
from pages.present.user_text import plain, said
from pages.widgets.reads import cached_datasets
from pages.widgets.sign_in import current_account

#: Session state of the import: the request checked, its report, and what was registered.
IMPORT_KEY = "launch_import"


#: Up to this many problems the table is as tall as its rows; a longer report scrolls
#: inside a box of `PROBLEMS_HEIGHT_PX` with its header kept in view.
PROBLEMS_SHOWN_IN_FULL = 15
PROBLEMS_HEIGHT_PX = 560


def show_problems(problems: pd.DataFrame) -> None:
    """One table of every problem: file, CSV row, severity, problem, what to do.

    A static table, not an interactive one: ``st.dataframe`` cuts a cell at its column's
    width, and the problem and what to do about it are what the reader came for; here every
    cell wraps and is read in full.
    """
    long = len(problems) > PROBLEMS_SHOWN_IN_FULL
    st.table(
        problems_shown(problems),
        hide_index=True,
        border="horizontal",
        height=PROBLEMS_HEIGHT_PX if long else "content",
    )
    if cut := problems_cut_text(len(problems)):
        st.caption(cut)


def import_dataset(
    path: Path, report_area: Any
) -> tuple[dict[str, Any], dict[str, int], str | None]:
    """The import form: check the folder, show its report, register its good films.

    Args:
        path: The store.
        report_area: A full-width container for the report and the register buttons (the
            inputs stay in the form's column; a table of problems needs the width).

    Returns:
        The study's ``dataset`` mapping (the registered dataset's spec, empty before), its
        good films per task, and why nothing can be queued yet (None once registered).
    """
    request = import_inputs()
    state = st.session_state.get(IMPORT_KEY)
    checked = st.button(
        "Check the folder",
        key="launch_import_check",
        icon=":material/fact_check:",
        help="Reads every row and decodes every film; nothing is registered or queued.",
    )
    if checked:
        state = run_check(request)
    current = state is not None and state["request"] == request
    with report_area:
        if state is not None and not current:
            st.info("The folder or its settings changed since the last check: check it again.")
        if current and state is not None:
            st.markdown("**Import report**")
            show_report(state)
            if state.get("report") is not None and not state.get("registered"):
                register_buttons(state, path)
        blocker = import_blocker(state, request)
        if blocker is not None or state is None:
            return {}, {"KL": 0, "CPPD": 0}, blocker
        return registered_dataset(state, path)


def import_inputs() -> ImportRequest:
    """Folder, optional labels CSV, layout, and for grade folders their own split."""
    folder = st.text_input(
        "Film folder",
        key="launch_folder",
        persist_state="session",
        placeholder="/data/knees",
        help="A folder on this machine (the worker's) holding the films: DICOM, PNG, "
        "JPEG or TIFF, in one of the layouts below.",
    )
    labels_csv = st.text_input(
        "Labels CSV (optional)",
        key="launch_labels_csv",
        persist_state="session",
        placeholder="empty: labels.csv in the folder",
        help="One row per film: image (its path in the folder), patient_id, optional side "
        "(L/R), kl 0–4 and/or cppd 0–3. For DICOM files, rows may name the film by "
        "sop_instance_uid instead. Grade folders need no CSV.",
    )
    c1, c2 = st.columns(2)
    layout = c1.selectbox(
        "Layout",
        list(LAYOUT_LABELS),
        format_func=LAYOUT_LABELS.__getitem__,
        key="launch_import_layout",
        persist_state="session",
    )
    layout_split = "ignore"
    if layout in ("auto", "grade_folders"):
        layout_split = c2.selectbox(
            "Grade folders' own train/val/test split",
            list(SPLIT_LABELS),
            format_func=SPLIT_LABELS.__getitem__,
            key="launch_import_split",
            persist_state="session",
            help="Only for grade folders under train/val/test.",
        )
    st.caption(planned_detector_text(import_detector()))
    return ImportRequest(folder.strip(), labels_csv.strip(), layout, layout_split)


def run_check(request: ImportRequest) -> dict[str, Any]:
    """Check the folder with a progress bar; the new import state (kept in the session)."""
    state: dict[str, Any] = {"request": request, "report": None, "registered": None}
    bar = st.progress(0.0, text="Reading the folder…")
    try:
        # Typed paths become paths only through resolve_import_path (the lab server confines
        # them to its data roots there).
        folder = resolve_import_path(request.folder)
        labels = resolve_import_path(request.labels_csv) if request.labels_csv else None
        throttle = ProgressThrottle(lambda f, text: bar.progress(f, text=text))
        state["report"] = check_import(
            folder,
            labels_csv=labels,
            layout=request.layout,
            layout_split=request.layout_split,
            progress=throttle,
            detector=import_detector(),
            rows_progress=throttle.rows,  # a large labels CSV takes seconds before any film
        )
    except (ImportSourceError, ValueError, OSError) as exc:
        state["error"] = str(exc)
    bar.empty()
    st.session_state[IMPORT_KEY] = state
    return state


def show_report(state: dict[str, Any]) -> None:
    """The check's outcome: one table of every problem with its counts, or why it failed."""
    report = state.get("report")
    if report is None:
        st.error(f"**The folder cannot be imported.** {said(state.get('error'))}")
        return
    if report.clean:
        st.success(f"Every film is good. {counts_text(report)}", icon=":material/check_circle:")
    else:
        st.markdown(counts_text(report))
        show_problems(report.problems)
        if report.left_out:
            st.markdown(left_out_text(report.left_out))
        st.download_button(
            "Download report (CSV)",
            problems_csv(report.problems),
            file_name="import-report.csv",
            mime="text/csv",
            key="launch_import_report_csv",
            icon=":material/download:",
        )
    for note in report.notes:  # they name the folder's files: text, never markdown
        st.caption(plain(note))


def register_buttons(state: dict[str, Any], path: Path) -> None:
    """Register the films: directly when no film is bad, else only by skipping the bad."""
    report = state["report"]
    if report.films.empty:
        st.warning("No film is good, so there is nothing to register: fix them and check again.")
        return
    name = st.text_input(
        "Dataset name",
        value=report.root.name,
        key="launch_import_name",
        help="What the Data page calls this import.",
    )
    if report.n_errors:
        label = f"Skip the bad films and register the {len(report.films)} good ones"
        key, skip_bad = "launch_import_skip_bad", True
        st.caption(
            "Or fix the files listed above and check again. Skipped films stay in the report, "
            "kept with the dataset (Data page)."
        )
    else:
        label, key, skip_bad = (
            f"Register the {len(report.films)} films",
            "launch_import_register",
            False,
        )
    if st.button(label, key=key, icon=":material/library_add:"):
        register(state, name, skip_bad=skip_bad, path=path)


def register(state: dict[str, Any], name: str, *, skip_bad: bool, path: Path) -> None:
    """Register the good films as a dataset (a small write, like a job request)."""
    account = current_account()
    if account is None:  # the page guard lets no one here signed out; said, not assumed
        st.error("Nothing was registered: sign in first.")
        return
    try:
        done = lab.register_import(
            account,
            state["report"],
            name=name.strip() or None,
            skip_bad=skip_bad,
            path=path,
        )
    except (ImportRefused, StoreError, OSError, ValueError) as exc:
        st.error(f"Nothing was registered: {said(exc)}")
        return
    state["registered"] = {
        "dataset_id": done.dataset_id,
        "import_id": done.import_id,
        "n_films": done.n_films,
        "n_left_out": done.n_left_out,
    }
    st.session_state[IMPORT_KEY] = state
    cached_datasets.clear()
    st.rerun()


def registered_dataset(
    state: dict[str, Any], path: Path
) -> tuple[dict[str, Any], dict[str, int], str | None]:
    """The registered dataset (with its crop review, if someone reviewed it) for the study."""
    done = state["registered"]
    st.success(
        f"Registered **{plain(done['dataset_id'])}**: {done['n_films']} film(s), "
        f"{done['n_left_out']} left out. Its report is kept on the Data page; its crops can "
        "be checked on the Review crops page.",
        icon=":material/library_add_check:",
    )
    try:
        reviewed = reviewed_spec(done["dataset_id"], store_path=path)
    except (StoreError, SpecError) as exc:
        return {}, {"KL": 0, "CPPD": 0}, f"the registered dataset cannot be read: {said(exc)}"
    if reviewed.reviewed:
        st.caption(
            f"Its crop review applies: {reviewed.n_excluded} film(s) left out, "
            f"{reviewed.n_boxes} box(es) corrected."
        )
    dataset = {"kind": reviewed.spec.kind, **reviewed.spec.params}
    return dataset, graded_counts(state["report"].films), None
