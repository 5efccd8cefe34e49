"""Grade a film: show one knee radiograph to a study's models, for demonstrations.

A clinician or a visitor picks a test film of the study (whose grades are known) or uploads a
film of their own. SoftGrade finds the knee, crops it as training did, and each task's model
of the chosen method gives its grade and a Grad-CAM map. The maps come from the selected models
of the seed where that method did best on validation; where several seeds' models are on the
machine, the grade is the seeds' consensus and a chart shows how much they agree (the spread of
P(grade) over seeds, `pages.present.seed_agreement`), not one seed's word.

Started as a kiosk (`python -m jobs up --kiosk` or `--demo`, `jobs.services.kiosk`), the page is the
whole app: no sign-in, large type, and the study and method fixed by whoever started it (or
taken from a demo bundle, `jobs.services.demo_bundle`), so it shows no pickers.
"""

from __future__ import annotations

import streamlit as st

from jobs.services.kiosk import kiosk_settings
from pages.present.graded_film import (
    models_sentence,
)
from pages.present.user_text import notes as user_notes
from pages.present.user_text import plain
from pages.widgets import view_state
from pages.widgets.demo_source import (
    KIOSK_CSS,
    bundle_card,
    bundle_source,
    models_line,
    store_source,
)
from pages.widgets.grade_view import (
    SOURCES,
    presenter_on,
    show_test_film,
    show_upload,
)
from pages.widgets.pickers import show_study_card
from pages.widgets.reads import store_path
from pages.widgets.shell import run_inside_shell
from pages.widgets.sign_in import require_page

run_inside_shell()
kiosk = kiosk_settings()
if kiosk is None:
    require_page(__file__)
else:
    # The kiosk needs no sign-in: it grades films and can do nothing else (jobs.services.kiosk).
    st.markdown(KIOSK_CSS, unsafe_allow_html=True)
title_column, toggle_column = st.columns([3, 1], vertical_alignment="bottom")
title_column.title("Grade a film")
toggle_column.toggle(
    "Presenter details",
    key="demo_presenter",
    help="For whoever presents: the study card, the models' method, seeds and the network "
    "layer the maps come from.",
)
presenter = presenter_on()
st.caption(
    "Show a knee radiograph to a study's models: SoftGrade finds the knee, and each model "
    "gives its grade and shows where it looked. A research tool for demonstrations, not for "
    "diagnosis."
)

if kiosk is not None and kiosk.demo_dir is not None:
    source = bundle_source(kiosk.demo_dir)
    if presenter:
        card, notes = bundle_card(kiosk.demo_dir)
        with st.expander("Study card", key="demo_bundle_card"):
            st.markdown(
                "\n".join(f"- **{label}**: {plain(value)}" for label, value in card.items())
            )
        if notes.strip():
            st.markdown(user_notes(notes))
else:
    path = str(store_path())
    source = store_source(path, kiosk)
    if presenter:
        study_id = kiosk.study_id if kiosk is not None else st.session_state.get("demo_study")
        if study_id:
            show_study_card(path, str(study_id), key="demo_study_card")
n_models = len(next(iter(source.seeds.values()), {})) or 1
st.markdown(models_line(source) if presenter else models_sentence(n_models))
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
