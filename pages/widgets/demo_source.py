"""Where Grade a film's models and test films come from: a study of the lab's store (picked,
or fixed by a kiosk), or an unpacked demo bundle (`jobs.services.demo_bundle`). Either way the page
gets one `DemoSource`, so it grades the same way on the lab server and on a laptop."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from engine.demo_models import best_seed, default_method, seed_checkpoints
from engine.methods import order_methods
from engine.seeds import split_seed_of
from engine.vocab import TASKS
from jobs.services.demo_bundle import DemoBundle, DemoBundleError, open_demo, read_crop
from jobs.services.kiosk import KioskSettings
from pages.present.tables import method_title
from pages.present.user_text import plain, said
from pages.widgets import view_state
from pages.widgets.models import (
    OpenedStudy,
    cached_crops,
    cached_splits,
    open_study,
)
from pages.widgets.pickers import pick_study
from pages.widgets.reads import cached_studies
from pages.widgets.sets_view import cached_seed_thresholds

# The kiosk's look: large type for a room, no toolbar or sidebar to wander off through.
# The kiosk's look: the grade is the page's largest text by far (read from the back of a
# room, at 1366 px as at 1920 px wide), the rest large enough; no toolbar or sidebar to
# wander off through.
KIOSK_CSS = """
<style>
html, body, [data-testid="stAppViewContainer"] { font-size: 1.3rem; }
[data-testid="stMarkdownContainer"] p, [data-testid="stCaptionContainer"] { font-size: 1.15rem; }
h1 { font-size: 2.2rem !important; }
[data-testid="stMainBlockContainer"] { padding-top: 2.5rem; }  /* the grade above the fold */
[data-testid="stMetricValue"], [data-testid="stMetricValue"] * {
  font-size: clamp(4rem, 6.5vw, 8rem) !important; line-height: 1.05 !important;
  font-weight: 700 !important;
}
[data-testid="stToolbar"], [data-testid="stSidebar"],
[data-testid="stSidebarCollapsedControl"], #MainMenu { display: none !important; }
</style>
"""


@dataclass(frozen=True)
class DemoSource:
    """The models that grade and the test films offered.

    Attributes:
        method: The method whose models grade.
        seed: The seed best on validation: its models draw the Grad-CAM maps.
        checkpoints: task -> that seed's model file.
        seeds: task -> seed -> model file, for every seed of the method here.
        image_size: Side of the crops the models were trained on (px).
        films: The best seed's test films: ``image_id``, recorded and true grades
            (``kl``, ``kl_true``, ``cppd``, ``cppd_true``) and ``test_seeds`` (the seeds
            whose models never trained on the film).
        crop: A film row's knee crop, (S, S) uint8.
        detector_dir: A trained knee detector's folder for uploads, or None (classical).
        thresholds: task -> seed -> grade-set thresholds from that seed's validation films
            (`pages.present.grade_range`); empty where there are none (a demo bundle).
    """

    method: str
    seed: int
    checkpoints: dict[str, str]
    seeds: dict[str, dict[int, str]]
    image_size: int
    films: pd.DataFrame
    crop: Callable[[pd.Series], np.ndarray]
    detector_dir: Path | None = None
    thresholds: dict[str, dict[int, np.ndarray]] = field(default_factory=dict)


def models_line(source: DemoSource) -> str:
    """Which models grade, in one line under the pickers."""
    n = len(next(iter(source.seeds.values()), {}))
    others = (
        f"; the {n} seeds' models with weights here are compared below each grade" if n > 1 else ""
    )
    return (
        f"Models: {method_title(source.method)}, seed {source.seed} (its best on validation), "
        f"trained at {source.image_size} px{others}."
    )


# -- the lab's store ---------------------------------------------------------------------------


def store_source(path: str, kiosk: KioskSettings | None) -> DemoSource:
    """A study of the store: picked on the page, or the kiosk's fixed study and method."""
    if kiosk is None:
        study = pick_study(
            path,
            key="demo_study",
            empty_hint="No study has finished runs yet. Launch one from the Launch page; its "
            "models can grade films here once its first seed finishes.",
            dependent_keys=("demo_method", "demo_film"),
            card=False,
        )
    else:
        study = _kiosk_study(path, kiosk.study_id)
    # A kiosk has no picker: its own warning below says it cannot grade without models.
    opened = open_study(path, study, offer_others=kiosk is None)
    method = _method(opened, kiosk)
    tasks = [t for t in TASKS if t in set(opened.runs["task"])]
    seed, checkpoints = best_seed(opened.runs, method, tasks)
    if not checkpoints:
        st.warning(
            f"No seed of this study has saved weights of {method_title(method)} for "
            f"{' and '.join(tasks)} on this machine, so it cannot grade a film here."
        )
        st.stop()
    seeds = seed_checkpoints(opened.runs, method, tasks)
    films = _store_films(path, str(study["dataset_id"]), opened, seed, seeds)
    cache_dir = str(opened.cache_dir)
    return DemoSource(
        method=method,
        seed=seed,
        checkpoints=checkpoints,
        seeds=seeds,
        image_size=opened.spec.image_size,
        films=films,
        crop=lambda row: cached_crops(cache_dir, (int(row["row"]),))[0][0],
        thresholds=cached_seed_thresholds(path, str(study.name), method),
    )


