"""Two Ray nodes on one machine, set up as README "Running on a Ray cluster" says, and a tiny
study trained on them by ``softgrade worker --executor ray`` with the store on "local disk".

What it follows and checks, in order:

1. Token first: ``ray get-auth-token --generate`` on the head writes ``~/.ray/auth_token``;
   the token file is copied to the other node's home (each node gets a HOME of its own here,
   as two machines would have).
2. ``RAY_AUTH_MODE=token ray start --head`` and ``ray start --address`` with every port fixed
   by a flag (GCS, node manager, object manager, worker port range, agents), dashboard off.
3. A client with a wrong token is refused by the cluster, and so is one with the right token
   but without ``RAY_AUTH_MODE=token``.
4. ``SOFTGRADE_HOME`` is the "shared" folder (image cache, checkpoints); ``SOFTGRADE_DB`` puts
   the store in a "local" folder. The worker trains the study on two CPU actors (one CPU per
   node, so one actor lands on each) and the runs are stored.
5. Both nodes are stopped, always, by killing the process groups this script started (not
   ``ray stop``, which stops every Ray process of the machine, other people's included).

Run: ``.venv/bin/python bench/ray_two_nodes.py`` (prints a JSON line of figures; exit 0 when
every check passed). tests/jobs/test_ray_cluster.py runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
STUDY = """\
name: two-nodes
dataset: {kind: phantom, n_images: 60, n_joint: 40, seed: 3}
tasks: [CPPD]
methods: [nominal, beta]
seeds: [0]
budget: 1
max_epochs: 2
patience: 2
image_size: 32
batch_size: 16
device: cpu
"""


def free_ports(n: int) -> list[int]:
    """``n`` TCP ports free right now (each Ray process of each node needs its own here)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def node_flags(ports: list[int], worker_ports: tuple[int, int]) -> list[str]:
    """Every port a node listens on, fixed by a flag, so a firewall can allow exactly these."""
    names = (
        "--node-manager-port",
        "--object-manager-port",
        "--runtime-env-agent-port",
        "--dashboard-agent-grpc-port",
        "--dashboard-agent-listen-port",
        "--metrics-export-port",
    )
    flags = [f"{name}={port}" for name, port in zip(names, ports, strict=True)]
    return [
        *flags,
        f"--min-worker-port={worker_ports[0]}",
        f"--max-worker-port={worker_ports[1]}",
        "--num-cpus=1",
        "--block",
    ]


@contextmanager
def started(command: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen]:
    """A process in a session of its own; on the way out its whole group is stopped."""
    with open(log, "w") as out:
        proc = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield proc
    finally:
        stop_group(proc)


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM the process group this script started, then SIGKILL what is left of it."""
    for sig, wait_s in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
        # The leader is gone; members of its group (raylet, GCS, workers) may still be.
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(1)


def leftovers(root: Path) -> list[int]:
    """Pids of processes still naming this run's folder (its Ray sessions), if any."""
    found = subprocess.run(["pgrep", "-f", str(root)], capture_output=True, text=True)
    return [int(p) for p in found.stdout.split()]


