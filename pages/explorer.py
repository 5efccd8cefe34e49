"""Search & learning curves: every configuration each search tried, and how its runs trained.

The numbers come from ``engine.analysis.explorer`` over ``store.runs``; tables and sentences from
``pages.present.explorer_views``, charts from ``pages.present.science_charts``. This page
reads widgets and renders. A running study's sections re-read the store every few seconds.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from engine.analysis import explorer
from engine.methods import order_methods
from jobs.services.page_store import StoreError, list_runs, study_epoch_metrics
from pages.present import explorer_views as views
from pages.present import science_charts as charts
from pages.present.formatting import table_height
from pages.present.tables import method_title, param_label
from pages.present.user_text import plain_list, said
from pages.widgets import view_state
from pages.widgets.pickers import forget, pick_study
from pages.widgets.reads import cached_jobs, cached_studies, store_path
from pages.widgets.shell import page_title, run_inside_shell
from pages.widgets.sign_in import require_page

LIVE_TTL_S = 5  # store reads: short, so a running study's new runs show within seconds
LIVE_REFRESH_S = 10  # how often a running study's sections re-read while the page is open
# Facet and side-by-side charts keep their pixel width (Streamlit clips, not shrinks, them):
# these sizes fit five methods' strips and three curve panels beside the sidebar at 1400 px.
STRIP_VALUE_PX = 45
CURVE_PX = 185
OVERLAY_LABELS = {"method": "Every method, one seed", "seed": "Every seed, one method"}


@st.cache_data(ttl=LIVE_TTL_S, show_spinner="Reading the searches…")
def cached_search(path: str, study_id: str) -> pd.DataFrame:
    """Every stored run of the study, hyper-parameters as columns (`explorer.search_table`)."""
    return explorer.search_table(list_runs([study_id], path=path))


@st.cache_data(ttl=LIVE_TTL_S, show_spinner="Reading learning curves…")
def cached_curves(path: str, study_id: str) -> pd.DataFrame:
    """Per-epoch curves of the study's selected runs (`explorer.learning_curves`)."""
    epochs = study_epoch_metrics([study_id], selected_only=True, path=path)
    return explorer.learning_curves(epochs)


@st.cache_data(max_entries=64, show_spinner=False)
def chart_spec(name: str, data: pd.DataFrame, options: dict[str, Any]) -> dict[str, Any]:
    """The Vega-Lite spec of ``pages.present.science_charts.<name>(data, **options)``, cached.

    Altair validates each spec (50-190 ms a chart here); caching keeps a rerun that changes
    nothing the chart shows fast.
    """
    return getattr(charts, name)(data, **options).to_dict()


def read(reader: Any, *args: Any) -> pd.DataFrame:
    """A cached store read; a store that cannot be read stops the page with the reason."""
    try:
        return reader(*args)
    except StoreError as exc:
        st.error(f"The store cannot be read right now: {said(exc)}")
        st.stop()


def note_waiting_studies(path: str) -> None:
    """Name the queued or running studies with no finished run: they cannot be picked yet."""
    names = views.waiting_studies(read(cached_studies, path))
    if names:
        st.info(
            f"No run of {plain_list(names)} has finished yet: a study appears in the picker "
            "below when its first run is stored.",
            icon=":material/hourglass_top:",
        )


def pick_search(search: pd.DataFrame) -> tuple[str, str, int]:
    """Task, method and seed pickers over what the study has stored."""
    left, middle, right = st.columns(3)
    task = view_state.linked(
        left.selectbox,
        "Task",
        list(dict.fromkeys(search["task"])),
        key="explorer_task",
        what="task",
        on_change=forget,
        args=("explorer_method", "explorer_seed"),
    )
    rows = search[search["task"] == task]
    method = view_state.linked(
        middle.selectbox,
        "Method",
        order_methods(rows["method"]),
        key="explorer_method",
        what="method",
        format_func=method_title,
        on_change=forget,
        args=("explorer_seed",),
    )
    seeds = sorted(int(s) for s in rows.loc[rows["method"] == method, "seed"].unique())
    seed = view_state.linked(right.selectbox, "Seed", seeds, key="explorer_seed", what="seed")
    return task, method, seed


