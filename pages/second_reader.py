"""Second reader (members): a study's test films most worth a second look, ranked by how far
the models' grade is from the recorded label, how much the seeds' models disagree and how
wide the likely range is; a lab member records a second reading beside the label (never over
it, audit-logged), and the readings export as a labels CSV that imports as a new label
version of the dataset. Helpers: `pages.widgets.second_reader_view`."""

from __future__ import annotations

import streamlit as st

from pages.present import second_look_view as view
from pages.widgets import second_reader_view as reader
from pages.widgets.pickers import pick_study
from pages.widgets.reads import store_path
from pages.widgets.shell import page_title, run_inside_shell
from pages.widgets.sign_in import require_page

run_inside_shell()
account = require_page(__file__)
page_title("Second reader")
st.caption(view.LIST_NOTE)
path = store_path()
study = pick_study(
    str(path),
    key="second_study",
    empty_hint="No study has finished runs yet: the list ranks a study's test films.",
    dependent_keys=("second_task", "second_method", "second_film"),
    card=False,
)
task, method, runs = reader.pick_task_and_method(str(path), str(study.name))
ranked = reader.cached_ranked(str(path), str(study.name), task, method)
if ranked.empty:
    st.info("No test film has per-film predictions for this task and method.")
    st.stop()
shown = view.list_frame(ranked.head(view.SHOWN_ROWS), task)
st.dataframe(shown, hide_index=True)
st.download_button(
    "Whole list as CSV", view.list_csv(ranked, task), "second_look.csv", key="second_list_csv"
)
film = st.selectbox("Film to read", list(shown["Film"]), key="second_film")
row = ranked.set_index("image_id", drop=False).loc[film]
reader.show_film(
    row, reader.film_crop(study, film), reader.best_checkpoint(runs, task, method), task
)
reader.reading_form(path, account, study, task, row)
reader.readings_section(path, study["dataset_id"])
