"""Attention: where each method's model looked, as Grad-CAM maps on test films.

Two views of the paper's Grad-CAM analysis (Figs. 7 and 9):

- **Across grades**: one test film per grade, and each method's map on it.
- **Co-occurrence stress test** (phantom datasets): a knee at the task's highest grade,
  redrawn with every grade of the other pathology. A model that keeps its heat on its own
  task's signs copes with co-occurring disease; one whose heat moves to the other disease's
  signs is distracted by it.

The maps and lift scores come from ``engine.gradcam``; this page picks films and models.
"""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from engine import gradcam
from engine.methods import order_methods
from engine.phantom import PhantomSpec
from engine.seeds import split_seed_of
from engine.vocab import TOP_GRADE
from pages.widgets import pickers, view_state
from pages.widgets.attention_views import (
    show_cooccurrence_scores,
    show_map_grid,
    show_stress_grid,
    show_stress_scores,
)
from pages.widgets.models import (
    cached_splits,
    maps_of,
    open_study,
    saved_models,
)
from pages.widgets.pickers import pick_study
from pages.widgets.reads import store_path
from pages.widgets.shell import page_title, run_inside_shell
from pages.widgets.sign_in import require_page

MAX_STRESS_KNEES = 12
DEFAULT_STRESS_KNEES = 4


@st.cache_data(max_entries=64, show_spinner=False)
def cached_stress_films(
    phantom: str, row: dict, fixed: str, image_size: int
) -> gradcam.StressFilms:
    """The knee of one phantom film redrawn at every grade of the other pathology."""
    return gradcam.stress_films(
        PhantomSpec(**json.loads(phantom)), pd.Series(row), fixed, image_size
    )


SEED_HELP = "Each seed has its own split and models."


def pick_models(
    path: str, dataset_id: str, runs: pd.DataFrame
) -> tuple[str, pd.Series, dict[str, str]]:
    """Task, seed and methods pickers; the seed's split and each method's saved model
    (checkpoint path by method). Stops the page, saying why, when there is nothing to draw."""
    c1, c2, c3 = st.columns([1, 1, 3])
    tasks = sorted(runs["task"].unique())
    task = view_state.linked(c1.radio, "Task", tasks, key="att_task", what="task", horizontal=True)
    seeds = sorted(int(s) for s in runs.loc[runs["task"] == task, "seed"].unique())
    seed = view_state.linked(
        c2.selectbox, "Seed", seeds, key="att_seed", what="seed", help=SEED_HELP
    )
    present = order_methods(runs.loc[(runs["task"] == task) & (runs["seed"] == seed), "method"])
    methods = pickers.pick_methods(c3, present, key="att_methods")
    if not methods:
        st.info("Pick at least one method.")
        st.stop()
    # A factorial study's seed is a pairing key: its split is its split seed's.
    splits = cached_splits(path, dataset_id, split_seed_of(runs, seed))
    if splits is None:
        st.info(f"Seed {seed} has no stored split yet.")
        st.stop()
    models = saved_models(runs, task, seed, methods)
    if not models:
        st.stop()
    return task, splits, models


def show_across_grades(
    cache_dir: str, meta: pd.DataFrame, splits: pd.Series, task: str, models: dict[str, str]
) -> None:
    """Paper Fig. 7: one test film per grade, each method's map on it."""
    grades = list(range(TOP_GRADE[task] + 1))
    examples = {g: gradcam.grade_examples(meta, splits, task, g) for g in grades}
    most = max(len(rows) for rows in examples.values())
    if most == 0:
        st.info(f"This seed's test split has no film with a {task} grade.")
        return
    show_map_grid(
        cache_dir,
        meta,
        examples,
        models,
        task=task,
        head=task,
        key="att_example",
        help="Step through the test films of each grade (a grade with fewer films wraps "
        "around). Films whose recorded grade differs from the phantom's true grade are "
        "left out.",
        missing="No test film of this grade.",
    )


