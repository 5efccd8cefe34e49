"""The Data page's sections: an imported dataset's import report (counts, every problem,
the films left out, what crop review decided) and the gallery of phantom films per grade.
Streamlit widgets, so no unit tests of their own: the page's AppTests (tests/app/test_data.py)
drive them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from engine import phantom
from engine.detect import crop_and_resize, yolo_available
from jobs.services.page_store import (
    ImportSummary,
    StoreError,
    crop_reviews,
    import_problems,
    latest_import,
    split_rules,
)
from pages.present.data_view import MASK_COLOURS, overlay_mask, pick_examples, split_rule_note
from pages.present.import_view import detector_text, left_out_films, report_csv, summary_counts
from pages.present.user_text import code, plain, said
from pages.widgets.import_form import show_problems

LAYER_NAMES = {
    "joint_space": "joint space",
    "osteophytes": "osteophytes",
    "sclerosis": "sclerosis",
    "calcifications": "calcifications",
}
GALLERY_PX = 256  # every crop is shown at this size so the rows line up
GALLERY_MARGIN = 0.08  # of the knee box's side, on each side of the crop
GALLERY_FILMS = 900  # a phantom of this size has every grade; only the films shown are drawn


@st.cache_data(ttl=10, show_spinner=False)
def cached_split_rules(path: str, dataset_id: str) -> pd.DataFrame:
    """Which rule made each stored split of a dataset (seed, rule)."""
    return split_rules(dataset_id, path=path)


def show_split_rules(path: str, dataset_id: str) -> None:
    """Which rule made the dataset's train/validation/test splits, per seed when mixed."""
    try:
        rules = cached_split_rules(path, dataset_id)
    except StoreError as exc:
        st.caption(f"The splits of {plain(dataset_id)} cannot be read right now: {said(exc)}")
        return
    st.markdown(split_rule_note(rules))


@st.cache_data(ttl=10, show_spinner=False)
def cached_import(path: str, dataset_id: str) -> tuple[ImportSummary | None, pd.DataFrame]:
    """A dataset's latest import and its problems (None and no rows without an import)."""
    summary = latest_import(dataset_id, path=path)
    if summary is None:
        return None, pd.DataFrame()
    return summary, import_problems(summary.import_id, path=path)


def show_import_report(path: str, dataset_id: str) -> None:
    """An imported dataset's report: counts, every problem (as CSV too), the detector that
    located its knees, the films left out, and what crop review decided."""
    try:
        summary, problems = cached_import(path, dataset_id)
        reviews = crop_reviews(dataset_id, path=path)
    except StoreError as exc:
        st.error(f"The import report of {plain(dataset_id)} cannot be read right now: {said(exc)}")
        return
    if summary is None:
        return
    st.markdown(f"**Import report** · {plain(summary.name)} · from {code(summary.source)}")
    for col, (label, value) in zip(st.columns(6), summary_counts(summary), strict=True):
        col.metric(label, value)
    detector = detector_text(summary.detector, summary.detector_iou, summary.detector_map)
    skipped = ", bad films skipped" if summary.skip_bad else ""
    st.caption(
        f"Knees located by {detector}. Imported {summary.created_at:%Y-%m-%d %H:%M}, "
        f"{summary.layout} layout{skipped}."
    )
    show_problem_table(summary, problems)
    show_left_out(left_out_films(problems), reviews)


def show_problem_table(summary: ImportSummary, problems: pd.DataFrame) -> None:
    """Every problem of the import, and the same table as a CSV download."""
    if problems.empty:
        st.success("The check found no problem.", icon=":material/check_circle:")
        return
    show_problems(problems)
    st.download_button(
        "Download report (CSV)",
        report_csv(problems, summary),
        file_name=f"{summary.name}-import-report.csv",
        mime="text/csv",
        key="data_import_download",
        icon=":material/download:",
    )


def show_left_out(left_out: list[str], reviews: pd.DataFrame) -> None:
    """The films the check left out and those crop review excluded; what review corrected."""
    excluded = reviews.loc[reviews["action"] == "exclude", "image_id"].tolist()
    if left_out or excluded:
        title = f"Films left out: {len(left_out)} by the check, {len(excluded)} by crop review"
        with st.expander(title):
            if left_out:
                st.markdown("By the import check: " + ", ".join(code(f) for f in left_out))
            if excluded:
                st.markdown("By crop review: " + ", ".join(code(f) for f in excluded))
    if len(reviews):
        n_boxes = int((reviews["action"] == "box").sum())
        st.caption(
            f"Crop review: {len(excluded)} film(s) excluded, {n_boxes} box(es) corrected; "
            "studies queued from the Launch page from now on use them."
        )


