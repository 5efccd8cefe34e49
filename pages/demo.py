"""Grade a film: show one knee radiograph to a study's models, for demonstrations.

A clinician or a visitor picks a test film of the study (whose grades are known) or uploads a
film of their own. SoftGrade finds the knee, crops it as training did, and each task's model
of the chosen method gives its grade and a Grad-CAM map. The maps come from the selected models
of the seed where that method did best on validation; where several seeds' models are on the
machine, the grade is the seeds' consensus and a chart shows how much they agree (the spread of
P(grade) over seeds, `pages.present.seed_agreement`), not one seed's word.

Started as a kiosk (`python -m jobs up --kiosk` or `--demo`, `jobs.kiosk`), the page is the
whole app: no sign-in, large type, and the study and method fixed by whoever started it (or
taken from a demo bundle, `jobs.demo_bundle`), so it shows no pickers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import streamlit as st

from engine import gradcam
from engine.demo_models import knee_box
from engine.films import FILM_FORMATS, decode_film
from engine.train import load_checkpoint
from engine.vocab import GRADE_SIGNS
from jobs.kiosk import kiosk_settings
from pages.present import charts
from pages.present import seed_agreement as agreement
from pages.present.admin_tables import upload_size_problem
from pages.present.graded_film import film_with_box, known_grades
from pages.present.user_text import notes as user_notes
from pages.present.user_text import plain
from pages.widgets import view_state
from pages.widgets.demo_source import (
    KIOSK_CSS,
    DemoSource,
    bundle_card,
    bundle_source,
    models_line,
    store_source,
)
from pages.widgets.models import heat_help, maps_of, probs_of
from pages.widgets.pickers import show_study_card
from pages.widgets.reads import store_path
from pages.widgets.shell import run_inside_shell
from pages.widgets.sign_in import require_page

SOURCES = ("A test film of this study", "Upload a film")


@st.cache_data(max_entries=32, show_spinner=False)
def cached_reading(
    checkpoints: tuple[tuple[str, str], ...],
    film: np.ndarray,
    image_size: int,
    detector_dir: str | None = None,
) -> gradcam.FilmReading:
    """An uploaded film graded by one model per task (cached on the film's pixels)."""
    models = {task: load_checkpoint(Path(p))[0] for task, p in checkpoints}
    box = knee_box(film, Path(detector_dir) if detector_dir else None)
    return gradcam.read_film(film, models, image_size, box=box)


def seed_probs(seeds: dict[int, str], crop: np.ndarray) -> dict[int, np.ndarray]:
    """Each seed's P(grade) for one crop (cached per checkpoint and crop)."""
    return {seed: probs_of(ckpt, crop[None])[0] for seed, ckpt in seeds.items()}


def show_grades(
    crop: np.ndarray,
    grades: dict[str, gradcam.CamBatch],
    known: dict,
    seeds: dict[str, dict[int, str]],
    best: int,
) -> None:
    """Per task: the grade, what it means, how much the seeds agree (or the one model's
    probabilities) and where the best seed's model looked.

    Args:
        grades: The best seed's models' probabilities and maps, by task.
        seeds: task -> seed -> checkpoint of the seeds to compare (one seed: no comparison).
        best: The seed whose maps are shown.
    """
    columns = st.columns(len(grades))
    for column, (task, batch) in zip(columns, grades.items(), strict=True):
        with column:
            if len(seeds.get(task, {})) > 1:
                probs = seed_probs(seeds[task], crop)
                spread = agreement.seed_spread(probs)
                grade = agreement.consensus_grade(spread)
                st.metric(f"{task} grade", f"{task} {grade}", border=True)
                st.markdown(agreement.agreement_sentence(spread, task))
            else:
                grade = int(batch.predicted[0])
                st.metric(f"{task} grade", f"{task} {grade}", border=True)
            st.caption(f"{task} {grade}: {GRADE_SIGNS[task][grade]}.")
            if task in known:
                st.markdown(known[task])
            if len(seeds.get(task, {})) > 1:
                points = agreement.seed_points(probs)
                st.altair_chart(
                    agreement.seed_agreement_chart(spread, points, task), width="stretch"
                )
                st.caption(
                    "Bars: mean probability over the seeds' models; whiskers: lowest to "
                    "highest seed; dots: each seed."
                )
            else:
                st.altair_chart(charts.grade_probabilities(batch.probs[0], task), width="stretch")
            st.image(
                gradcam.overlay(crop, batch.cams[0]),
                caption=f"Where seed {best}'s {task} model looked",
                width="stretch",
            )
    first = next(iter(grades.values()))
    st.caption(heat_help(first.block, crop.shape[-1]))


def show_test_film(source: DemoSource) -> None:
    """A test film of the best seed (its models never trained on it), graded by each task's
    model; the other seeds are compared only where they too kept the film for testing."""
    test = source.films
    if test.empty:
        st.info(f"Seed {source.seed} kept no film for testing.")
        st.stop()
    linked = view_state.apply_link("demo_film", range(1, len(test) + 1), what="test film")
    number = st.number_input(
        "Test film",
        min_value=1,
        max_value=len(test),
        key="demo_film",
        **({} if linked else {"value": 1}),
        help=f"The {len(test)} films seed {source.seed} kept aside for testing: its models "
        "never trained on them.",
    )
    view_state.keep_in_link("demo_film", int(number))
    row = test.iloc[int(number) - 1]
    crop = source.crop(row)
    tested = set(row["test_seeds"])
    seeds = {
        task: {s: ckpt for s, ckpt in by_seed.items() if s in tested}
        for task, by_seed in source.seeds.items()
    }
    left, right = st.columns([1, 3])
    left.image(crop, caption=f"film {row['image_id']} (knee crop)", width="stretch")
    left_out = len(set().union(*map(set, source.seeds.values())) - tested)
    if left_out:
        left.caption(
            f"{left_out} other seed{'s' * (left_out != 1)} trained or validated on this film, "
            "so their models are left out of the comparison."
        )
    with right:
        grades = {task: maps_of(ckpt, crop[None]) for task, ckpt in source.checkpoints.items()}
        show_grades(crop, grades, known_grades(row, list(source.checkpoints)), seeds, source.seed)


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
        st.error(problem, icon=":material/file_present:")
        st.stop()
    try:
        film = decode_film(upload.getvalue(), upload.name)
    except ValueError as exc:
        st.error(str(exc))
        st.stop()
    detector = str(source.detector_dir) if source.detector_dir else None
    with st.spinner("Finding the knee and grading…"):
        reading = cached_reading(
            tuple(source.checkpoints.items()), film, source.image_size, detector
        )
    left, right = st.columns([1, 3])
    left.image(
        film_with_box(film, reading.box), caption="the knee SoftGrade found", width="stretch"
    )
    left.image(reading.crop, caption="what the models saw", width="stretch")
    with right:
        show_grades(reading.crop, reading.grades, {}, source.seeds, source.seed)


run_inside_shell()
kiosk = kiosk_settings()
if kiosk is None:
    require_page(__file__)
else:
    # The kiosk needs no sign-in: it grades films and can do nothing else (jobs.kiosk).
    st.markdown(KIOSK_CSS, unsafe_allow_html=True)
st.title("Grade a film")
st.caption(
    "Show a knee radiograph to a study's models: SoftGrade finds the knee, and each model "
    "gives its grade and shows where it looked. A research tool for demonstrations, not for "
    "diagnosis."
)

if kiosk is not None and kiosk.demo_dir is not None:
    source = bundle_source(kiosk.demo_dir)
    card, notes = bundle_card(kiosk.demo_dir)
    with st.expander("Study card", key="demo_bundle_card"):
        st.markdown("\n".join(f"- **{label}**: {plain(value)}" for label, value in card.items()))
    if notes.strip():
        st.markdown(user_notes(notes))
else:
    path = str(store_path())
    source = store_source(path, kiosk)
    if kiosk is not None:
        show_study_card(path, str(kiosk.study_id), key="demo_kiosk_card")
st.markdown(models_line(source))
choice = view_state.linked(
    st.segmented_control,
    "Film",
    SOURCES,
    key="demo_source",
    what="film source",
    initial={"default": SOURCES[0]},
    required=True,
)
if kiosk is None:
    view_state.share_link()
if choice == SOURCES[0]:
    show_test_film(source)
else:
    show_upload(source)
