"""SoftGrade: the Streamlit entrypoint. Page config, the shared sidebar and navigation.

Start it with ``python -m jobs up`` (the app and a worker). That command also hides
Streamlit's "Deploy" menu and turns Streamlit's legacy ``pages/`` listing off before the
first request (see ``jobs/serve_app.py``).
"""

from __future__ import annotations

import streamlit as st

from pages._ui import render_sidebar

st.set_page_config(page_title="SoftGrade", page_icon=":material/radiology:", layout="wide")


PAGES = {
    "Run studies": [
        st.Page("pages/launch.py", title="Launch", icon=":material/rocket_launch:", default=True),
        st.Page("pages/queue.py", title="Jobs", icon=":material/list_alt:"),
        st.Page("pages/data.py", title="Data", icon=":material/photo_library:"),
        st.Page("pages/review.py", title="Review crops", icon=":material/crop_free:"),
    ],
    "Read results": [
        st.Page("pages/compare.py", title="Compare methods", icon=":material/leaderboard:"),
        st.Page(
            "pages/explorer.py", title="Search & learning curves", icon=":material/query_stats:"
        ),
        st.Page("pages/relationship.py", title="KL × CPPD", icon=":material/grid_on:"),
        st.Page("pages/attention.py", title="Attention", icon=":material/visibility:"),
    ],
    "Demonstrate": [
        st.Page("pages/demo.py", title="Grade a film", icon=":material/radiology:"),
    ],
}

navigation = st.navigation(PAGES)
render_sidebar()
navigation.run()
