"""Review crops: an imported dataset's crops in a grid, worst detector confidence first,
filtered by grade and problem; each film can be excluded or its box corrected (typed
coordinates, or two clicks on the film). Decisions are stored at once and used by the next
study queued on the dataset (its cache crops with them and leaves excluded films out).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
from streamlit_image_coordinates import streamlit_image_coordinates

from engine.data import PreparedDataset
from engine.detect import crop_and_resize
from engine.importing import read_film_file
from engine.vocab import TOP_GRADE
from jobs.review import REVIEW_PARAM
from pages._import_view import ProgressThrottle
from pages._review_view import (
    CANDIDATE,
    DETECTED,
    GRID_COLUMNS,
    PAGE_SIZE,
    REVIEW_PX,
    REVIEWED,
    box_on_film,
    click_on_film,
    clicks_box,
    detected_box,
    draw_boxes,
    filter_review,
    grade_options,
    prepare_review_crops,
    problem_filters,
    review_counts,
    review_table,
    reviewed_box,
    tile_caption,
)
from pages._ui import cached_datasets, link_to_page, require_page, run_inside_shell, store_path
from store.db import StoreError, softgrade_home
from store.imports import import_problems, latest_import, list_imports
from store.reviews import clear_review, crop_reviews, record_review, reviewed_boxes

BOX_KEYS = ("review_x0", "review_y0", "review_x1", "review_y1")
PREVIEW_PX = 192


@st.cache_data(max_entries=8, show_spinner=False)
def film_pixels(source: str) -> np.ndarray:
    """A film as (H, W) uint8 grey (the few last looked at are kept)."""
    return read_film_file(Path(source))


@st.cache_data(max_entries=256, show_spinner=False)
def reviewed_crop(source: str, box: tuple[int, int, int, int], size: int) -> np.ndarray:
    """A film cropped around a reviewed box, as the next study's cache will crop it."""
    return crop_and_resize(film_pixels(source), box, size)


def pick_dataset(path: Path) -> tuple[str, dict[str, Any]] | None:
    """The imported (folder) dataset to review, or None (with why) when there is none."""
    try:
        datasets = cached_datasets(str(path))
        names = list_imports(path=path).drop_duplicates("dataset_id").set_index("dataset_id")
    except StoreError as exc:
        st.error(f"The datasets cannot be read right now: {exc}")
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

    chosen = st.selectbox("Dataset", folders, format_func=label, key="review_dataset")
    return chosen, params[chosen]


def open_crops(dataset_id: str, params: dict[str, Any]) -> PreparedDataset | None:
    """The review crops' images and meta (built with a progress bar the first time)."""
    bar = st.empty()
    show = ProgressThrottle(lambda f, text: bar.progress(f, text=text), verb="Cropped")
    try:
        data = prepare_review_crops(dataset_id, params, softgrade_home(), progress=show)
    except (ValueError, OSError) as exc:
        st.error(f"The films of {dataset_id} cannot be cropped for review: {exc}")
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
        st.error(f"The review of {dataset_id} cannot be read right now: {exc}")
        return None
    return reviews, problems


def filters(table: pd.DataFrame) -> pd.DataFrame:
    """Grade and problem filters; the films they keep, worst confidence first."""
    c1, c2, c3 = st.columns([1, 1, 2])
    kl = c1.selectbox("KL grade", grade_options(TOP_GRADE["KL"]), key="review_kl")
    cppd = c2.selectbox("CPPD grade", grade_options(TOP_GRADE["CPPD"]), key="review_cppd")
    problem = c3.selectbox("Problem", problem_filters(table), key="review_problem")
    return filter_review(table, kl=kl, cppd=cppd, problem=problem)


