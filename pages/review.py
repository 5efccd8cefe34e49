"""Review crops: an imported dataset's crops in a grid, worst detector confidence first,
filtered by grade and problem; each film can be excluded or its box corrected (typed
coordinates, or two clicks on the film). Decisions are stored at once and used by the next
study queued on the dataset (its cache crops with them and leaves excluded films out).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from engine.datasets import PreparedDataset
from jobs.services.page_store import (
    Account,
    StoreError,
    crop_reviews,
    import_problems,
    latest_import,
    list_imports,
    softgrade_home,
)
from jobs.services.review import REVIEW_PARAM
from pages.present.import_view import ProgressThrottle
from pages.present.review_view import REVIEW_PX, prepare_review_crops, review_counts, review_table
from pages.present.user_text import plain, said
from pages.widgets import view_state
from pages.widgets.reads import cached_datasets, store_path
from pages.widgets.review_widgets import filters, show_film, show_grid, show_retrain
from pages.widgets.shell import page_title, run_inside_shell
from pages.widgets.sign_in import require_page


def pick_dataset(path: Path) -> tuple[str, dict[str, Any]] | None:
    """The imported (folder) dataset to review, or None (with why) when there is none."""
    try:
        datasets = cached_datasets(str(path))
        names = list_imports(path=path).drop_duplicates("dataset_id").set_index("dataset_id")
    except StoreError as exc:
        st.error(f"The datasets cannot be read right now: {said(exc)}")
        return None
    params = {row.dataset_id: json.loads(row.params) for row in datasets.itertuples()}
    folders = [
        row.dataset_id
        for row in datasets.itertuples()
        if row.kind == "folder" and REVIEW_PARAM not in params[row.dataset_id]
    ]
    if not folders:
        st.info(
            "No folder of films is registered yet. Import one on the Launch page (Dataset → "
            "Import a folder of films) or with `python -m jobs import PATH`, then review its "
            "crops here."
        )
        return None
    sizes = datasets.set_index("dataset_id")["n_images"]

    def label(dataset_id: str) -> str:
        name = names.at[dataset_id, "name"] if dataset_id in names.index else "folder"
        return f"{name} · {dataset_id} · {sizes[dataset_id]} films"

    chosen = view_state.linked(
        st.selectbox, "Dataset", folders, key="review_dataset", what="dataset", format_func=label
    )
    return chosen, params[chosen]


def open_crops(dataset_id: str, params: dict[str, Any]) -> PreparedDataset | None:
    """The review crops' images and meta (built with a progress bar the first time)."""
    bar = st.empty()
    show = ProgressThrottle(lambda f, text: bar.progress(f, text=text), verb="Cropped")
    try:
        data = prepare_review_crops(dataset_id, params, softgrade_home(), progress=show)
    except (ValueError, OSError) as exc:
        st.error(f"The films of {plain(dataset_id)} cannot be cropped for review: {said(exc)}")
        data = None
    bar.empty()
    return data


def review_state(path: Path, dataset_id: str) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The dataset's review decisions and its import's problems (none if not imported)."""
    try:
        reviews = crop_reviews(dataset_id, path=path)
        summary = latest_import(dataset_id, path=path)
        problems = (
            import_problems(summary.import_id, path=path)
            if summary is not None
            else pd.DataFrame(columns=["file", "kind"])
        )
    except StoreError as exc:
        st.error(f"The review of {plain(dataset_id)} cannot be read right now: {said(exc)}")
        return None
    return reviews, problems


def review_dataset(path: Path, dataset_id: str, params: dict[str, Any], account: Account) -> None:
    """The crops of one dataset, filtered, and the film picked for review."""
    data = open_crops(dataset_id, params)
    state = review_state(path, dataset_id)
    if data is None or state is None:
        return
    table = review_table(data.meta, *state)
    st.markdown(review_counts(table))
    shown = filters(table)
    show_grid(shown, data.images)
    show_film(table, path, dataset_id)
    show_retrain(path, dataset_id, account)


run_inside_shell()
account = require_page(__file__)
page_title("Review crops")
st.caption(
    "Check where the detector put each knee before training on it: crops come worst "
    "confidence first. Exclude films that are not usable knee radiographs, or correct a "
    f"box by typing its corners or clicking two of them on the film. Crops are {REVIEW_PX} px "
    "here; studies crop the same box at their own size."
)
store = store_path()
picked = pick_dataset(store)
view_state.share_link()
if picked is not None:
    review_dataset(store, *picked, account)
