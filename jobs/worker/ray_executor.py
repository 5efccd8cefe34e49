"""Ray executor: runs train on a Ray cluster, in long-lived actors that host the slots.

Why actors and not plain Ray tasks: a fresh process costs ~10 s to warm up and ~22 s to
compile the training step, about as long as a whole run, so each actor trains many runs in a
loop and keeps its dataset tensors and compiled `Trainer`s (`SlotState`) across them, exactly
like a `LocalExecutor` slot process.

Slots are lanes of an actor, as slots are lanes of a local slot process: a GPU's
``slots_per_gpu`` slots live in ``processes_per_gpu`` actors (default one actor holding the
whole GPU), each running its lanes as threads with a CUDA stream each (a threaded actor,
``max_concurrency`` = its lanes). Kernels of one process's streams run side by side, while
processes sharing a GPU take turns: with one actor per slot (``processes_per_gpu`` =
``slots_per_gpu``, this executor's only layout before) Ray trained the paper protocol at 0.83x
the local worker's rate on 4 H200s (bench/RESULTS.md). CPU actors host one lane each.

Data flow (the worker stays the only writer of the store):

- ``submit`` calls ``SlotActor.run(task, generation)``; the call returns the run's final
  message ('done' with numpy arrays, 'cancelled' or 'error'), which ``poll`` fetches and hands
  to the worker.
- 'epoch' messages are fire-and-forget calls on a small mailbox actor next to the worker;
  ``poll`` drains it. A run waits for its last 'epoch' message to land before it returns, so
  the worker never sees an 'epoch' of a run after that run's final message.
- Cancel: ``set_cancel(True)`` calls ``SlotActor.set_cancel`` on every actor. That method is in
  its own concurrency group, so it runs while ``run`` is busy training; the run stops at the
  next epoch boundary. Cancels are numbered by a generation that each run carries, so a cancel
  can only stop runs submitted before it (never a run of the next job).
- Faults: if an actor dies mid-run (killed, out of memory, node lost), its slots get one fresh
  actor and each run that was in flight on it is resubmitted, at most ``max_retries`` times;
  then the run ends with an 'error' message. A run is reported 'done' at most once per
  submission, so a retried run can never be recorded twice. Each loss and retry is a 'log'
  message, so it shows in the job's log on the Jobs page (``softgrade worker --max-retries N``
  sets the limit).

Every Ray node must see the worker's SOFTGRADE_HOME at the same path (a shared filesystem):
`RunTask` carries paths to the dataset cache and to the checkpoint, not the data itself. The
store need not be shared (nodes never open it): SOFTGRADE_DB keeps it on the worker's disk.
Methods added outside the checkout (``SOFTGRADE_METHOD_PACKAGES``) reach the actors through
their runtime environment (`actor_env_vars`), with the folders their packages came from.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import ray
import torch
from ray.actor import ActorHandle
from ray.exceptions import (
    GetTimeoutError,
    NodeDiedError,
    ObjectLostError,
    RayActorError,
    RayError,
    WorkerCrashedError,
)
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from engine.grade_model import resolve_device
from engine.methods import PLUGIN_VARIABLE
from jobs.worker.executors import Executor, Handle, split_lanes
from jobs.worker.lane_group import LaneGroup
from jobs.worker.settings import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_THREADS_PER_SLOT,
    check_threads_per_slot,
)
from jobs.worker.slots import (
    SlotState,
    execute_run,
    lane_stream,
    new_lane_stream,
    prime_device,
)
from jobs.worker.tasks import Message, RunTask

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]

# Failures that lose the attempt but say nothing about the run itself: the actor or its node
# went away (ray.kill, out-of-memory killer, lost machine), so the run is worth retrying.
LOST_ATTEMPT: tuple[type[Exception], ...] = (
    RayActorError,  # includes ActorDiedError and ActorUnavailableError
    WorkerCrashedError,
    NodeDiedError,
    ObjectLostError,
)


def actor_env_vars(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment variables every slot actor gets (Ray's ``runtime_env`` ``env_vars``).

    This checkout comes first on ``PYTHONPATH``. Where ``SOFTGRADE_METHOD_PACKAGES`` names a
    lab's method packages, the actors get it too, and the folders those packages were
    imported from join their ``PYTHONPATH``: an actor's process starts from the Ray node's
    environment, not the worker's, so without them a method added outside the checkout would
    be unknown there. The actors' own setting overrides the cluster's, so this holds also
    when the worker joins a Ray instance started without them.
    """
    environ = os.environ if environ is None else environ
    paths = [str(REPO_ROOT)]
    env = {}
    packages = environ.get(PLUGIN_VARIABLE, "")
    if packages.strip():
        env[PLUGIN_VARIABLE] = packages
        for name in filter(None, (n.strip() for n in packages.split(","))):
            paths += [p for p in _package_roots(name) if p not in paths]
    env["PYTHONPATH"] = os.pathsep.join([*paths, "${PYTHONPATH}"])
    return env


