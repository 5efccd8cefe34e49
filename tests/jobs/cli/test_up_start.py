"""`python -m jobs up` on a 2-core machine: the app's first page before the worker's start,
and a command line that starts without the statistics libraries (issue 31)."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from jobs.cli.up_command import (
    WORKER_GRACE_S,
    WORKER_START_CAP_S,
    FirstWorkerGate,
    app_answers,
    refuse_unusable_address,
)

REPO = Path(__file__).resolve().parents[3]


class AppThatAnswers:
    """Stands in for the app's health check: answers once ``up`` is True, counts the asks."""

    def __init__(self) -> None:
        self.up = False
        self.asked = 0

    def __call__(self) -> bool:
        self.asked += 1
        return self.up


def test_the_first_worker_waits_until_the_app_has_answered_for_the_grace():
    gate, app = FirstWorkerGate(launched=100.0), AppThatAnswers()
    assert not gate.open(101.0, app)  # the app is still starting
    app.up = True
    assert not gate.open(102.0, app)  # answered now: the first visitor's page goes first
    assert not gate.open(102.0 + WORKER_GRACE_S - 0.01, app)
    assert gate.open(102.0 + WORKER_GRACE_S, app)


def test_the_first_worker_starts_by_the_cap_when_the_app_never_answers():
    gate, app = FirstWorkerGate(launched=100.0), AppThatAnswers()
    assert not gate.open(100.0 + WORKER_START_CAP_S - 0.01, app)
    assert gate.open(100.0 + WORKER_START_CAP_S, app)


def test_the_cap_also_bounds_a_grace_that_began_late():
    gate, app = FirstWorkerGate(launched=100.0), AppThatAnswers()
    app.up = True
    answered_at = 100.0 + WORKER_START_CAP_S - 1.0  # a slow start on a loaded machine
    assert not gate.open(answered_at, app)
    assert gate.open(100.0 + WORKER_START_CAP_S, app)


def test_once_open_the_gate_stays_open_without_asking_the_app_again():
    gate, app = FirstWorkerGate(launched=0.0), AppThatAnswers()
    app.up = True
    gate.open(0.0, app)
    assert gate.open(WORKER_GRACE_S, app)
    asked, app.up = app.asked, False  # the app stops answering (a restart of the worker)
    assert gate.open(WORKER_GRACE_S + 60, app)
    assert app.asked == asked


@pytest.fixture
def health_server() -> Iterator[int]:
    """An HTTP server on loopback answering 200 at Streamlit's health path, 404 elsewhere."""

    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/_stcore/health" else 404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_app_answers_asks_streamlits_health_check_on_loopback_for_a_wildcard(health_server):
    assert app_answers("127.0.0.1", health_server)
    assert app_answers("0.0.0.0", health_server)  # `up --host 0.0.0.0` listens on loopback too


def test_app_answers_is_false_while_nothing_listens():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again once the block ends
    assert not app_answers("127.0.0.1", port)


@pytest.mark.slow  # starts a process (tests/helpers/tier_guard.py)
def test_the_command_line_starts_without_the_report_or_the_referee_statistics():
    # `up` and the worker it starts are `python -m jobs ...`: every command's parser is built
    # first, and the report (altair, statsmodels) and the referee (scipy.stats, baycomp) cost
    # ~2 s of a 2-core machine's CPU before the app starts, and again in the worker.
    heavy = ("pages.present.report", "engine.analysis.referee", "altair", "baycomp")
    code = (
        f"import sys\nimport jobs.cli.main\nprint(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_a_port_another_program_listens_on_is_refused_before_anything_starts(
    health_server, home, capsys
):
    from jobs.cli.main import main

    port = health_server
    said = refuse_unusable_address("127.0.0.1", port)
    assert said is not None and f"cannot serve on 127.0.0.1:{port}" in said and "--port" in said
    assert main(["up", "--port", str(port)]) == 2
    out = capsys.readouterr()
    assert said in out.err and "SoftGrade on" not in out.out


def test_a_free_port_and_a_host_that_is_not_this_machine():
    import socket

    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        free = spare.getsockname()[1]
    assert refuse_unusable_address("127.0.0.1", free) is None
    # 192.0.2.0/24 is reserved for documentation: never this machine's address.
    assert "cannot serve on 192.0.2.7" in str(refuse_unusable_address("192.0.2.7", free))
    assert "is not an address" in str(refuse_unusable_address("no such host.invalid", free))