def render_search(path: str, study: pd.Series, task: str, method: str, seed: int) -> None:
    """Every configuration of the picked search, then each configuration and
    hyper-parameter across seeds."""
    st.subheader("Search")
    search = read(cached_search, path, study.name)
    runs = views.one_search(search, task, method, seed)
    planned = views.planned_configs(study["spec"], method)
    st.markdown(views.search_sentence(runs, planned=planned, running=study["status"] == "running"))
    st.dataframe(
        views.style_configurations(views.configuration_table(runs)),
        hide_index=True,
        width="content",
    )
    st.caption(views.rank_note(study["spec"]))
    across = search[(search["task"] == task) & (search["method"] == method)]
    title = f"{task} · {method_title(method)}: every configuration in every seed"
    st.vega_lite_chart(chart_spec("configuration_strip", across, {"title": title}), width="stretch")
    st.caption(views.STRIP_NOTE)

    st.markdown("**Each hyper-parameter's effect, across seeds**")
    effects = explorer.parameter_effects(search[search["task"] == task])
    summary = explorer.parameter_summary(effects)
    params = views.parameters_of(effects)
    for param, tab in zip(params, st.tabs([param_label(p) for p in params]), strict=True):
        rows = effects[effects["param"] == param]
        tab.markdown(views.parameter_reading(param, rows))
        options = {"param": param, "title": task, "value_width": STRIP_VALUE_PX}
        spec = chart_spec("parameter_strip", rows, options)
        tab.vega_lite_chart(spec, width="stretch")
        table = views.summary_table(summary, param)
        tab.dataframe(table, hide_index=True, width="content", height=table_height(len(table)))
        tab.caption(views.summary_note(summary))


def render_curves(path: str, study: pd.Series, task: str, method: str, seed: int) -> None:
    """Train and validation loss and validation AMAE per epoch of the selected runs."""
    st.subheader("Learning curves")
    by = view_state.linked(
        st.radio,
        "Overlay",
        list(OVERLAY_LABELS),
        key="explorer_overlay",
        what="overlay",
        format_func=OVERLAY_LABELS.get,
        horizontal=True,
    )
    curves = read(cached_curves, path, study.name)
    if curves.empty:
        st.info(views.NO_EPOCHS, icon=":material/info:")
        return
    shown = {"method": None, "seed": seed} if by == "method" else {"method": method, "seed": None}
    lines = explorer.overlay(curves, by, task=task, **shown)
    if lines.empty:
        what = f"seed {seed}" if by == "method" else method_title(method)
        st.info(f"No stored curves for {task} · {what} yet.", icon=":material/info:")
        return
    job = None
    if study["status"] == "running":
        jobs = read(cached_jobs, path)
        found = jobs[jobs["job_id"] == study["job_id"]]
        job = found.iloc[0] if len(found) else None
    stored = set(read(cached_search, path, study.name)["run_id"])
    live, sentence = views.live_point(job, stored, task=task, **shown)
    whose = f"seed {seed}" if by == "method" else f"every seed of {method_title(method)}"
    options = {"live": live, "title": f"{task}: selected runs, {whose}", "width": CURVE_PX}
    st.vega_lite_chart(chart_spec("learning_curves_chart", lines, options), width="stretch")
    st.caption(views.curves_note(study["spec"]))
    if clipped := views.clipped_sentence(lines):
        st.caption(clipped)
    if sentence:
        st.caption(sentence)


run_inside_shell()
require_page(__file__)
page_title("Search & learning curves")
st.caption(views.intro_note())

store = str(store_path())
note_waiting_studies(store)
picked = pick_study(
    store,
    key="explorer_study",
    empty_hint="No study has finished runs yet. Launch one from the Launch page; its searches "
    "and learning curves appear here as soon as its first run is stored.",
    dependent_keys=("explorer_task", "explorer_method", "explorer_seed"),
)
picked_search = read(cached_search, store, picked.name)
if picked_search.empty:
    st.info("This study has no stored run yet.", icon=":material/hourglass_empty:")
    st.stop()
is_running = picked["status"] == "running"
if is_running:
    st.info(
        f"This study is still running: both sections re-read the store every "
        f"{LIVE_REFRESH_S} s. Stored curves grow run by run (a run's epochs are stored when "
        "the run ends), and a search's selected run is its best so far.",
        icon=":material/sync:",
    )
choice = pick_search(picked_search)
link_slot = view_state.link_slot()
view_state.share_link(link_slot)  # this run's choices now, while the sections below draw
live_every = LIVE_REFRESH_S if is_running else None
st.fragment(render_search, run_every=live_every)(store, picked, *choice)
st.fragment(render_curves, run_every=live_every)(store, picked, *choice)
view_state.share_link(link_slot)  # again, with the overlay the curves section picked