@st.cache_data(show_spinner=False, max_entries=16)
def gallery_labels(seed: int) -> pd.DataFrame:
    """The label rows of a gallery phantom (nothing is drawn yet)."""
    return phantom.phantom_labels(
        phantom.PhantomSpec(n_images=GALLERY_FILMS, n_joint=400, seed=seed)
    )


@st.cache_data(show_spinner=False, max_entries=128)
def gallery_film(seed: int, film_index: int) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """One drawn film of the gallery phantom: (film, mask, knee box)."""
    spec = phantom.PhantomSpec(n_images=GALLERY_FILMS, n_joint=400, seed=seed)
    row = gallery_labels(seed).iloc[film_index]
    return phantom.render_film(spec, row)


def render_gallery(examples: pd.DataFrame, column: str, *, seed: int, overlay: bool) -> None:
    """One row of films, one per grade of ``column``."""
    cols = st.columns(len(examples))
    for col, (_, row) in zip(cols, examples.iterrows(), strict=True):
        film, mask, box = gallery_film(seed, int(row["film_index"]))
        image = overlay_mask(film, mask, phantom.MASK_BITS) if overlay else film
        image = crop_and_resize(image, box, GALLERY_PX, margin=GALLERY_MARGIN)
        grade = int(row[column])
        other = "cppd" if column == "kl" else "kl"
        other_text = "" if pd.isna(row[other]) else f" · {other.upper()} {int(row[other])}"
        side = "left" if row["side"] == "L" else "right"
        col.image(image, caption=f"{column.upper()} {grade}{other_text} · {side} knee")


def show_gallery() -> None:
    """One phantom film per KL and per CPPD grade, with the lesion masks on request."""
    st.subheader("Phantom films by grade", divider="gray")
    c1, c2, c3 = st.columns([1, 1, 2], vertical_alignment="bottom")
    show = c1.toggle("Show example films", value=True, key="data_gallery")
    overlay = c2.toggle(
        "Mark the lesions",
        value=False,
        key="data_mask_overlay",
        help="Colour the areas the phantom drew each sign in (its ground-truth masks).",
    )
    seed = c3.number_input(
        "Phantom seed",
        min_value=0,
        value=0,
        step=1,
        key="data_gallery_seed",
        help="Another seed draws other films.",
    )
    if not show:
        return
    if overlay:
        st.markdown(
            " ".join(
                f"<span style='color: rgb{MASK_COLOURS[name]}'>■</span> {label}"
                for name, label in LAYER_NAMES.items()
            ),
            unsafe_allow_html=True,
        )
    labels = gallery_labels(int(seed))
    st.markdown("**One film per KL grade**")
    render_gallery(pick_examples(labels, "kl"), "kl", seed=int(seed), overlay=overlay)
    st.markdown("**One film per CPPD grade**")
    render_gallery(pick_examples(labels, "cppd"), "cppd", seed=int(seed), overlay=overlay)
    st.caption(
        "Zoomed to the knee box the phantom records (the detector finds it in training). "
        "The films' grades are the recorded ones; each example is chosen where the recorded "
        "grade equals the true one."
    )


def show_detector_licence() -> None:
    """Which knee detector this installation can use, and what the optional YOLO one's
    licence (AGPL-3.0) means for a lab that serves the app (docs/licences.md)."""
    with st.expander("Knee detectors and their licences"):
        if yolo_available():
            st.markdown(
                "This installation has the optional **YOLOv8n knee detector** (ultralytics, "
                "**AGPL-3.0**). Inside the lab that asks nothing of you. If this app is served "
                "to people outside your organisation, AGPL-3.0 asks you to offer them the "
                "source code of what they use, your own changes included. To avoid that, "
                "install SoftGrade without the `yolo` extra: the classical detector then "
                "locates knees."
            )
        else:
            st.markdown(
                "Knees are located by the **classical detector** (SoftGrade's own, "
                "Apache-2.0). The trainable YOLOv8n detector needs the optional `yolo` extra "
                "(`pip install 'softgrade[yolo]'`), which brings ultralytics under **AGPL-3.0**: "
                "serving the app with it to people outside your organisation means offering "
                "them its source code, your changes included."
            )
