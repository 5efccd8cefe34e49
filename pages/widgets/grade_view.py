"""Grade a film's widgets: the grade as headline, a test film, an upload, safe grading.

`pages/demo.py` is the script (kiosk or lab page, presenter toggle, source picker); these
draw what it shows. Clinician words by default; developer words behind the presenter toggle.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from engine import gradcam
from engine.demo_models import KneeToGrade, knee_to_grade
from engine.films import FILM_FORMATS, decode_film
from engine.grade_model import load_model
from engine.vocab import GRADE_SIGNS
from pages.present import charts, grade_range
from pages.present import seed_agreement as agreement
from pages.present.admin_tables import upload_size_problem
from pages.present.graded_film import (
    NO_KNEE,
    film_with_box,
    known_grades,
    low_knee_sentence,
    unsure_sentence,
)
from pages.present.user_text import plain, said
from pages.widgets import view_state
from pages.widgets.demo_source import (
    DemoSource,
)
from pages.widgets.models import heat_help, maps_of, probs_of

SOURCES = ("A test film of this study", "Upload a film")
SEED_CHART_NOTE = (
    "Bars: mean probability over the models; whiskers: lowest to highest; dots: each model."
)
# Probability charts stand beside the grade, tall enough for their axis titles.
CHART_HEIGHT = 230


log = logging.getLogger(__name__)

# Said instead of a traceback when grading fails; the traceback goes to the server's log.
GRADING_FAILED = (
    "Something went wrong grading this film, and it was not graded. Try another film; "
    "whoever runs this demo can find the details in the server's log."
)
PLAIN_HEAT_HELP = (
    "Where the model looked: warm colours mark the parts of the knee that weighed most in "
    "its grade."
)


@st.cache_data(max_entries=32, show_spinner=False)
def cached_knee(film: np.ndarray, detector_dir: str | None = None) -> KneeToGrade:
    """The knee on an uploaded film and whether it is one (cached on the film's pixels)."""
    return knee_to_grade(film, Path(detector_dir) if detector_dir else None)


@st.cache_data(max_entries=32, show_spinner=False)
def cached_reading(
    checkpoints: tuple[tuple[str, str], ...],
    film: np.ndarray,
    image_size: int,
    box: tuple[int, int, int, int],
) -> gradcam.FilmReading:
    """An uploaded film's knee graded by one model per task (cached on the film's pixels)."""
    models = {task: load_model(Path(p)) for task, p in checkpoints}
    return gradcam.read_film(film, models, image_size, box=box)


def seed_probs(seeds: dict[int, str], crop: np.ndarray) -> dict[int, np.ndarray]:
    """Each seed's P(grade) for one crop (cached per checkpoint and crop)."""
    return {seed: probs_of(ckpt, crop[None])[0] for seed, ckpt in seeds.items()}


def presenter_on() -> bool:
    """Whether the presenter asked for the details (the toggle sits at the page's foot, and
    its value is read before it is drawn: a toggle reruns the page)."""
    return bool(st.session_state.get("demo_presenter", False))


def show_grade(task: str, grade: int, probability: float, known: dict) -> None:
    """The headline: the grade, large, what it means, the annotator's grade, any doubt."""
    st.metric(f"{task} grade", f"{task} {grade}", border=True)
    st.markdown(f"{task} {grade}: {GRADE_SIGNS[task][grade]}.")
    if task in known:
        st.markdown(known[task])
    if unsure := unsure_sentence(task, grade, probability):
        st.warning(unsure, icon=":material/help:")


@dataclass(frozen=True)
class TaskReading:
    """One task's reading of a film: the grade shown, its probability, the chart beside it,
    and the sentence and note that go with the chart (empty for one model)."""

    grade: int
    probability: float
    chart: alt.Chart | alt.LayerChart
    sentence: str = ""
    note: str = ""
    range: grade_range.GradeRange | None = None


def read_task(
    task: str,
    batch: gradcam.CamBatch,
    crop: np.ndarray,
    seeds: dict[int, str],
    best: int,
    thresholds: dict[int, np.ndarray],
) -> TaskReading:
    """The grade of one task: the models' consensus where several seeds' models are here,
    else the one model's grade; with its likely range where ``thresholds`` has the seeds."""
    if len(seeds) > 1:
        probs = seed_probs(seeds, crop)
        spread = agreement.seed_spread(probs)
        grade = agreement.consensus_grade(spread)
        return TaskReading(
            grade=grade,
            probability=float(spread.loc[spread["chosen"], "mean"].iloc[0]),
            chart=agreement.seed_agreement_chart(
                spread, agreement.seed_points(probs), task, height=CHART_HEIGHT
            ),
            sentence=agreement.agreement_sentence(spread, task),
            note=SEED_CHART_NOTE,
            range=grade_range.film_range(task, grade, probs, thresholds),
        )
    grade = int(batch.predicted[0])
    return TaskReading(
        grade=grade,
        probability=float(batch.probs[0][grade]),
        chart=charts.grade_probabilities(batch.probs[0], task, height=CHART_HEIGHT),
        range=grade_range.film_range(task, grade, {best: batch.probs[0]}, thresholds),
    )


def show_range(reading: TaskReading, no_range: str) -> None:
    """The likely range in words and its one-line meaning, or why there is none."""
    if reading.range is None:
        st.caption(no_range)
        return
    st.markdown(f"**{reading.range.line}**")  # task names and grade numbers only
    st.caption(reading.range.note)


def show_grades(
    crop: np.ndarray,
    grades: dict[str, gradcam.CamBatch],
    known: dict,
    seeds: dict[str, dict[int, str]],
    best: int,
    thresholds: dict[str, dict[int, np.ndarray]] | None,
) -> None:
    """Every task's grade first, side by side (the page's largest text, all above the fold of
    a 1366 x 768 screen: a room reads the grades before anything else), then one row per task:
    the probabilities (how much the models agree, or the one model's) and where it looked.

    Args:
        grades: The best seed's models' probabilities and maps, by task.
        seeds: task -> seed -> checkpoint of the seeds to compare (one seed: no comparison).
        best: The seed whose maps are shown.
        thresholds: task -> seed -> grade-set thresholds; None for a film the models were
            not calibrated on (an upload), which gets no range.
    """
    presenter = presenter_on()
    calibrated = thresholds is not None
    readings = {
        task: read_task(
            task, batch, crop, seeds.get(task, {}), best, (thresholds or {}).get(task, {})
        )
        for task, batch in grades.items()
    }
    no_range = grade_range.NO_RANGE_CALIBRATION if calibrated else grade_range.NO_RANGE_UPLOAD
    for column, (task, reading) in zip(st.columns(len(readings)), readings.items(), strict=True):
        with column:
            show_grade(task, reading.grade, reading.probability, known)
            show_range(reading, no_range)
    for task, reading in readings.items():
        probs_column, map_column = st.columns([3, 1])
        with probs_column:
            if reading.sentence:
                st.markdown(reading.sentence)
            st.altair_chart(reading.chart, width="stretch")
            if reading.note:
                st.caption(reading.note)
        map_column.image(
            gradcam.overlay(crop, grades[task].cams[0]),
            caption=f"Where seed {best}'s {task} model looked"
            if presenter
            else f"Where the {task} model looked",
            width="stretch",
        )
    first = next(iter(grades.values()))
    st.caption(heat_help(first.block, crop.shape[-1]) if presenter else PLAIN_HEAT_HELP)


#: The test film's number box: wide enough for its label, not the page's width.
TEST_FILM_BOX_PX = 260


def film_caption(row: pd.Series, number: int, total: int) -> str:
    """The crop's caption: which test film, in words a visitor reads (issue 39: the kiosk
    said "film ph00018 (knee crop)"); the film's id for the presenter. The id is data (a
    demo bundle's, an imported film's path) and a caption is markdown: shown as text."""
    if presenter_on():
        return f"film {plain(row['image_id'])} (knee crop)"
    return f"Test film {number} of {total}: the knee SoftGrade found"


def show_test_film(source: DemoSource) -> None:
    """A test film of the best seed (its models never trained on it), graded by each task's
    model; the other seeds are compared only where they too kept the film for testing."""
    test = source.films
    if test.empty:
        st.info(f"Seed {source.seed} kept no film for testing.")
        st.stop()
    view_state.apply_link("demo_film", range(1, len(test) + 1), what="test film")
    # A box as wide as the page for a number up to a few hundred read as a text field.
    number = st.number_input(
        f"Test film (1 to {len(test)})",
        width=TEST_FILM_BOX_PX,
        min_value=1,
        max_value=len(test),
        key="demo_film",  # starts at min_value (1) unless a link set it
        help=f"The {len(test)} films kept aside for testing: the models never trained on them.",
    )
    view_state.keep_in_link("demo_film", int(number))
    row = test.iloc[int(number) - 1]
    crop = source.crop(row)
    tested = set(row["test_seeds"])
    seeds = {
        task: {s: ckpt for s, ckpt in by_seed.items() if s in tested}
        for task, by_seed in source.seeds.items()
    }
    left, right = st.columns([1, 5])
    left.image(crop, caption=film_caption(row, int(number), len(test)), width="stretch")
    left_out = len(set().union(*map(set, source.seeds.values())) - tested)
    if left_out:
        left.caption(
            f"{left_out} other training run{'s' * (left_out != 1)} saw this film, so their "
            "models are left out of the comparison."
        )
    with right, graded_safely():
        grades = {task: maps_of(ckpt, crop[None]) for task, ckpt in source.checkpoints.items()}
        show_grades(
            crop,
            grades,
            known_grades(row, list(source.checkpoints)),
            seeds,
            source.seed,
            source.thresholds,
        )


def upload_limit_mb() -> float:
    """The largest upload accepted, in MB: Streamlit's ``server.maxUploadSize``."""
    return float(st.get_option("server.maxUploadSize"))


def show_upload(source: DemoSource) -> None:
    """An uploaded film: the knee found, cropped as in training, and graded."""
    upload = st.file_uploader(
        f"A knee radiograph, anteroposterior view (DICOM, {', '.join(FILM_FORMATS)})",
        type=None,  # DICOM files often have no extension; the film's bytes decide
        key="demo_upload",
        help=f"Up to {upload_limit_mb():g} MB. The film is held in memory for this browser "
        "session only; nothing is written to disk or stored.",
    )
    if upload is None:
        st.info("Upload a film to grade it.")
        st.stop()
    # Streamlit's own cap (server.maxUploadSize, set by `up --max-upload-mb`) is enforced by
    # the browser; the page checks again so a client that skips it gets the same answer.
    if problem := upload_size_problem(upload.name, upload.size, upload_limit_mb()):
        st.error(said(problem), icon=":material/file_present:")  # it names the file
        st.stop()
    try:
        film = decode_film(upload.getvalue(), upload.name)
    except ValueError as exc:
        st.error(said(exc))
        st.stop()
    detector = str(source.detector_dir) if source.detector_dir else None
    with graded_safely():
        with st.spinner("Finding the knee…"):
            knee = cached_knee(film, detector)
        if knee.box is None or knee.finding == "none":
            # The import check's rule (engine.films.knee_finding): no knee, no grade.
            st.error(NO_KNEE, icon=":material/search_off:")
            st.image(film, caption="the film uploaded", width=360)
            st.stop()
        with st.spinner("Grading…"):
            reading = cached_reading(
                tuple(source.checkpoints.items()), film, source.image_size, knee.box
            )
        if knee.finding == "low":
            st.warning(low_knee_sentence(knee.confidence), icon=":material/warning:")
        left, right = st.columns([1, 5])
        left.image(
            film_with_box(film, reading.box), caption="the knee SoftGrade found", width="stretch"
        )
        left.image(reading.crop, caption="what the models saw", width="stretch")
        with right:
            # An uploaded film may come from another site or scanner: no range is claimed.
            show_grades(reading.crop, reading.grades, {}, source.seeds, source.seed, None)


@contextmanager
def graded_safely() -> Iterator[None]:
    """Grading that fails says one plain sentence on the page and logs the traceback on
    the server (a kiosk visitor never sees a traceback; st.stop and reruns pass through)."""
    try:
        yield
    except Exception:
        log.exception("grading a film failed")
        st.error(GRADING_FAILED, icon=":material/error:")
        st.stop()
