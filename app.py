"""SoftGrade: the Streamlit entrypoint. Page config, the shared sidebar and navigation.

Start everything with ``python -m jobs up`` (app + worker), or the app alone with
``streamlit run app.py``.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from pages._ui import render_sidebar

ROOT = Path(__file__).resolve().parent

st.set_page_config(page_title="SoftGrade", page_icon=":material/radiology:", layout="wide")


def _page(path: str, **kwargs: object) -> st.Page | None:
    """An ``st.Page``, or None while its file does not exist yet.

    ``st.Page`` raises for a missing file, which would take the whole app down while a
    results page is still being written; such a page is simply left out of the menu.
    """
    return st.Page(path, **kwargs) if (ROOT / path).is_file() else None


PAGES = {
    "Run studies": [
        _page("pages/launch.py", title="Launch", icon=":material/rocket_launch:", default=True),
        _page("pages/queue.py", title="Jobs", icon=":material/list_alt:"),
        _page("pages/data.py", title="Data", icon=":material/photo_library:"),
    ],
    "Read results": [
        _page("pages/compare.py", title="Compare methods", icon=":material/leaderboard:"),
        _page("pages/relationship.py", title="KL × CPPD", icon=":material/grid_on:"),
        _page("pages/attention.py", title="Attention", icon=":material/visibility:"),
    ],
    "Demonstrate": [
        _page("pages/demo.py", title="Grade a film", icon=":material/radiology:"),
    ],
}
PAGES = {section: [p for p in pages if p] for section, pages in PAGES.items()}

navigation = st.navigation({section: pages for section, pages in PAGES.items() if pages})
render_sidebar()
navigation.run()
