"""Process pools that start cleanly from any caller, a Streamlit server included.

Under the ``spawn`` start method each child re-runs the parent's ``__main__`` (as
``__mp_main__``) unless it is a module run by name. Streamlit replaces
``sys.modules["__main__"]`` with the page script it ran last and leaves it there, so a pool
started from a page (or from a test process after an AppTest) would run that page in every
child, and a child that fails there is started again, forever. The pools' work lives in
importable engine modules, so their children need nothing from ``__main__``:
`spawn_pool` starts them while ``__main__`` is an empty module.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.pool
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def main_module_hidden() -> Iterator[None]:
    """``sys.modules["__main__"]`` is an empty module (no file, no spec) inside the block."""
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def spawn_pool(
    workers: int, initializer: Callable[..., None], initargs: tuple[Any, ...] = ()
) -> multiprocessing.pool.Pool:
    """A ``spawn`` pool of ``workers`` processes whose children do not re-run ``__main__``.

    The children start inside the call (``Pool`` starts them all at once), so hiding
    ``__main__`` only while it runs is enough.
    """
    context = multiprocessing.get_context("spawn")
    with main_module_hidden():
        return context.Pool(workers, initializer=initializer, initargs=initargs)
