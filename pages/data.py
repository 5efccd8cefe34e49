"""Data: what the synthetic knee phantom is, the datasets in the store and their grades, an
imported dataset's import report and crop review, and a small gallery of phantom films per
KL and CPPD grade with the lesion masks on top."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import streamlit as st

from engine import phantom
from engine.detect import crop_and_resize
from engine.vocab import GRADE_SIGNS
from jobs.review import base_dataset_id
from pages._data_view import (
    MASK_COLOURS,
    dataset_settings,
    grade_counts,
    joint_table,
    overlay_mask,
    pick_examples,
)
from pages._import_form import show_problems
from pages._import_view import detector_text, left_out_films, report_csv, summary_counts
from pages._ui import (
    cached_dataset_labels,
    cached_datasets,
    require_page,
    run_inside_shell,
    store_path,
)
from store.db import StoreError
from store.imports import ImportSummary, import_problems, latest_import
from store.reviews import crop_reviews

KL_SIGNS = GRADE_SIGNS["KL"]
CPPD_SIGNS = GRADE_SIGNS["CPPD"]
LAYER_NAMES = {
    "joint_space": "joint space",
    "osteophytes": "osteophytes",
    "sclerosis": "sclerosis",
    "calcifications": "calcifications",
}
GALLERY_PX = 256  # every crop is shown at this size so the rows line up
GALLERY_MARGIN = 0.08  # of the knee box's side, on each side of the crop
GALLERY_FILMS = 900  # a phantom of this size has every grade; only the films shown are drawn


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


def show_phantom() -> None:
    """What the phantom draws for each KL and CPPD grade."""
    st.markdown(
        "The lab's radiographs are private, so SoftGrade ships a **synthetic knee phantom**: "
        "anteroposterior knee films drawn from a seed, with known grades. Femur, tibia, fibula "
        "and patella are drawn with a bright cortex and textured bone, placed at a random "
        "position, size and slight tilt on a larger film, with varying exposure, blur and noise "
        "and the odd side marker or collimation edge, which a model has to ignore."
    )
    left, right = st.columns(2, gap="large")
    with left:
        st.markdown("**KL grade** (osteoarthritis) drives the bone signs")
        st.dataframe(
            pd.DataFrame({"KL": list(KL_SIGNS), "what the phantom draws": list(KL_SIGNS.values())}),
            hide_index=True,
            width="stretch",
        )
    with right:
        st.markdown("**CPPD grade** (chondrocalcinosis) drives calcium deposits")
        st.dataframe(
            pd.DataFrame(
                {"CPPD": list(CPPD_SIGNS), "what the phantom draws": list(CPPD_SIGNS.values())}
            ),
            hide_index=True,
            width="stretch",
        )
    st.caption(
        "Deposits are thin bright lines along the cartilage and fuzzy densities in the menisci. "
        "Marked narrowing at high KL partly hides them, as in real films, and neighbouring "
        "grades overlap. Grades follow the paper's KL × CPPD counts; about 10 % of recorded "
        "grades are moved to an adjacent grade (annotation noise) and the true grade is kept "
        "as well."
    )


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
        st.error(f"The import report of {dataset_id} cannot be read right now: {exc}")
        return
    if summary is None:
        return
    st.markdown(f"**Import report** · {summary.name} · from `{summary.source}`")
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
    show_problems(problems, key="data_import_problems")
    st.download_button(
        "Download report (CSV)",
        report_csv(problems),
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
                st.markdown("By the import check: " + ", ".join(f"`{f}`" for f in left_out))
            if excluded:
                st.markdown("By crop review: " + ", ".join(f"`{f}`" for f in excluded))
    if len(reviews):
        n_boxes = int((reviews["action"] == "box").sum())
        st.caption(
            f"Crop review: {len(excluded)} film(s) excluded, {n_boxes} box(es) corrected; "
            "studies queued from the Launch page from now on use them."
        )


def show_datasets(path: str) -> None:
    """The datasets in the store, and the grades of the one picked."""
    st.subheader("Datasets in the store", divider="gray")
    st.caption(
        "Your own films (DICOM, PNG, JPEG or TIFF) come in from the Launch page (Dataset → "
        "Import a folder of films) or `python -m jobs import`; an import is listed here with "
        "its report as soon as it is registered, and its crops can be checked on the Review "
        "crops page. The phantom is listed once a study has prepared it."
    )
    try:
        datasets = cached_datasets(path)
    except StoreError as exc:
        st.error(f"The datasets cannot be read right now: {exc}")
        datasets = pd.DataFrame()
    if datasets.empty:
        st.info(
            "No dataset is registered yet. The first study you launch registers its dataset "
            "(the phantom by default), with every image and grade."
        )
        return
    st.dataframe(
        dataset_settings(datasets),
        hide_index=True,
        width="stretch",
        column_config={
            "dataset_id": "dataset",
            "n_images": st.column_config.NumberColumn("images"),
            "n_kl": st.column_config.NumberColumn("KL grades"),
            "n_cppd": st.column_config.NumberColumn("CPPD grades"),
            "created_at": st.column_config.DatetimeColumn("registered", format="YYYY-MM-DD HH:mm"),
        },
    )
    chosen = st.selectbox(
        "Grades of dataset",
        list(datasets["dataset_id"]),
        format_func=lambda d: f"{d} ({datasets.set_index('dataset_id').at[d, 'kind']})",
        key="data_dataset",
    )
    try:
        labels = cached_dataset_labels(path, chosen)
    except StoreError as exc:
        st.error(f"The grades of {chosen} cannot be read right now: {exc}")
        return
    counts_col, joint_col = st.columns([2, 3], gap="large")
    with counts_col:
        st.markdown("**Images per recorded grade**")
        counts = grade_counts(labels)
        # CPPD has no grade 4: show a dash there rather than "None".
        st.dataframe(counts.astype(object).where(counts.notna(), "—"), width="stretch")
    with joint_col:
        st.markdown("**KL × CPPD** (images graded for both)")
        st.dataframe(
            joint_table(labels).rename(columns=lambda c: f"CPPD {c}", index=lambda i: f"KL {i}"),
            width="stretch",
        )
    row = datasets.set_index("dataset_id").loc[chosen]
    base = base_dataset_id(row["kind"], json.loads(row["params"]))
    if base is not None:
        st.caption(
            f"This is **{base}** with a crop review applied (excluded films left out, "
            "corrected boxes used); it was registered when a study first used it."
        )
    show_import_report(path, chosen)


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


run_inside_shell()
require_page("data")
st.title("Data")
show_phantom()
show_datasets(str(store_path()))
show_gallery()