def show_grid(shown: pd.DataFrame, images: np.ndarray) -> None:
    """One page of crops, each with its caption and a button to review it."""
    if shown.empty:
        st.info("No film matches these filters.")
        return
    pages = max(1, math.ceil(len(shown) / PAGE_SIZE))
    page = 1
    if pages > 1:
        page = int(
            st.number_input(f"Page (of {pages})", 1, pages, 1, step=1, key="review_grid_page")
        )
    rows = shown.iloc[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    for start in range(0, len(rows), GRID_COLUMNS):
        for col, row in zip(
            st.columns(GRID_COLUMNS),
            rows.iloc[start : start + GRID_COLUMNS].itertuples(),
            strict=False,
        ):
            with col:
                st.image(tile_image(row, images), caption=tile_caption(row), width="stretch")
                st.button(
                    "Review",
                    key=f"review_pick_{row.image_id}",
                    on_click=pick_film,
                    args=(row.image_id,),
                    width="stretch",
                )


def pick_film(image_id: str) -> None:
    """Open a film for review (a grid button's callback: runs before the picker is drawn)."""
    st.session_state["review_film"] = image_id


def tile_image(row: Any, images: np.ndarray) -> np.ndarray:
    """A film's crop as the next study will see it: the reviewed box's crop, or the
    detector's; excluded films dimmed."""
    box = reviewed_box(row)
    crop = reviewed_crop(row.source, box, REVIEW_PX) if box else np.asarray(images[row.crop])
    return crop // 3 if row.decision == "exclude" else crop


def show_film(table: pd.DataFrame, path: Path, dataset_id: str) -> None:
    """The film picked: its boxes, a box typed or clicked with its crop, and the decisions."""
    st.subheader("Review a film", divider="gray")
    ids = table["image_id"].tolist()
    image_id = st.selectbox(
        "Film (worst confidence first)",
        ids,
        key="review_film",
        help="Or press Review under a crop above.",
    )
    row = next(table[table["image_id"] == image_id].itertuples())
    try:
        film = film_pixels(row.source)
    except (ValueError, OSError) as exc:
        st.error(f"{row.source} cannot be read: {exc}")
        return
    load_box(row, film.shape)
    left, right = st.columns([3, 2], gap="large")
    with left:
        film_with_clicks(row, film)
    with right:
        box = typed_box(film)
        decisions(row, box, path, dataset_id)


def load_box(row: Any, shape: tuple[int, ...]) -> None:
    """Fill the box inputs with the film's current box when another film is picked (a
    detector's box may reach past the film's edge: the inputs stop at the edge)."""
    if st.session_state.get("review_box_for") == row.image_id:
        return
    box = reviewed_box(row) or detected_box(row)
    tops = (shape[1], shape[0], shape[1], shape[0])
    for key, value, top in zip(BOX_KEYS, box, tops, strict=True):
        st.session_state[key] = min(max(int(value), 0), top)
    st.session_state["review_box_for"] = row.image_id
    st.session_state["review_clicks"] = []


def film_with_clicks(row: Any, film: np.ndarray) -> None:
    """The film with its boxes; two clicks on it set the box's corners."""
    take_click(film)
    clicks = st.session_state.get("review_clicks", [])
    typed = tuple(int(st.session_state[k]) for k in BOX_KEYS)
    shown = draw_boxes(
        film,
        [(detected_box(row), DETECTED), (reviewed_box(row), REVIEWED), (typed, CANDIDATE)],
        marks=clicks,
    )
    streamlit_image_coordinates(shown, key="review_clicker", cursor="crosshair")
    st.caption(
        "Green: the detector's box · orange: the stored review's · blue: the box below. "
        "Click two opposite corners of the knee to set the box"
        + (" (one more click)." if clicks else ".")
    )


def take_click(film: np.ndarray) -> None:
    """Turn the clicker's newest click into a corner; the second corner sets the box."""
    value = st.session_state.get("review_clicker")
    if not value or value.get("unix_time") == st.session_state.get("review_last_click"):
        return
    st.session_state["review_last_click"] = value.get("unix_time")
    clicks = [*st.session_state.get("review_clicks", []), click_on_film(value, film.shape)]
    if len(clicks) == 2:
        for key, v in zip(BOX_KEYS, clicks_box(clicks, film.shape), strict=True):
            st.session_state[key] = v
        clicks = []
    st.session_state["review_clicks"] = clicks


def typed_box(film: np.ndarray) -> tuple[int, int, int, int] | None:
    """Box corners typed in film pixels, checked, with the crop they make (None if bad)."""
    h, w = film.shape
    st.markdown(f"**Knee box** in film pixels (the film is {w} × {h})")
    c1, c2 = st.columns(2)
    for col, key, label, top in (
        (c1, "review_x0", "x0 (left)", w),
        (c2, "review_y0", "y0 (top)", h),
        (c1, "review_x1", "x1 (right)", w),
        (c2, "review_y1", "y1 (bottom)", h),
    ):
        col.number_input(label, min_value=0, max_value=top, step=1, key=key)
    try:
        box = box_on_film([st.session_state[k] for k in BOX_KEYS], film.shape)
    except ValueError as exc:
        st.error(f"This box cannot be used: {exc}")
        return None
    st.image(crop_and_resize(film, box, PREVIEW_PX), caption="the crop this box makes")
    return box


def decisions(row: Any, box: tuple[int, int, int, int] | None, path: Path, dataset_id: str) -> None:
    """Save the box, exclude the film, or undo the decision (each stored at once)."""
    now = {"exclude": "excluded", "box": "cropped with a corrected box"}.get(row.decision)
    st.caption(f"Now: {now}." if now else "Now: the detector's crop, not reviewed yet.")
    c1, c2 = st.columns(2)
    if c1.button("Save this box", key="review_save_box", type="primary", disabled=box is None):
        decide(path, dataset_id, row.image_id, "box", box)
    if c2.button("Exclude this film", key="review_exclude"):
        decide(path, dataset_id, row.image_id, "exclude", None)
    if st.button(
        "Undo: keep the film with the detector's box",
        key="review_undo",
        disabled=not row.decision,
    ):
        decide(path, dataset_id, row.image_id, None, None)


def decide(
    path: Path,
    dataset_id: str,
    image_id: str,
    action: str | None,
    box: tuple[int, int, int, int] | None,
) -> None:
    """Store one decision (None forgets it) and draw the page again."""
    try:
        if action is None:
            clear_review(dataset_id, image_id, path=path)
        else:
            record_review(dataset_id, image_id, action, box, path=path)
    except (StoreError, ValueError) as exc:
        st.error(f"Not stored: {exc}")
        return
    st.session_state.pop("review_box_for", None)  # reload the inputs from the stored box
    st.rerun()


def show_retrain(path: Path, dataset_id: str) -> None:
    """Where the reviewed boxes go next: the next study, and (later) the detector."""
    st.subheader("Use the review", divider="gray")
    st.markdown(
        "The next study queued on this dataset from the Launch page crops each film with "
        "its corrected box and leaves excluded films out of every split; studies queued "
        "before keep the crops they had."
    )
    link_to_page(
        "pages/launch.py", "Queue a study on the reviewed films", ":material/rocket_launch:"
    )
    try:
        n_boxes = len(reviewed_boxes(dataset_id, path=path))
    except StoreError:
        n_boxes = 0
    st.button(
        "Retrain the detector with the reviewed boxes",
        key="review_retrain",
        disabled=True,
        icon=":material/model_training:",
        help="Not available yet: it comes with the trained (YOLO) knee detector. Until then "
        "knees are located by the classical detector.",
    )
    st.caption(f"{n_boxes} reviewed box(es) of this dataset are ready to train it on.")


def review_dataset(path: Path, dataset_id: str, params: dict[str, Any]) -> None:
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
    show_retrain(path, dataset_id)


run_inside_shell()
require_page("review")
st.title("Review crops")
st.caption(
    "Check where the detector put each knee before training on it: crops come worst "
    "confidence first. Exclude films that are not usable knee radiographs, or correct a "
    f"box by typing its corners or clicking two of them on the film. Crops are {REVIEW_PX} px "
    "here; studies crop the same box at their own size."
)
store = store_path()
picked = pick_dataset(store)
if picked is not None:
    review_dataset(store, *picked)
