"""Start Streamlit on ``app.py`` with SoftGrade's navigation in charge from the first request.

``python -m jobs up`` runs this module instead of ``python -m streamlit``. Streamlit treats a
folder named ``pages/`` beside the entrypoint as its legacy multipage layout until
``st.navigation`` has run once in the server process: the first session of a fresh server
would briefly list every page file in ``pages/`` by its stem (the admin pages included) and
could run a sub-page file without the shell (the helpers, in ``pages/widgets/`` and
``pages/present/``, are never listed: Streamlit globs ``pages/*.py`` only). The project's
layout fixes the folder's name, so the legacy mode is switched off here, before the server
starts. This relies on a Streamlit internal (``PagesManager.uses_pages_directory``), also used
by ``pages.widgets.shell.run_inside_shell``, which keeps a plain ``streamlit run app.py`` working.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    """Run ``streamlit`` with ``argv`` (e.g. ``run app.py --server.port 8501``)."""
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.web.cli import main as streamlit_main

    PagesManager.uses_pages_directory = False
    sys.argv = ["streamlit", *argv]
    return streamlit_main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