def show_stress_test(
    phantom: str,
    cache_dir: str,
    meta: pd.DataFrame,
    splits: pd.Series,
    task: str,
    models: dict[str, str],
    image_size: int,
) -> None:
    """Paper Fig. 9: one knee at the task's top grade, redrawn with the other disease 0..top."""
    other = gradcam.OTHER_TASK[task]
    top = TOP_GRADE[task]
    knees = gradcam.stress_knees(meta, splits, task)
    st.markdown(
        f"The **{task} model** on test knees redrawn at **{task} {top}** with **{other} "
        f"0 to {TOP_GRADE[other]}**: the same joint, framing and exposure; only the {other} "
        f"signs change from film to film. A model that keeps its heat on the {task} signs as "
        f"{other} rises is not distracted by it; heat moving to the {other} signs means it is."
    )
    if knees.empty:
        st.info("This seed's test split has no phantom film.")
        return
    c1, c2 = st.columns(2)
    knee = c1.number_input(
        "Knee shown",
        min_value=1,
        max_value=len(knees),
        value=1,
        key="att_knee",
        help=f"Knees of this seed's test films, those at {task} {top} already first.",
    )
    averaged = c2.number_input(
        "Knees averaged in the chart",
        min_value=1,
        max_value=min(MAX_STRESS_KNEES, len(knees)),
        value=min(DEFAULT_STRESS_KNEES, len(knees)),
        key="att_knees",
        help="More knees give a steadier average and take longer to draw: about 0.8 s a "
        "knee for five methods at 224 px on a 2-core CPU, once (then cached).",
    )
    shown = knees.iloc[int(knee) - 1]
    others = [r for r in knees.index[:averaged] if r != shown.name][: int(averaged) - 1]
    tables = []
    with st.spinner("Redrawing knees and drawing Grad-CAM maps…"):
        for n, row in enumerate([shown.name, *others]):
            films = cached_stress_films(phantom, knees.loc[row].to_dict(), task, image_size)
            batches = {m: maps_of(ckpt, films.images) for m, ckpt in models.items()}
            for method, batch in batches.items():
                tables.append(gradcam.stress_table(films, batch, method).assign(knee=row))
            if n == 0:
                first, first_batches = films, batches
    table = pd.concat(tables, ignore_index=True)
    show_stress_grid(first, first_batches, task, other)
    show_stress_scores(table, task, other, len(others) + 1)


def show_cooccurrence_films(
    cache_dir: str, meta: pd.DataFrame, splits: pd.Series, task: str, models: dict[str, str]
) -> None:
    """Paper Fig. 9 on test films: different knees at the task's top grade, grouped by the
    other disease's grade, each method's map and how sure it stays of the top grade."""
    other = gradcam.OTHER_TASK[task]
    top = TOP_GRADE[task]
    groups = gradcam.cooccurrence_films(meta, splits, task)
    st.markdown(
        f"The **{task} model** on this seed's test films at **{task} {top}**, grouped by their "
        f"**{other}** grade: different knees, as the paper's figure uses real films. A model "
        f"that stays sure of {task} {top} whatever the {other} grade is not swayed by the "
        f"other disease; one whose P({task} {top}) falls as {other} rises is."
    )
    present = {level: rows for level, rows in groups.items() if len(rows)}
    if not present:
        st.info(
            f"This seed's test split has no film graded {task} {top} with a recorded {other} "
            "grade (both grades are needed)."
        )
        return
    show_map_grid(
        cache_dir,
        meta,
        groups,
        models,
        task=task,
        head=other,
        key="att_cooc_example",
        help="Step through the films of each group (a group with fewer films wraps around).",
        missing=f"No test film at {task} {top} with this {other} grade.",
        top=top,
    )
    show_cooccurrence_scores(cache_dir, present, task, other, models)


run_inside_shell()
require_page(__file__)
page_title("Attention (Grad-CAM)")
st.caption(
    "Where each method's model looked when it graded a film: Grad-CAM maps of the selected "
    "model of each method for one seed, on test films that no model trained on (paper Figs. 7 "
    "and 9)."
)

path = str(store_path())
study = pick_study(
    path,
    key="att_study",
    empty_hint="No study has finished runs yet. Launch one from the Launch page; its models "
    "show here as its seeds finish.",
    dependent_keys=("att_task", "att_seed", "att_methods", "att_example", "att_knee"),
)
opened = open_study(path, study)
spec, cache_dir, meta = opened.spec, str(opened.cache_dir), opened.meta
task, splits, models = pick_models(path, str(study["dataset_id"]), opened.runs)

view = view_state.linked(
    st.segmented_control,
    "View",
    ["Across grades", "Co-occurrence stress test", "Co-occurrence in test films"],
    key="att_view",
    what="view",
    initial={"default": "Across grades"},
    required=True,
    help="The stress test redraws one phantom knee with more or less of the other disease; "
    "'in test films' uses different knees at the top grade, as on real films.",
)
view_state.share_link()
if view == "Across grades":
    show_across_grades(cache_dir, meta, splits, task, models)
elif view == "Co-occurrence in test films":
    show_cooccurrence_films(cache_dir, meta, splits, task, models)
elif spec.dataset.kind != "phantom" or not opened.has_masks:
    st.info(
        "The stress test redraws one knee with more or less of the other disease, which only "
        "the phantom can do: real films cannot be redrawn. The view 'Co-occurrence in test "
        "films' shows the same question on this dataset's own films."
    )
else:
    phantom = json.dumps(spec.dataset.params, sort_keys=True)
    show_stress_test(phantom, cache_dir, meta, splits, task, models, spec.image_size)
