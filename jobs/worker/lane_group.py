"""What the lanes of one slot process share: one lane compiles the study's other tasks ahead,
while its siblings train their first runs.

Left to each lane after its first run, the second task's cold compile stalled the GPU for
~20 s once per slot process (issue 30, measured on 4 H200s): a process's lanes end their
first runs within seconds of one another, and a compile holds every other lane's run start
(`engine.train_graphs.GLOBAL_STATE_LOCK`). So one lane of the group waits until its siblings
have compiled and started their first runs, compiles every task's steps while they train,
and only then trains its own first run. The siblings do not warm: their trainers of the other
tasks capture from the process's caches when first used (0.5-2 s each, not ~20 s), and their
next runs of a seed already drawn start without the lock (`engine.train.Trainer.reset`), so
the GPU has their work while one lane compiles.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

#: How long the warming lane waits for its siblings to begin their first runs (the worker
#: hands every ready lane a run at once, so they arrive within milliseconds; a sibling
#: without a run, in a job of fewer runs than lanes, never does).
SETTLE_S = 2.0
#: The longest the warming lane waits for its siblings' first compiles (a cold compile of
#: one task took 17-26 s on an H200; beyond this it compiles anyway).
COMPILE_WAIT_S = 300.0


class LaneGroup:
    """The lanes of one slot process: who warms ahead, and which lanes are still compiling."""

    def __init__(
        self, lanes: int, *, settle_s: float = SETTLE_S, compile_wait_s: float = COMPILE_WAIT_S
    ) -> None:
        self.lanes = lanes
        self.settle_s = settle_s
        self.compile_wait_s = compile_wait_s
        self._changed = threading.Condition()
        self._warmer_claimed = False
        self._begun = 0  # sibling lanes that began their first run
        self._compiling = 0  # of those, lanes not yet past their first epoch

    def claim_warming(self) -> bool:
        """True for the one lane that compiles ahead (the first to ask), where the process
        has other lanes to keep the GPU busy meanwhile; False for every other call."""
        with self._changed:
            if self._warmer_claimed or self.lanes < 2:
                return False
            self._warmer_claimed = True
            return True

    @contextlib.contextmanager
    def first_run(self) -> Iterator[Callable[[], None]]:
        """Around a sibling's first run: it counts as compiling until it calls the function
        this yields (at the end of its first epoch, once its steps are compiled) or the run
        ends, whichever comes first."""
        with self._changed:
            self._begun += 1
            self._compiling += 1
            self._changed.notify_all()
        finished = threading.Event()

        def compiled() -> None:
            if finished.is_set():
                return
            finished.set()
            with self._changed:
                self._compiling -= 1
                self._changed.notify_all()

        try:
            yield compiled
        finally:
            compiled()

    def wait_for_siblings(self) -> float:
        """Block the warming lane until its siblings have begun their first runs (at most
        ``settle_s``) and none of them is still compiling (at most ``compile_wait_s``); the
        seconds it waited."""
        started = time.perf_counter()
        with self._changed:
            self._changed.wait_for(lambda: self._begun >= self.lanes - 1, timeout=self.settle_s)
            self._changed.wait_for(lambda: self._compiling == 0, timeout=self.compile_wait_s)
        return time.perf_counter() - started