def _package_roots(name: str) -> list[str]:
    """The folders on ``sys.path`` that hold package ``name`` (its import roots here)."""
    try:
        spec = importlib.util.find_spec(name)
    except ImportError:  # a parent package missing: the registry names it when it loads
        return []
    if spec is None or spec.submodule_search_locations is None:
        return []
    depth = name.count(".") + 1
    return [str(Path(p).parents[depth - 1]) for p in spec.submodule_search_locations]


@ray.remote(num_cpus=0)
class _Mailbox:
    """Collects 'epoch' messages from every slot actor until the worker drains them."""

    def __init__(self) -> None:
        self._messages: list[Message] = []

    def put(self, message: Message) -> None:
        """Keep one message."""
        self._messages.append(message)

    def drain(self) -> list[Message]:
        """Every message kept since the last drain, oldest first."""
        messages, self._messages = self._messages, []
        return messages


class SlotActor:
    """Body of a slot actor: its lanes train runs one after another and keep their caches.

    It is a plain class so that tests can subclass it (e.g. to die mid-run); `RayExecutor`
    turns it into a Ray actor class with the resources of its slots.
    """

    def __init__(
        self, first_slot: int, device: str, mailbox: ActorHandle, cancel_upto: int, lanes: int = 1
    ) -> None:
        """Build the lanes' caches on this actor's device.

        Args:
            first_slot: Executor-wide index of this actor's first lane; lanes are numbered on
                (each message is tagged with its lane's slot).
            device: 'cpu' or 'cuda' (Ray has already set CUDA_VISIBLE_DEVICES to our GPU).
            mailbox: Where 'epoch' messages go.
            cancel_upto: Runs of this generation or older are cancelled (-1: none).
            lanes: Slots this actor hosts, each a thread with its own CUDA stream.
        """
        self.first_slot = first_slot
        self._mailbox = mailbox
        self._cancel_upto = cancel_upto
        # A lane's call in flight: its slot, last 'epoch' put and final message. Ray runs
        # each call on a thread of the actor's pool, so what belongs to a call is per thread.
        self._call = threading.local()
        resolved = resolve_device(device)
        # A CPU actor reserves ``threads_per_slot`` CPUs per lane (RayExecutor); torch uses
        # exactly those, as a local CPU slot does, so both give the same numbers and slots
        # sharing a node do not oversubscribe it. A GPU actor reserves none and, as a local GPU
        # slot process, may use every core for its CPU-side work (compiles among it). With 1
        # thread, a Ray actor's compile ahead took 100 s against the local worker's 75-77 s
        # on 4 H200s; whether the thread count was the cause is not measured.
        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 0)
        threads = (os.cpu_count() or 1) if resolved.type == "cuda" else max(1, int(cpus))
        torch.set_num_threads(threads)
        prime_device(resolved)  # CUDA context and compiler front end before the first run
        # One group per actor, as per local slot process: one lane compiles ahead for all.
        group = LaneGroup(lanes) if lanes > 1 else None
        self._states = [SlotState(device=resolved, group=group) for _ in range(lanes)]
        self._streams = [new_lane_stream(resolved) for _ in range(lanes)]

    @property
    def lanes(self) -> int:
        """How many slots this actor hosts."""
        return len(self._states)

    def describe(self) -> dict[str, Any]:
        """Where this actor lives: host, device as the worker registry shows it, pid, lanes."""
        device = str(self._states[0].device)
        gpu_ids = ray.get_gpu_ids()
        if self._states[0].device.type == "cuda" and gpu_ids:
            device = f"cuda:{gpu_ids[0]}"  # the node's GPU index, not the remapped cuda:0
        return {
            "host": socket.gethostname(),
            "device": device,
            "pid": os.getpid(),
            "lanes": self.lanes,
        }

    @ray.method(concurrency_group="control")
    def set_cancel(self, generation: int) -> None:
        """Stop runs of ``generation`` or older at their next epoch boundary.

        Runs in the 'control' concurrency group, i.e. on its own thread while ``run`` trains.
        """
        self._cancel_upto = max(self._cancel_upto, generation)

    def run(self, task: RunTask, generation: int, lane: int = 0) -> Message:
        """Train one run on ``lane``; return its final message ('done', 'cancelled' or
        'error')."""
        call = self._call
        call.slot, call.final, call.last_put = self.first_slot + lane, None, None
        problem = missing_cache_message(task.cache_dir)
        if problem is not None:
            return {
                "job_id": task.job_id,
                "run_id": task.run_id,
                "kind": "error",
                "traceback": problem,
                "slot": call.slot,
            }
        with lane_stream(self._streams[lane]):
            execute_run(
                self._states[lane],
                task,
                emit=self._emit,
                should_stop=lambda: self._cancel_upto >= generation,
            )
        self._flush_epochs()
        assert call.final is not None, "execute_run always emits a final message"
        return call.final

    def _flush_epochs(self) -> None:
        """Wait until this call's 'epoch' messages are in the mailbox.

        Calls from one caller to one actor run in order, so once the last put is done every
        'epoch' message of this run is in the mailbox before the result returns.
        """
        if self._call.last_put is not None:
            ray.get(self._call.last_put)
            self._call.last_put = None

    def _emit(self, message: Message) -> None:
        """Send 'epoch' messages to the mailbox now; keep the final one to return."""
        message = {**message, "slot": self._call.slot}
        if message["kind"] == "epoch":
            self._call.last_put = self._mailbox.put.remote(message)
        else:
            self._call.final = message


