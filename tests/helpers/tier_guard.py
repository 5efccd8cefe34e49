"""The fast tier's definition, enforced: a fast test starts no process and trains no model.

`tests/conftest.py` arms `guard_fast_test` around every test that is not marked ``slow`` (e2e
tests are slow too). Each of the three costs the tier leaves out has one choke point here:

* a process: `subprocess.Popen` (``subprocess.run``, ``check_output``, Playwright's driver
  and so a browser all go through it) and `multiprocessing.process.BaseProcess.start`
  (``Process``, ``Pool``, ``ProcessPoolExecutor`` and torch's DataLoader workers). Only the
  programs in `CHEAP_PROGRAMS` may start: ``git``, which provenance asks for the code's
  version (jobs/services/provenance.py) in a few milliseconds, where an interpreter costs
  seconds;
* training: `engine.train.Trainer.fit` (every grading run, `engine.train.fit` included), and
  more than `OPTIMISER_STEP_BUDGET` optimiser steps in one test (a hand-written loop, the
  detector's training through ultralytics). A handful of steps is a unit test of a step.

The guarded call fails the test at once (`pytest.fail`, a BaseException, so a broad
``except Exception`` in the code under test cannot swallow it) and again at teardown, for a
call made on a thread whose exception the test never sees.
"""

from __future__ import annotations

import multiprocessing.process
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from torch.optim.optimizer import register_optimizer_step_pre_hook

#: Optimiser steps a fast test may take: enough to check one step or a short schedule,
#: far from a run (a two-epoch run on the tiny phantom takes ~10 steps per method and task).
OPTIMISER_STEP_BUDGET = 8

#: Programs a fast test may start: native, and done in milliseconds.
CHEAP_PROGRAMS = frozenset({"git"})

REMEDY = (
    "the fast tier starts no process, trains no model and opens no browser: call the code "
    "in-process (tests/helpers/cli.py runs a command in this process), use a smaller "
    "case, or mark the test @pytest.mark.slow"
)


class TierViolations:
    """What a fast test did on a thread of its own, which the test itself may never see."""

    def __init__(self) -> None:
        self.on_threads: list[str] = []

    def refuse(self, what: str) -> None:
        """Fail the test now; remember ``what`` when it happened off the main thread."""
        message = f"fast-tier test {what}; {REMEDY}"
        if threading.current_thread() is not threading.main_thread():
            self.on_threads.append(message)
        pytest.fail(message, pytrace=False)


def _refusing(violations: TierViolations, what: str) -> Callable[..., Any]:
    def refuse(*_args: object, **_kwargs: object) -> Any:
        violations.refuse(what)

    return refuse


def _program(args: object) -> str:
    """The program a `subprocess.Popen` call starts (``args`` as Popen takes them)."""
    first = args.split()[0] if isinstance(args, str) and args.strip() else args
    if isinstance(first, list | tuple) and first:
        first = first[0]
    return (
        os.path.basename(os.fsdecode(first)) if isinstance(first, str | bytes | os.PathLike) else ""
    )


def _popen_refusing(violations: TierViolations) -> Callable[..., None]:
    """`subprocess.Popen.__init__` that starts only `CHEAP_PROGRAMS`."""
    original = subprocess.Popen.__init__

    def init(self: subprocess.Popen, args: Any, *rest: Any, **kwargs: Any) -> None:
        program = _program(kwargs.get("executable") or args)
        if program not in CHEAP_PROGRAMS:
            violations.refuse(f"started a process ({program or args!r})")
        original(self, args, *rest, **kwargs)

    return init


@contextmanager
def guard_fast_test(monkeypatch: pytest.MonkeyPatch) -> Iterator[TierViolations]:
    """Within the block, starting a process or training a model fails the test."""
    from engine.train import Trainer  # torch-heavy; imported once the tests are collected

    violations = TierViolations()
    monkeypatch.setattr(subprocess.Popen, "__init__", _popen_refusing(violations))
    monkeypatch.setattr(
        multiprocessing.process.BaseProcess,
        "start",
        _refusing(violations, "started a process (multiprocessing)"),
    )
    monkeypatch.setattr(Trainer, "fit", _refusing(violations, "trained a model (Trainer.fit)"))
    steps = [0]

    def count_step(*_args: object) -> None:
        steps[0] += 1
        if steps[0] > OPTIMISER_STEP_BUDGET:
            violations.refuse(f"took more than {OPTIMISER_STEP_BUDGET} optimiser steps")

    handle = register_optimizer_step_pre_hook(count_step)
    try:
        yield violations
    finally:
        handle.remove()
