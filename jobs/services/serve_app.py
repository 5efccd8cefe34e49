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

It also starts importing what the pages import in a background thread
(`jobs.services.import_warmup`), so the first visitor of a fresh server does not wait for the
statistics libraries before the first page's heading.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sys
from pathlib import Path

# Streamlit's loggers that may name a browser session's id (a reconnect warning does): the id
# is what a browser presents to resume its session, so the server log must not carry it.
SESSION_LOGGERS = (
    "streamlit.runtime.websocket_session_manager",
    "streamlit.runtime.app_session",
    "streamlit.runtime.runtime",
)
# `SOFTGRADE_IMPORT_WARMUP=0` leaves the pages' imports to their first visitors (to measure
# what the warm-up saves: bench/first_heading_bench.py).
WARMUP_ENV = "SOFTGRADE_IMPORT_WARMUP"
_SESSION_ID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)


def hashed_session_id(session_id: str) -> str:
    """A short stand-in for a session id: the same session reads the same in the log."""
    return "session-" + hashlib.sha256(session_id.encode()).hexdigest()[:10]


class SessionIdRedactor(logging.Filter):
    """Replaces every session id (a UUID) in a log record by `hashed_session_id`."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite ``record``'s message without session ids; never drops the record."""
        message = record.getMessage()
        redacted = _SESSION_ID.sub(lambda found: hashed_session_id(found.group()), message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        return True


def redact_session_ids() -> None:
    """Install `SessionIdRedactor` on Streamlit's session loggers (once per process).

    Streamlit's loggers do not propagate, so the filter goes on each logger itself; a filter
    added before Streamlit configures the logger stays when Streamlit replaces its handler.
    """
    for name in SESSION_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, SessionIdRedactor) for f in logger.filters):
            logger.addFilter(SessionIdRedactor())


def main(argv: list[str]) -> int:
    """Run ``streamlit`` with ``argv`` (e.g. ``run app.py --server.port 8501``)."""
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.web.cli import main as streamlit_main

    PagesManager.uses_pages_directory = False
    redact_session_ids()
    entrypoint = _entrypoint(argv)
    if entrypoint is not None and os.environ.get(WARMUP_ENV, "1") != "0":
        from jobs.services.import_warmup import start_warmup
        from jobs.services.kiosk import kiosk_settings

        # A kiosk's only page is Grade a film: its imports come first.
        start_warmup(entrypoint, first="demo" if kiosk_settings() is not None else None)
    sys.argv = ["streamlit", *argv]
    return streamlit_main()


def _entrypoint(argv: list[str]) -> Path | None:
    """The script of ``streamlit run SCRIPT ...``, or None for any other command."""
    if len(argv) >= 2 and argv[0] == "run" and argv[1].endswith(".py"):
        return Path(argv[1]).resolve()
    return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