def missing_cache_message(cache_dir: str) -> str | None:
    """A clear error if the dataset cache is not visible on this node, else None."""
    if (Path(cache_dir) / "manifest.json").exists():
        return None
    return (
        f"the dataset cache {cache_dir} is not visible on Ray node {socket.gethostname()}. "
        "Every Ray node must see the worker's SOFTGRADE_HOME at the same path (a shared "
        "filesystem such as NFS): see 'Running on a Ray cluster' in README.md."
    )


@dataclass
class _Flight:
    """A run in flight: the task, its slot, the actor it went to, the pending result and which
    attempt this is."""

    task: RunTask
    slot: int
    actor: ActorHandle
    ref: ray.ObjectRef
    attempt: int


class RayExecutor(Executor):
    """Slots as long-lived Ray actors, with fractional GPUs when the cluster has GPUs."""

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        device: str = "auto",
        slots_per_gpu: int = 1,
        processes_per_gpu: int = 1,
        cpu_slots: int = 1,
        cpu_lanes: int = 1,
        max_retries: int = DEFAULT_MAX_RETRIES,
        threads_per_slot: int = DEFAULT_THREADS_PER_SLOT,
        startup_timeout_s: float = 300.0,
        actor_class: type[SlotActor] = SlotActor,
    ) -> None:
        """Connect to Ray and start one actor per slot.

        Args:
            address: Ray cluster address ('HOST:6379', or 'auto' for the cluster this machine
                belongs to); None starts a private local instance.
            device: 'auto' (GPUs if the cluster has any), 'cpu' or 'cuda'.
            slots_per_gpu: Slots (lanes) per GPU.
            processes_per_gpu: Actors those lanes are spread over; each asks for
                1/processes_per_gpu of a GPU (default one actor holding the GPU). Where
                it does not divide ``slots_per_gpu`` the actors' lanes differ by one, and Ray
                chooses which GPU gets which actor, so GPUs may hold unequal lanes.
            cpu_slots: Actors when training on CPUs.
            cpu_lanes: Lanes of each CPU actor (1; more lets tests drive several lanes of
                one actor without a GPU). Each lane reserves ``threads_per_slot`` CPUs.
            max_retries: How often a run whose actor died is resubmitted before it fails.
            threads_per_slot: CPUs each CPU actor reserves and torch threads it trains with.
            startup_timeout_s: How long to wait for every actor to start (placement, imports).
            actor_class: The slot body (tests pass a subclass that misbehaves).
        """
        if min(slots_per_gpu, processes_per_gpu, cpu_slots, cpu_lanes) < 1 or max_retries < 0:
            raise ValueError(
                f"{slots_per_gpu=}, {processes_per_gpu=}, {cpu_slots=} and {cpu_lanes=} must "
                f"be >= 1, {max_retries=} >= 0"
            )
        if device not in ("auto", "cpu", "cuda"):
            raise ValueError(
                f"device {device!r}: use 'auto', 'cpu' or 'cuda' with Ray (Ray assigns the GPUs)"
            )
        self.max_retries = max_retries
        self.threads_per_slot = check_threads_per_slot(threads_per_slot)
        self.restarts = 0  # actors replaced after dying mid-run (for logs and tests)
        self._owns_ray = not ray.is_initialized()
        try:
            ray.init(
                # "local" always starts a private instance; None would join a cluster that
                # `ray start` left on this machine. "auto" joins it on purpose.
                address=address or "local",
                ignore_reinit_error=True,
                include_dashboard=False,
                logging_level=logging.WARNING,
                # Actors import `engine` and `jobs`: put this checkout first on their path, so
                # nodes need the same checkout at the same path, not an installed package.
                runtime_env={"env_vars": actor_env_vars()},
            )
        except (ConnectionError, RayError) as exc:
            raise RuntimeError(
                f"could not connect to the Ray cluster at {address!r}: {exc}. Is it up "
                "(`ray status`)? A cluster with token authentication also needs "
                "RAY_AUTH_MODE=token here and its token in ~/.ray/auth_token or "
                "RAY_AUTH_TOKEN; see 'Running on a Ray cluster' in README.md"
            ) from exc
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        self._use_gpu = device != "cpu" and gpus > 0
        problem = None
        if device == "cuda" and gpus == 0:
            problem = "device 'cuda' asked for, but the Ray cluster has no GPU"
        elif not self._use_gpu and cpu_slots * cpu_lanes * threads_per_slot > resources.get(
            "CPU", 0
        ):
            problem = (
                f"{cpu_slots * cpu_lanes} CPU slot(s) of {threads_per_slot} thread(s) asked "
                f"for, but the Ray cluster has {resources.get('CPU', 0):g} CPU(s)"
            )
        if problem is not None:
            if self._owns_ray:
                ray.shutdown()
            raise ValueError(problem)
        if self._use_gpu:
            # An actor per process of each GPU, its share of the GPU's lanes; no CPU
            # reservation: with several lanes per GPU a node may have more slots than cores,
            # and a GPU slot keeps its data on the GPU, so it needs little CPU.
            per_gpu = split_lanes(slots_per_gpu, processes_per_gpu)
            self._actor_lanes = per_gpu * gpus
            per_actor: dict[str, Any] = {"num_gpus": 1 / len(per_gpu), "num_cpus": 0}
        else:
            self._actor_lanes = [cpu_lanes] * cpu_slots
            per_actor = {"num_cpus": threads_per_slot * cpu_lanes}
        # Actor k hosts slots first_slot[k] .. first_slot[k] + lanes - 1.
        self._first_slot = [sum(self._actor_lanes[:k]) for k in range(len(self._actor_lanes))]
        self._slot_actor = [k for k, n in enumerate(self._actor_lanes) for _ in range(n)]
        # ray.remote accepts concurrency_groups for an actor class; its typed overloads omit it.
        as_actor = ray.remote(concurrency_groups={"control": 1})  # type: ignore[call-overload]
        self._actor_cls = as_actor(actor_class)
        self._actor_options = {
            "max_restarts": 0,  # this executor replaces dead actors itself, to retry the run
            "max_task_retries": 0,
            # Also on the actors: a Ray instance this worker joined kept its own runtime_env.
            "runtime_env": {"env_vars": actor_env_vars()},
            **per_actor,
        }
        # @ray.remote makes _Mailbox an ActorClass (which has .options); ray's stubs type the
        # decorated class as the class itself.
        self._mailbox = _Mailbox.options(  # type: ignore[attr-defined]
            # Keep the mailbox on the worker's node: it lives and dies with the worker.
            scheduling_strategy=NodeAffinitySchedulingStrategy(
                node_id=ray.get_runtime_context().get_node_id(), soft=True
            )
        ).remote()
        self._generation = 0  # bumped when a cancel is cleared; runs carry it
        self._cancelled = False
        self._flights: dict[str, _Flight] = {}
        self._slot_run: list[str | None] = [None] * len(self._slot_actor)
        self._reported: set[str] = set()
        self._tick_s = 0.25
        self._closed = False
        self._actors = [self._new_actor(k) for k in range(len(self._actor_lanes))]
        actors = self._wait_for_actors(startup_timeout_s)
        self._devices = [actors[k] for k in self._slot_actor]  # one entry per slot
        log.info(
            "Ray executor: %d slot(s) in %d actor(s) on %s",
            len(self._slot_actor),
            len(actors),
            ", ".join(f"{d['device']}@{d['host']} ({d['lanes']} lane(s))" for d in actors),
        )

    # -- Executor API ------------------------------------------------------------------------

    @property
    def slots(self) -> int:
        return len(self._slot_actor)

    @property
    def devices(self) -> list[str]:
        return [d["device"] for d in self._devices]

    def free_slots(self) -> int:
        return sum(run is None for run in self._slot_run)

    def sharing(self, slot: int) -> int:
        """Slots on the same GPU of the same node (actors on other nodes share nothing)."""
        mine = self._devices[slot]
        if not mine["device"].startswith("cuda"):
            return 1
        return sum(
            d["host"] == mine["host"] and d["device"] == mine["device"] for d in self._devices
        )

    def submit(self, task: RunTask) -> None:
        slot = self._slot_run.index(None)
        # Actors run elsewhere (other cwd, other machine): send absolute paths.
        task = replace(
            task,
            cache_dir=os.path.abspath(task.cache_dir),
            checkpoint_path=os.path.abspath(task.checkpoint_path) if task.checkpoint_path else None,
            compile_cache=os.path.abspath(task.compile_cache) if task.compile_cache else None,
        )
        # A submission from the worker is a new decision (it checked the store); only
        # duplicates within this submission and its retries are guarded against.
        self._reported.discard(task.run_id)
        self._start(task, slot, attempt=0)

    def poll(self, timeout_s: float, handle: Handle) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            by_ref = {flight.ref: run_id for run_id, flight in self._flights.items()}
            wait_s = max(0.0, min(self._tick_s, deadline - time.monotonic()))
            ready: list[ray.ObjectRef] = []
            if by_ref:
                ready, _ = ray.wait(list(by_ref), num_returns=1, timeout=wait_s)
                if ready:
                    ready, _ = ray.wait(list(by_ref), num_returns=len(by_ref), timeout=0)
            else:
                time.sleep(wait_s)
            # Drain after waiting: a finished run flushed its 'epoch' messages before
            # returning, so they are handled before its final message.
            epochs = ray.get(self._mailbox.drain.remote())
            for message in epochs:
                if message["run_id"] in self._flights:  # not from an abandoned attempt
                    handle(message)
            for ref in ready:
                self._resolve(by_ref[ref], handle)
            if epochs or ready or time.monotonic() >= deadline:
                return

    def set_cancel(self, cancelled: bool) -> None:
        """Cancel every run submitted so far at its next epoch boundary, or clear that."""
        if cancelled and not self._cancelled:
            self._cancelled = True
            for actor in self._actors:
                actor.set_cancel.remote(self._generation)  # fire and forget
        elif not cancelled and self._cancelled:
            # Later runs carry a newer generation, which the cancel above does not cover.
            self._cancelled = False
            self._generation += 1

    def close(self) -> None:
        """Stop every actor; shut Ray down if this executor started it."""
        if self._closed:
            return
        self._closed = True
        for actor in [*self._actors, self._mailbox]:
            with contextlib.suppress(RayError):  # already gone
                ray.kill(actor)
        if self._owns_ray:
            ray.shutdown()

    # -- helpers -----------------------------------------------------------------------------

    def _new_actor(self, k: int) -> ActorHandle:
        """Start actor ``k`` with its lanes, one thread of its pool per lane."""
        cancel_upto = self._generation if self._cancelled else -1
        device = "cuda" if self._use_gpu else "cpu"
        lanes = self._actor_lanes[k]
        return self._actor_cls.options(**self._actor_options, max_concurrency=lanes).remote(
            self._first_slot[k], device, self._mailbox, cancel_upto, lanes
        )

    def _wait_for_actors(self, timeout_s: float) -> list[dict[str, Any]]:
        refs = [actor.describe.remote() for actor in self._actors]
        try:
            return ray.get(refs, timeout=timeout_s)
        except GetTimeoutError as exc:
            self.close()
            raise RuntimeError(
                f"{len(refs)} Ray slot actor(s) did not all start within {timeout_s:g} s; "
                "the cluster may lack free CPUs/GPUs for them (see `ray status`)"
            ) from exc
        except RayError as exc:
            self.close()
            raise RuntimeError(
                "a Ray slot actor failed to start; every node needs this SoftGrade checkout "
                f"at {REPO_ROOT} with the same Python packages: {exc}"
            ) from exc

    def _start(self, task: RunTask, slot: int, attempt: int) -> None:
        k = self._slot_actor[slot]
        actor = self._actors[k]
        ref: ray.ObjectRef = actor.run.remote(task, self._generation, slot - self._first_slot[k])
        self._flights[task.run_id] = _Flight(task, slot, actor, ref, attempt)
        self._slot_run[slot] = task.run_id

    def _resolve(self, run_id: str, handle: Handle) -> None:
        """Turn a finished call into a message for the worker, or retry a lost attempt."""
        flight = self._flights.pop(run_id)
        self._slot_run[flight.slot] = None
        base = {"job_id": flight.task.job_id, "run_id": run_id, "slot": flight.slot}
        try:
            message = ray.get(flight.ref)
        except LOST_ATTEMPT as exc:
            self._replace_actor(flight, exc)
            if self._cancelled:
                message = {**base, "kind": "cancelled"}
            elif flight.attempt < self.max_retries:
                text = (
                    f"run {run_id} lost its Ray actor on slot {flight.slot} (attempt "
                    f"{flight.attempt + 1} of {self.max_retries + 1}: {type(exc).__name__}); "
                    "retrying it on a fresh actor"
                )
                log.warning(text)
                handle({**base, "kind": "log", "text": text})
                self._start(flight.task, flight.slot, flight.attempt + 1)
                return
            else:
                message = {
                    **base,
                    "kind": "error",
                    "traceback": (
                        f"run {run_id} lost its Ray actor {flight.attempt + 1} time(s) and was "
                        f"not retried again (max_retries={self.max_retries}); running out of "
                        f"memory or losing a node is the usual cause. Last error: {exc}"
                    ),
                }
        except RayError as exc:  # e.g. the task could not be unpickled on the node
            message = {**base, "kind": "error", "traceback": f"Ray could not run {run_id}: {exc}"}
        self._deliver(message, handle)

    def _deliver(self, message: Message, handle: Handle) -> None:
        """Hand a final message to the worker; a second 'done' for a run is dropped."""
        if message["kind"] == "done":
            if message["run_id"] in self._reported:
                log.error("dropping a second result for run %s", message["run_id"])
                return
            self._reported.add(message["run_id"])
        handle(message)

    def _replace_actor(self, flight: _Flight, exc: Exception) -> None:
        """Give the lost flight's slots a fresh actor, once per dead actor: its other lanes'
        runs fail with the same loss, and their retries go to the fresh actor."""
        k = self._slot_actor[flight.slot]
        if self._actors[k] is not flight.actor:
            return  # replaced when another lane's run of the dead actor came back
        log.warning(
            "Ray actor of slot(s) %d-%d died (%s); starting a fresh actor",
            self._first_slot[k],
            self._first_slot[k] + self._actor_lanes[k] - 1,
            type(exc).__name__,
        )
        with contextlib.suppress(RayError):  # already gone
            ray.kill(self._actors[k], no_restart=True)
        self._actors[k] = self._new_actor(k)
        self.restarts += 1
