"""Data: what the synthetic knee phantom is, the datasets in the store with their grades and
the rule that made their splits, an imported dataset's import report and crop review, and a
small gallery of phantom films per KL and CPPD grade with the lesion masks on top."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from engine.vocab import GRADE_SIGNS
from jobs.services.page_store import StoreError
from jobs.services.review import base_dataset_id
from pages.present.data_view import dataset_settings, grade_counts, joint_table
from pages.present.user_text import plain, said
from pages.widgets import view_state
from pages.widgets.data_sections import (
    show_detector_licence,
    show_gallery,
    show_import_report,
    show_split_rules,
)
from pages.widgets.reads import cached_dataset_labels, cached_datasets, store_path
from pages.widgets.shell import page_title, run_inside_shell
from pages.widgets.sign_in import require_page

KL_SIGNS = GRADE_SIGNS["KL"]
CPPD_SIGNS = GRADE_SIGNS["CPPD"]


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
        st.error(f"The datasets cannot be read right now: {said(exc)}")
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
    chosen = view_state.linked(
        st.selectbox,
        "Grades of dataset",
        list(datasets["dataset_id"]),
        key="data_dataset",
        what="dataset",
        format_func=lambda d: f"{d} ({datasets.set_index('dataset_id').at[d, 'kind']})",
    )
    try:
        labels = cached_dataset_labels(path, chosen)
    except StoreError as exc:
        st.error(f"The grades of {plain(chosen)} cannot be read right now: {said(exc)}")
        return
    counts_col, joint_col = st.columns([2, 3], gap="large")
    with counts_col:
        st.markdown("**Images per recorded grade**")
        counts = grade_counts(labels)
        # CPPD has no grade 4: show a dash there rather than "None".
        # Text cells and a text index: a "—" in an integer column, or "total" among the
        # integer grades, cannot travel to the browser as Arrow.
        shown = counts.astype("string").fillna("—").rename(index=str)
        st.dataframe(shown, width="stretch")
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
            f"This is **{plain(base)}** with a crop review applied (excluded films left out, "
            "corrected boxes used); it was registered when a study first used it."
        )
    show_split_rules(path, chosen)
    show_import_report(path, chosen)


run_inside_shell()
require_page(__file__)
page_title("Data")
show_phantom()
show_datasets(str(store_path()))
show_gallery()
show_detector_licence()
view_state.share_link()
