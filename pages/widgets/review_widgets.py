"""The Review crops page's widget groups: the grade and problem filters, the grid of crops,
the film under review (its boxes, a box typed or clicked, the decisions) and where the
review goes next (a study, and retraining the knee detector in the background). Streamlit
widgets, so no unit tests of their own: the page's AppTests (tests/app/test_review.py) drive
them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
from streamlit_image_coordinates import streamlit_image_coordinates

from engine.detect import crop_and_resize
from engine.films import read_film_file
from engine.vocab import TOP_GRADE
from jobs.services.access import Action, actor_name, can
from jobs.services.detector import PAGE_EPOCHS, PAGE_IMAGE_SIZE, ReviewedFilms, reviewed_films
from jobs.services.detector_background import start_training
from jobs.services.detector_status import TrainingStatus, read_status
from jobs.services.page_store import Account, StoreError, clear_review, record_review
from pages.present.review_view import (
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
    problem_filters,
    reviewed_box,
    tile_caption,
)
from pages.present.user_text import plain, said
from pages.widgets.shell import link_to_page
from pages.widgets.sign_in import current_account

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
        st.error(f"{plain(row.source)} cannot be read: {said(exc)}")
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
    x0, y0, x1, y1 = (int(st.session_state[k]) for k in BOX_KEYS)
    typed = (x0, y0, x1, y1)
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
        st.error(f"This box cannot be used: {said(exc)}")
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
            record_review(
                dataset_id, image_id, action, box, who=actor_name(current_account()), path=path
            )
    except (StoreError, ValueError) as exc:
        st.error(f"Not stored: {said(exc)}")
        return
    st.session_state.pop("review_box_for", None)  # reload the inputs from the stored box
    st.rerun()


def show_retrain(path: Path, dataset_id: str, account: Account) -> None:
    """Where the reviewed boxes go next: the next study, and the knee detector."""
    st.subheader("Use the review", divider="gray")
    st.markdown(
        "The next study queued on this dataset from the Launch page crops each film with "
        "its corrected box and leaves excluded films out of every split; studies queued "
        "before keep the crops they had."
    )
    link_to_page(
        "pages/launch.py", "Queue a study on the reviewed films", ":material/rocket_launch:"
    )
    st.markdown(
        "**Retrain the knee detector** on the films whose boxes were saved here (a saved box "
        "confirms or corrects the detector's) and those whose labels CSV gives their boxes. "
        "A fifth of them are held out to score it; it trains in the background, one training "
        "at a time."
    )
    try:
        films = reviewed_films(dataset_id, store_path=path)
    except StoreError as exc:
        st.error(f"The reviewed boxes cannot be read right now: {said(exc)}")
        return
    status = read_status()
    why_not = retrain_refusal(films, status, account)
    image_size, epochs, device = training_settings()
    if st.button(
        f"Retrain the detector on {films.described()}",
        key="review_retrain",
        disabled=why_not is not None,
        icon=":material/model_training:",
        help=why_not,
    ):
        try:
            start_training(account, dataset_id, image_size=image_size, epochs=epochs, device=device)
        except ValueError as exc:  # refused: role, a training running, too few, settings
            st.error(f"Not started: {said(exc)}")
        else:
            st.rerun()
    if why_not:
        st.caption(why_not)
    st.fragment(training_progress, run_every=2.0 if status and status.running else None)()


def retrain_refusal(
    films: ReviewedFilms, status: TrainingStatus | None, account: Account
) -> str | None:
    """Why the retrain button is disabled, or None when it may be pressed."""
    if not can(account, Action.LAUNCH):
        return f"{account.name} ({account.role.value}) may not start a training."
    if status is not None and status.running:
        return "A detector is training now (below); one trains at a time."
    return films.too_few()


def training_settings() -> tuple[int, int, str]:
    """Image size, epochs and device for the next training (small, on CPU, by default)."""
    import torch

    devices = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
    with st.expander("Training settings"):
        c1, c2, c3 = st.columns(3)
        device = c1.selectbox(
            "Device",
            devices,
            key="review_train_device",
            help="cuda trains in seconds to minutes; cpu takes minutes at a small image size"
            + ("" if len(devices) > 1 else " (this machine has no GPU)"),
        )
        image_size = c2.number_input(
            "Image size (px)",
            min_value=32,
            max_value=1024,
            value=PAGE_IMAGE_SIZE,
            step=32,
            key="review_train_size",
            help="the network's input; 160 suits a CPU, 384 or more a GPU",
        )
        epochs = c3.number_input(
            "Epochs", min_value=1, max_value=500, value=PAGE_EPOCHS, key="review_train_epochs"
        )
    return int(image_size), int(epochs), str(device)


def training_progress() -> None:
    """The latest training: epoch x of y, the detector it made, or why it failed (redrawn
    every two seconds while it runs; the whole page once it ends)."""
    status = read_status()
    if status is None:
        return
    if not status.dataset_id:  # the status file itself is damaged
        st.error(f"The last training's status cannot be read: {said(status.message)}")
        return
    was_running = st.session_state.get("review_training_running", False)
    st.session_state["review_training_running"] = status.running
    if was_running and not status.running:
        st.rerun()  # the button outside this fragment becomes available again
    where = f"on {plain(status.dataset_id)} ({plain(status.device)}, {status.image_size} px)"
    if status.running:
        text = (
            f"Training {where}: epoch {status.epoch} of {status.epochs}, "
            f"{status.elapsed_s:.0f} s (started by {plain(status.started_by)})"
            if status.epoch
            else f"Training {where}: reading the films and starting (by {plain(status.started_by)})"
        )
        st.progress(min(1.0, status.epoch / max(1, status.epochs)), text=text)
    elif status.state == "finished":
        held = status.held_out
        st.success(
            f"Detector {status.key} trained {where} on {status.n_films} films: held-out mean "
            f"IoU {held.get('mean_iou', float('nan')):.3f}, mAP50 "
            f"{held.get('map50', float('nan')):.3f}. Stored under detectors/{status.key}.",
            icon=":material/check_circle:",
        )
    else:
        st.error(f"The last training {where} failed: {said(status.message)}")