def _kiosk_study(path: str, study_id: str | None) -> pd.Series:
    studies = cached_studies(path)
    found = studies[studies["study_id"] == study_id]
    if found.empty or int(found["runs_selected"].iloc[0]) == 0:
        st.error(
            f"This kiosk was started for study {plain(study_id)}, which has no finished runs in "
            "this store (deleted or archived?). Ask whoever started it to restart it."
        )
        st.stop()
    return found.set_index("study_id").iloc[0]


def _method(opened: OpenedStudy, kiosk: KioskSettings | None) -> str:
    """The kiosk's method, or the picker (the best on validation first chosen)."""
    runs = opened.runs
    best = default_method(runs)
    if kiosk is not None:
        return kiosk.method or best
    methods = order_methods(runs["method"])
    return view_state.linked(
        st.selectbox,
        "Method",
        methods,
        key="demo_method",
        what="method",
        initial={"index": methods.index(best)},
        format_func=lambda m: method_title(m) + (" (the study's best)" if m == best else ""),
    )


def _store_films(
    path: str, dataset_id: str, opened: OpenedStudy, seed: int, seeds: dict[str, dict[int, str]]
) -> pd.DataFrame:
    """The best seed's test films, each with the seeds (with weights here) that tested on it."""
    # A factorial study's seed is a pairing key: its split is its split seed's.
    splits = cached_splits(path, dataset_id, split_seed_of(opened.runs, seed))
    if splits is None:
        st.info(f"Seed {seed} has no stored split yet.")
        st.stop()
    meta = opened.meta.assign(row=np.arange(len(opened.meta)))
    ids = meta["image_id"]
    tested = {seed: (splits.reindex(ids) == "test").to_numpy()}
    for other in sorted(set().union(*(set(s) for s in seeds.values())) - {seed}):
        other_splits = cached_splits(path, dataset_id, split_seed_of(opened.runs, other))
        if other_splits is not None:
            tested[other] = (other_splits.reindex(ids) == "test").to_numpy()
    meta["test_seeds"] = [
        tuple(s for s in sorted(tested) if tested[s][i]) for i in range(len(meta))
    ]
    return meta[tested[seed]].reset_index(drop=True)


# -- a demo bundle -----------------------------------------------------------------------------


@st.cache_resource(show_spinner=False)
def cached_bundle(folder: str) -> DemoBundle:
    """The unpacked bundle the kiosk serves (read once: it does not change)."""
    return open_demo(Path(folder))


@st.cache_data(max_entries=64, show_spinner=False)
def cached_bundle_crop(file: str, size: int) -> np.ndarray:
    """A bundled film's crop, ``size`` px a side."""
    return read_crop(Path(file), size)


def bundle_crop(file: str, size: int) -> np.ndarray:
    """A bundled film's crop; one that is damaged or of another size stops the page with
    the reason (`jobs.services.demo_bundle.read_crop` names the film)."""
    try:
        return cached_bundle_crop(file, size)
    except DemoBundleError as exc:
        st.error(str(exc), icon=":material/broken_image:")
        st.stop()


def bundle_source(folder: Path) -> DemoSource:
    """The kiosk's demo bundle; a bundle that cannot be read stops the page with the reason."""
    try:
        bundle = cached_bundle(str(folder))
    except DemoBundleError as exc:
        st.error(said(exc))
        st.stop()
    seeds = {
        task: {seed: str(p) for seed, p in by_seed.items()}
        for task, by_seed in bundle.checkpoints.items()
    }
    return DemoSource(
        method=bundle.method,
        seed=bundle.best_seed,
        checkpoints={task: by_seed[bundle.best_seed] for task, by_seed in seeds.items()},
        seeds=seeds,
        image_size=bundle.image_size,
        films=bundle.films,
        crop=lambda row: bundle_crop(str(row["file"]), bundle.image_size),
        detector_dir=bundle.detector_dir,
        thresholds=bundle.set_thresholds,
    )


def bundle_card(folder: Path) -> tuple[dict[str, str], str]:
    """The bundled study card and notes."""
    bundle = cached_bundle(str(folder))
    return bundle.card, bundle.notes
