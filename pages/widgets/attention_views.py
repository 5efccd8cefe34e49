"""The Attention page's grids and score sections: films with each method's Grad-CAM map,
and the stress test's and co-occurrence's scores. Tables come from
``pages/present/attention_tables.py``; maps and probabilities from ``pages/widgets/models.py``."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from engine import gradcam
from engine.vocab import TOP_GRADE
from pages.present import charts
from pages.present.attention_tables import cooccurrence_summary, knee_caption, stress_summary
from pages.present.formatting import table_height
from pages.present.tables import method_title
from pages.present.user_text import plain
from pages.widgets.models import cached_crops, heat_help, maps_of, probs_of

MAX_FILMS_PER_LEVEL = 12  # films per level whose predictions are averaged


def show_map_grid(
    cache_dir: str,
    meta: pd.DataFrame,
    groups: dict[int, pd.DataFrame],
    models: dict[str, str],
    *,
    task: str,
    head: str,
    key: str,
    help: str,  # the widget's own name for it
    missing: str,
    top: int | None = None,
) -> None:
    """One film per group (an "Example" number steps through them), each method's map under it.

    ``head`` names the grade the groups differ in; with ``top`` the captions give the
    probability of that grade of ``task``, else of the grade each model gave.
    """
    most = max(len(rows) for rows in groups.values())
    example = st.number_input("Example", min_value=1, max_value=most, value=1, key=key, help=help)
    picked = {g: rows.index[(example - 1) % len(rows)] for g, rows in groups.items() if len(rows)}
    images, _ = cached_crops(cache_dir, tuple(int(r) for r in picked.values()))
    with st.spinner("Drawing Grad-CAM maps…"):
        batches = {m: maps_of(ckpt, images) for m, ckpt in models.items()}
    columns = st.columns(len(groups))
    for column, level in zip(columns, groups, strict=True):
        with column:
            st.markdown(f"**{head} {level}**")
            if level not in picked:
                st.caption(missing)
                continue
            k = list(picked).index(level)
            count = len(groups[level])
            films = "" if top is None else f" · {count} film{'s' * (count != 1)}"
            st.image(
                images[k],
                caption=f"film {plain(meta.loc[picked[level], 'image_id'])}{films}",
                width="stretch",
            )
            for method, batch in batches.items():
                sure = (
                    f"p {batch.probs[k].max():.2f}"
                    if top is None
                    else f"P({task} {top}) {batch.probs[k, top]:.2f}"
                )
                st.image(
                    gradcam.overlay(images[k], batch.cams[k]),
                    caption=f"{plain(method_title(method))}: graded {task} "
                    f"{batch.predicted[k]} · {sure}",
                    width="stretch",
                )
    first = next(iter(batches.values()))
    st.caption(heat_help(first.block, first.cams.shape[-1]))


def show_stress_grid(
    films: gradcam.StressFilms, batches: dict[str, gradcam.CamBatch], task: str, other: str
) -> None:
    """The shown knee at every level of the other disease, with each method's map."""
    columns = st.columns(len(films.levels))
    for k, (column, level) in enumerate(zip(columns, films.levels, strict=True)):
        with column:
            st.markdown(f"**{other} {level}**")
            st.image(films.images[k], caption=knee_caption(films), width="stretch")
            for method, batch in batches.items():
                st.image(
                    gradcam.overlay(films.images[k], batch.cams[k]),
                    caption=f"{plain(method_title(method))}: graded {task} {batch.predicted[k]} "
                    f"· P({task} {TOP_GRADE[task]}) {batch.probs[k, TOP_GRADE[task]]:.2f}",
                    width="stretch",
                )
    first = next(iter(batches.values()))
    st.caption(heat_help(first.block, first.cams.shape[-1]))


def show_stress_scores(table: pd.DataFrame, task: str, other: str, knees: int) -> None:
    """Lift on each disease's signs per level, averaged over knees, as charts and a table."""
    st.markdown(
        f"**Where the heat sits**, averaged over {knees} knee{'s' * (knees != 1)}. Lift is the "
        "mean heat on a disease's signs (from the phantom's lesion masks) divided by the mean "
        "heat over the whole crop: 1 means no more attention there than anywhere else."
    )
    level_title = f"{other} grade of the redrawn knee"
    c1, c2 = st.columns(2)
    c1.altair_chart(
        charts.stress_lift(
            table, column="lift_own", title=f"Lift on {task} signs", level_title=level_title
        ),
        width="stretch",
    )
    c2.altair_chart(
        charts.stress_lift(
            table,
            column="lift_other",
            title=f"Lift on {other} signs",
            level_title=level_title,
        ),
        width="stretch",
    )
    summary = stress_summary(table, task, other)
    st.dataframe(summary, hide_index=True, width="content", height=table_height(len(summary)))
    if other == "CPPD":
        st.caption("A knee redrawn at CPPD 0 has no deposits, so it has no lift on CPPD signs.")


def show_cooccurrence_scores(
    cache_dir: str, groups: dict[int, pd.DataFrame], task: str, other: str, models: dict[str, str]
) -> None:
    """Per method and level of the other disease: how often and how surely the top grade."""
    top = TOP_GRADE[task]
    rows = []
    with st.spinner("Grading the films of every group…"):
        for level, films in groups.items():
            index = tuple(int(r) for r in films.index[:MAX_FILMS_PER_LEVEL])
            images, _ = cached_crops(cache_dir, index)
            for method, ckpt in models.items():
                probs = probs_of(ckpt, images)
                rows.append(
                    {
                        "method": method,
                        "level": level,
                        "films": len(index),
                        "p_top": float(probs[:, top].mean()),
                        "graded_top": float((probs.argmax(1) == top).mean()),
                    }
                )
    table = cooccurrence_summary(rows, task, other)
    st.markdown(
        f"**How sure each model stays of {task} {top}**, over up to {MAX_FILMS_PER_LEVEL} "
        f"films per {other} grade."
    )
    st.dataframe(table, hide_index=True, width="content", height=table_height(len(table)))