def wait_for(check, timeout_s: float, what: str) -> float:
    """Seconds until ``check()`` is true; RuntimeError naming ``what`` after ``timeout_s``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if check():
            return time.monotonic() - start
        time.sleep(0.5)
    raise RuntimeError(f"{what} did not happen within {timeout_s:g} s")


def run(root: Path) -> dict[str, object]:
    """The whole walk-through in ``root``; returns the figures."""
    head_home, node_home = root / "head-home", root / "node-home"
    shared, local = root / "shared", root / "local"
    for folder in (head_home, node_home, shared, local):
        folder.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "SOFTGRADE_"))}
    base["PYTHONPATH"] = str(REPO)
    head_env = {**base, "HOME": str(head_home), "RAY_AUTH_MODE": "token"}
    node_env = {**base, "HOME": str(node_home), "RAY_AUTH_MODE": "token"}
    figures: dict[str, object] = {}

    # 1. The token, before any `ray start`, copied to the other node.
    subprocess.run(
        [BIN / "ray", "get-auth-token", "--generate"], env=head_env, check=True, capture_output=True
    )
    token_file = head_home / ".ray" / "auth_token"
    (node_home / ".ray").mkdir()
    shutil.copy2(token_file, node_home / ".ray" / "auth_token")

    gcs, *ports = free_ports(13)
    head_ports, node_ports = ports[:6], ports[6:12]
    address = f"127.0.0.1:{gcs}"
    t0 = time.monotonic()
    head_cmd = [
        str(BIN / "ray"),
        "start",
        "--head",
        f"--port={gcs}",
        "--node-ip-address=127.0.0.1",
        "--include-dashboard=false",
        f"--temp-dir={root / 'h'}",
        *node_flags(head_ports, (20000, 20099)),
    ]
    node_cmd = [
        str(BIN / "ray"),
        "start",
        f"--address={address}",
        "--node-ip-address=127.0.0.1",
        f"--temp-dir={root / 'n'}",
        *node_flags(node_ports, (20100, 20199)),
    ]
    with started(head_cmd, head_env, root / "head.log") as head:
        wait_for(lambda: _up(head, address, head_env, 1), 90, "the head node starting")
        with started(node_cmd, node_env, root / "node.log") as node:
            wait_for(lambda: _up(node, address, head_env, 2), 90, "the second node joining")
            figures["cluster_up_s"] = round(time.monotonic() - t0, 1)
            # 3. A wrong token is refused; so is a client that has the token but not
            # RAY_AUTH_MODE=token (an explicit address never turns token mode on by itself).
            wrong = {**node_env, "RAY_AUTH_TOKEN": "0" * 32}
            figures["wrong_token_refused"] = _cluster_cpus(address, wrong) < 0
            no_mode = {k: v for k, v in node_env.items() if k != "RAY_AUTH_MODE"}
            figures["no_auth_mode_refused"] = _cluster_cpus(address, no_mode) < 0

            # 4. The study, store on local disk, data shared.
            study = root / "study.yaml"
            study.write_text(STUDY)
            sg_env = {
                **head_env,
                "SOFTGRADE_HOME": str(shared),
                "SOFTGRADE_DB": str(local / "softgrade.duckdb"),
            }
            jobs = [sys.executable, "-m", "jobs"]
            subprocess.run(
                [*jobs, "submit", str(study)], env=sg_env, check=True, cwd=REPO, capture_output=True
            )
            t1 = time.monotonic()
            worker_cmd = [
                *jobs,
                "worker",
                "--executor",
                "ray",
                "--address",
                address,
                "--device",
                "cpu",
                "--cpu-slots",
                "2",
                "--threads-per-slot",
                "1",
            ]
            with started(worker_cmd, sg_env, root / "worker.log") as worker:
                wait_for(lambda: _finished(worker, sg_env), 300, "the study finishing")
            figures["study_s"] = round(time.monotonic() - t1, 1)
            figures.update(_study_result(sg_env))
            figures["store_on_local_only"] = not list(shared.rglob("*.duckdb*"))
            figures["checkpoints_shared"] = len(list((shared / "checkpoints").rglob("*.pt")))
            figures["actors_per_node"] = {
                "head": _actor_logs(root / "h"),
                "node": _actor_logs(root / "n"),
            }
    return figures


def _up(proc: subprocess.Popen, address: str, env: dict[str, str], cpus: int) -> bool:
    """Whether the cluster has ``cpus`` CPUs; RuntimeError if ``proc`` (a node) exited."""
    if proc.poll() is not None:
        raise RuntimeError(f"{proc.args[:3]} exited with {proc.returncode}; see its log")
    return _cluster_cpus(address, env) >= cpus


def _finished(worker: subprocess.Popen, env: dict[str, str]) -> bool:
    """Whether the study's job ended; RuntimeError if the worker exited first."""
    if worker.poll() is not None:
        raise RuntimeError(f"the worker exited with {worker.returncode}; see worker.log")
    return _job_status(env) not in ("queued", "running")


def _cluster_cpus(address: str, env: dict[str, str]) -> float:
    """CPUs the cluster reports to a client with ``env``'s token; -1 when it is refused."""
    code = (
        f"import ray, logging; ray.init(address={address!r}, logging_level=logging.ERROR); "
        "print(ray.cluster_resources().get('CPU', 0))"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        return -1
    if done.returncode != 0:
        return -1
    return float(done.stdout.strip().splitlines()[-1])


def _job_status(env: dict[str, str]) -> str:
    code = (
        "from store import jobs; j = jobs.list_jobs(); "
        "print(j.status.iloc[0] if len(j) else 'queued')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=60
    )
    return done.stdout.strip() or "queued"


def _study_result(env: dict[str, str]) -> dict[str, object]:
    code = (
        "import json; from store.db import connect\n"
        "with connect(read_only=True) as con:\n"
        "    status = con.execute('SELECT status FROM jobs').fetchone()[0]\n"
        "    runs = con.execute('SELECT count(*) FROM runs').fetchone()[0]\n"
        "    env = con.execute('SELECT executor, threads_per_slot FROM study_environments')"
        ".fetchone()\n"
        "print(json.dumps({'job': status, 'runs': runs, 'executor': env[0], "
        "'threads_per_slot': env[1]}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _actor_logs(temp_dir: Path) -> int:
    """Slot actors that ran on the node with this temp dir (their worker logs name them)."""
    count = 0
    for log in temp_dir.glob("session_2*/logs/worker-*.out"):  # not the session_latest link
        text = log.read_text(errors="replace")
        count += ":actor_name:SlotActor" in text
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    # A short folder: Ray's socket paths inside it must stay under 108 characters.
    root = Path(tempfile.mkdtemp(prefix="sgray-", dir="/tmp"))
    ok = False
    try:
        figures = run(root)
        print(json.dumps(figures))
        ok = (
            figures["job"] == "succeeded"
            and figures["runs"] == 2
            and figures["wrong_token_refused"]
            and figures["no_auth_mode_refused"]
            and figures["store_on_local_only"]
        )
    finally:
        left = leftovers(root)
        for pid in left:  # processes of this run's Ray sessions only, by id
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if left:
            print(f"killed {len(left)} leftover process(es) of {root}", file=sys.stderr)
        if args.keep or not ok:
            print(f"logs kept in {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
