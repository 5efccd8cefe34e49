"""The server log never carries a browser session's id (issue 23)."""

from __future__ import annotations

import io
import logging
import uuid

from streamlit.logger import get_logger

from jobs.services.serve_app import SESSION_LOGGERS, hashed_session_id, redact_session_ids


def test_a_reconnect_warning_names_the_session_by_a_hash_not_its_id():
    session_id = str(uuid.uuid4())
    redact_session_ids()
    redact_session_ids()  # twice: still one filter
    logger = get_logger(SESSION_LOGGERS[0])  # what Streamlit's session manager logs through
    caught = io.StringIO()
    handler = logging.StreamHandler(caught)
    logger.addHandler(handler)
    try:
        logger.warning("Session with id %s is already connected!", session_id)
    finally:
        logger.removeHandler(handler)
    assert session_id not in caught.getvalue()
    assert hashed_session_id(session_id) in caught.getvalue()
    assert len(logging.getLogger(SESSION_LOGGERS[0]).filters) == 1
