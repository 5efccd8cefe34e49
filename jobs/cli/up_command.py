"""``python -m jobs up``: the Streamlit app on 127.0.0.1 (``--host`` beyond it, with
accounts only) and a worker whenever none is alive; ``up --kiosk --study ID`` or ``up --demo
FILE``: only Grade a film, without a worker or sign-in.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from jobs.cli.arg_types import add_executor_args, add_whole_arg, whole_from
from jobs.cli.cli_store import open_store
from jobs.services.access import BEHIND_PROXY, SERVED_HOST_ENV, refuse_unprotected_host
from jobs.services.up_worker import UP_LAUNCHED_ENV
from store import jobs as store_jobs
from store.db import STORE_ENV
from store.users import has_accounts

# The largest upload Grade a film may be set to take: a film this size is decoded in memory.
MAX_UPLOAD_MB = 2048

log = logging.getLogger("jobs")


# How often `up` checks that a worker serves its store.
UP_CHECK_S = 5.0
# The first worker starts this long after the app first answers its health check: a worker's
# start (torch in it and in its slot process: 8-10 s of CPU) would otherwise take a core from
# the first visitor's page (Streamlit's 60 script files, the page's first run) on a 2-core
# machine. 3 s covers that page on an idle machine; a job queued before `up` waits that much
# longer for its worker (bench/RESULTS.md, "Opening the app").
WORKER_GRACE_S = 3.0
# ... and at the latest this long after the app was launched, whether or not it answered
# (a loaded machine, or an address `up` cannot reach): a queued job never waits much longer.
WORKER_START_CAP_S = 10.0
# How often `up` asks the app for its health while the first worker waits.
_GATE_POLL_S = 0.25


def cmd_up(args: argparse.Namespace) -> int:
    """Serve the Streamlit app on 127.0.0.1 and keep a worker running for its store.

    A worker is started whenever none is alive: the first once the app has served for a few
    seconds (`FirstWorkerGate`), or later if the one alive then (e.g. from a previous ``up``
    still shutting down) stops or dies.
    """
    import signal
    import subprocess

    if args.kiosk or args.demo:
        return cmd_up_kiosk(args)
    path = open_store()
    # Behind a reverse proxy the app listens on loopback but people reach it from anywhere.
    served = BEHIND_PROXY if args.behind_proxy else args.host
    refusal = refuse_unprotected_host(
        served, has_accounts=has_accounts(path=path)
    ) or refuse_unusable_address(args.host, args.port)
    if refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    print(f"SoftGrade on http://{args.host}:{args.port} (store {path}); Ctrl+C stops both")
    # SIGTERM (e.g. from a service manager) must also stop the app and the worker.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    children: list[subprocess.Popen] = []
    try:
        # The pages say "a worker is starting" until the first worker beats (up_worker.py).
        app_env = {**os.environ, SERVED_HOST_ENV: served, UP_LAUNCHED_ENV: str(time.time())}
        app_proc = subprocess.Popen(_app_command(args), env=app_env)
        children.append(app_proc)
        gate = FirstWorkerGate(launched=time.monotonic())
        worker: subprocess.Popen | None = None
        while app_proc.poll() is None:
            if not gate.open(time.monotonic(), lambda: app_answers(args.host, args.port)):
                time.sleep(_GATE_POLL_S)
                continue
            if (worker is None or worker.poll() is not None) and store_jobs.alive_workers(
                path=path
            ).empty:
                if worker is not None:
                    log.warning(
                        "the worker exited (status %s); starting another", worker.returncode
                    )
                worker = subprocess.Popen(_worker_command(args))
                children.append(worker)
            time.sleep(UP_CHECK_S)
        return app_proc.returncode
    except KeyboardInterrupt:
        return 0
    finally:
        for child in children:
            if child.poll() is None:
                child.terminate()
        for child in children:
            child.wait(timeout=15)


@dataclass
class FirstWorkerGate:
    """When `up` may start its first worker: `WORKER_GRACE_S` after the app first answers its
    health check, at the latest `WORKER_START_CAP_S` after the app was launched. Once open it
    stays open (a worker that dies later is replaced at once)."""

    launched: float
    answered: float | None = None
    opened: bool = False

    def open(self, now: float, app_answers: Callable[[], bool]) -> bool:
        """Whether the first worker may start at ``now`` (`time.monotonic`); asks
        ``app_answers()`` until the app has answered once."""
        if not self.opened:
            if self.answered is None and app_answers():
                self.answered = now
            answered_long_enough = (
                self.answered is not None and now >= self.answered + WORKER_GRACE_S
            )
            self.opened = answered_long_enough or now >= self.launched + WORKER_START_CAP_S
        return self.opened


def app_answers(host: str, port: int) -> bool:
    """Whether Streamlit's health check at ``host``:``port`` answers 200 (a wildcard address
    is asked on loopback)."""
    import urllib.request

    asked = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    if ":" in asked:
        asked = f"[{asked}]"  # an IPv6 address in a URL
    try:
        with urllib.request.urlopen(f"http://{asked}:{port}/_stcore/health", timeout=1) as reply:
            return reply.status == 200
    except (OSError, ValueError):
        return False


def _app_command(args: argparse.Namespace) -> list[str]:
    """Streamlit serving ``app.py`` on ``args.host``:``args.port``, as `up` runs it."""
    app = Path(__file__).resolve().parents[2] / "app.py"
    return [
        sys.executable,
        "-m",
        "jobs.services.serve_app",
        "run",
        str(app),
        "--server.address",
        args.host,
        "--server.port",
        str(args.port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        # A lab tool is not deployed from its menu: no "Deploy" button.
        "--client.toolbarMode",
        "minimal",
        # Users do not edit the code while they use the app; watching the checkout
        # (.venv included) exhausts inotify watches and costs CPU the worker needs.
        "--server.fileWatcherType",
        "none",
        # Grade a film's uploads are held in memory only; cap their size.
        "--server.maxUploadSize",
        str(args.max_upload_mb),
    ]


def refuse_unusable_address(host: str, port: int) -> str | None:
    """Why the app cannot listen on ``host:port`` (another program has the port, or the
    address is not this machine's), or None when it can. Checked before anything starts, so
    the app never says it serves on a port it cannot have."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        return f"--host {host!r} is not an address this machine can serve on ({exc})"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        # As the server will: a port left in TIME_WAIT by a previous run is free to take.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            return (
                f"cannot serve on {host}:{port}: {exc.strerror or exc}; another program (a "
                "SoftGrade already up?) may have the port: pick another with --port"
            )
    return None


def cmd_up_kiosk(args: argparse.Namespace) -> int:
    """Serve only Grade a film: on a study of the store (``--kiosk --study``) or on a demo
    bundle unpacked into a fresh temporary home (``--demo``). No worker, no sign-in: the
    kiosk can only grade films, so it may be served beyond loopback without accounts."""
    import shutil
    import signal
    import subprocess

    from engine.films import escaped  # a bundle's study name may hold escape codes
    from jobs.services.demo_bundle import fresh_demo_home
    from jobs.services.kiosk import KioskSettings, check_kiosk_study

    if refusal := refuse_unusable_address(args.host, args.port):
        raise ValueError(refusal)  # before a demo bundle is unpacked
    home: Path | None = None
    env = dict(os.environ)
    if args.demo:
        if args.study or args.method:
            raise ValueError("--demo FILE carries its own study and method; leave --study out")
        home, bundle = fresh_demo_home(args.demo)
        settings = KioskSettings(demo_dir=bundle.folder)
        env["SOFTGRADE_HOME"] = str(home)
        env.pop(STORE_ENV, None)  # the demo's store is the one in its fresh home
        seeds = len(bundle.manifest["seeds"])
        what = (
            f"the demo bundle {args.demo} ({escaped(bundle.manifest['study']['name'])}, "
            f"{bundle.method}, {seeds} seed{'s' * (seeds != 1)}; unpacked in {home})"
        )
    else:
        if not args.study:
            raise ValueError(
                "--kiosk needs --study ID, the study whose models grade (`python -m jobs "
                "status` lists jobs and their studies), or --demo FILE"
            )
        path = open_store()
        name, method = check_kiosk_study(args.study, args.method, path=path)
        settings = KioskSettings(study_id=args.study, method=args.method)
        what = f"“{name}” ({args.study}), {method}, store {path}"
    print(
        f"SoftGrade kiosk (Grade a film only) on http://{args.host}:{args.port}: {what}",
        flush=True,
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app_proc: subprocess.Popen | None = None
    try:
        # Visitors see one plain sentence for an error, never a traceback (it is logged).
        command = [*_app_command(args), "--client.showErrorDetails", "none"]
        app_proc = subprocess.Popen(
            command, env={**env, SERVED_HOST_ENV: args.host, **settings.env()}
        )
        return app_proc.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        if app_proc is not None and app_proc.poll() is None:
            app_proc.terminate()
            app_proc.wait(timeout=15)
        if home is not None:
            shutil.rmtree(home, ignore_errors=True)


def _worker_command(args: argparse.Namespace) -> list[str]:
    """`up`'s own choices of executor and slots, passed on to its worker."""
    address = ["--address", args.address] if args.address else []
    return [
        sys.executable,
        "-m",
        "jobs",
        "worker",
        "--executor",
        args.executor,
        *address,
        "--device",
        args.device,
        "--cpu-slots",
        str(args.cpu_slots),
        "--slots-per-gpu",
        str(args.slots_per_gpu),
        "--processes-per-gpu",
        str(args.processes_per_gpu),
        "--threads-per-slot",
        str(args.threads_per_slot),
        "--max-retries",
        str(args.max_retries),
    ]


def add_commands(sub: argparse._SubParsersAction) -> None:
    """The ``up`` command."""
    p = sub.add_parser("up", help="start the app and a worker")
    add_executor_args(p, with_device=True)
    p.add_argument("--port", type=whole_from(1, 65535), default=8501)
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to serve on; beyond 127.0.0.1 (e.g. 0.0.0.0) needs accounts",
    )
    p.add_argument(
        "--behind-proxy",
        action="store_true",
        help="people reach the app through a reverse proxy: sign-in is required as beyond "
        "loopback, even though the app listens on --host 127.0.0.1, and each browser's "
        "address (sign-in limits, audit log) is the one the proxy appends to X-Forwarded-For "
        "(SOFTGRADE_PROXY_HOPS=N when N proxies append to it)",
    )
    add_whole_arg(
        p, "--max-upload-mb", (1, MAX_UPLOAD_MB), 64, "largest film Grade a film accepts (MB)"
    )
    p.add_argument(
        "--kiosk",
        action="store_true",
        help="serve only Grade a film, with --study (and --method) fixed; no sign-in, no worker",
    )
    p.add_argument("--study", default=None, help="the kiosk's study (with --kiosk)")
    p.add_argument(
        "--method", default=None, help="the kiosk's method (default: best on validation)"
    )
    p.add_argument(
        "--demo",
        default=None,
        metavar="FILE",
        help="open the kiosk on a demo bundle (from export-demo) in a fresh temporary folder",
    )
    p.set_defaults(func=cmd_up)
