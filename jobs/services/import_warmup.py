"""Import what the pages import while the server waits for its first visitor.

A page's first visit in a server process pays for the modules its file imports: Launch pulls
the statistics libraries (scipy, baycomp, statsmodels, altair) through its widgets, 3-10 s
on a 2-core machine, all before its heading. ``python -m jobs up`` starts `start_warmup` in
the app process (`jobs.services.serve_app`), so a background thread imports them while the
server starts and the first browser loads Streamlit's page: the first visitor finds most of
them imported, and a later visitor of each page finds all of them.

It imports exactly what visiting every page would (each page file's top-level imports, and
the entrypoint's), nothing more. Attention and Grade a film import torch, so the app process
holds it (about 0.5 GB) from the start rather than from the first visit of one of them. The
order is a first
visit's: the entrypoint's imports, then each page's in menu order (Launch, the landing page,
first). A visitor's script thread that asks for a module the warm-up is importing waits for
that import to finish rather than repeating it, and following the same order keeps both
threads entering circular imports from the same side. Between the entrypoint's imports and
the pages' it also sets up the store (`store.db.init_schema_once`): the process's first open
of it costs 0.2-0.5 s, which the first visitor's sign-in check would otherwise wait for.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

# Streamlit's cache decorators pick their storage when the runtime exists; a module imported
# before it would keep an in-memory fallback, so the warm-up waits for the runtime first.
RUNTIME_WAIT_S = 60.0
_POLL_S = 0.05


def top_level_imports(script: Path) -> list[str]:
    """The modules ``script`` imports at its top level, in file order.

    ``from package import name`` yields ``package.name`` where that is a submodule (``from
    pages.widgets import shell``), else ``package``. Relative imports are skipped (page files
    have none).
    """
    modules: list[str] = []
    for node in ast.parse(script.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module == "__future__":
                continue
            modules.append(node.module)
            modules += [
                f"{node.module}.{alias.name}"
                for alias in node.names
                if _is_submodule(node.module, alias.name)
            ]
    return list(dict.fromkeys(modules))


def _is_submodule(package: str, name: str) -> bool:
    """Whether ``package.name`` is a module of its own (found without importing it)."""
    try:
        spec = importlib.util.find_spec(package)
        if spec is None or spec.submodule_search_locations is None:
            return False
        return importlib.util.find_spec(f"{package}.{name}") is not None
    except (ImportError, ValueError):
        return False


#: Where SoftGrade's own modules live (their imports are followed by `declares_component`).
_REPO_ROOT = Path(__file__).resolve().parents[2]
_OWN_PACKAGES = ("app", "engine", "jobs", "pages", "store")


def _is_component_package(module: str) -> bool:
    """A third-party Streamlit component (``streamlit_image_coordinates``: the convention)."""
    return module.split(".")[0].startswith("streamlit_")


def _own_source(module: str) -> Path | None:
    if module.split(".")[0] not in _OWN_PACKAGES:
        return None
    base = _REPO_ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def declares_component(module: str, _seen: set[str] | None = None) -> bool:
    """Whether importing ``module`` imports a Streamlit component package, directly or
    through SoftGrade's own modules (read, not imported).

    A component declared outside a script run is not registered (Streamlit's
    `declare_component` needs a ScriptRunContext), and once its module is imported no page
    run declares it again: the component's frame then never loads (the crop review's film
    did not show). So the warm-up leaves such modules to the page's own run.
    """
    seen = set() if _seen is None else _seen
    if module in seen:
        return False
    seen.add(module)
    if _is_component_package(module):
        return True
    source = _own_source(module)
    if source is None:
        return False
    return any(declares_component(name, seen) for name in _imported_names(source))


# Cached: `declares_component` walks SoftGrade's import graph again for each page module, and
# parsing every file on every walk made `page_modules` take ~5 s of CPU; files do not change
# under a running app.
@functools.cache
def _imported_names(source: Path) -> tuple[str, ...]:
    """Every module ``source`` may import at its top level, read from the file alone:
    `top_level_imports` asks importlib whether ``from a import b`` names a module, which
    imports ``a``, and the warm-up must import nothing before Streamlit's runtime exists."""
    names: list[str] = []
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names]
    return tuple(names)


def page_modules(entrypoint: Path, first: str | None = None) -> list[str]:
    """What a first visit of every page imports, in a first visit's order: the entrypoint's
    imports, then each page file's (``pages/<stem>.py`` beside it), page ``first`` (the
    landing page, e.g. the kiosk's) before the others, the others in menu order."""
    from jobs.services.access import PAGES

    stems = [page.stem for page in PAGES]
    if first in stems:
        stems = [first, *(stem for stem in stems if stem != first)]
    scripts = [entrypoint, *(entrypoint.parent / "pages" / f"{stem}.py" for stem in stems)]
    modules: list[str] = []
    for script in scripts:
        if script.is_file():
            modules += top_level_imports(script)
    return [m for m in dict.fromkeys(modules) if not declares_component(m)]


def _streamlit_runtime_exists() -> bool:
    from streamlit import runtime

    return runtime.exists()


# A step of the warm-up: a module to import, or a call (the store's set-up).
Step = str | Callable[[], object]


def set_up_store() -> None:
    """Open (and set up) the app's store once in this process (`store.db.init_schema_once`)."""
    from store.db import init_schema_once

    init_schema_once()


def warm_up_steps(entrypoint: Path, first: str | None = None) -> list[Step]:
    """`page_modules` with `set_up_store` after the entrypoint's own imports: every visit's
    run opens the store in the sign-in check, before the page's imports are needed."""
    modules = page_modules(entrypoint, first)
    shell = len(top_level_imports(entrypoint))
    return [*modules[:shell], set_up_store, *modules[shell:]]


def warm_imports(
    steps: list[Step], runtime_ready: Callable[[], bool] = _streamlit_runtime_exists
) -> list[Step]:
    """Take ``steps`` (import a module, or call a function) once ``runtime_ready()`` holds
    (or `RUNTIME_WAIT_S` passed); return those that failed. A failure is logged and left for
    the page to meet (and report) on its own, as it would without the warm-up."""
    deadline = time.monotonic() + RUNTIME_WAIT_S
    while not runtime_ready() and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    failed = []
    started = time.perf_counter()
    for step in steps:
        try:
            if callable(step):
                step()
            else:
                importlib.import_module(step)
        except Exception:  # the page itself will say what is wrong
            log.debug("warm-up step %s failed", step, exc_info=True)
            failed.append(step)
    log.info("page imports warmed in %.1f s", time.perf_counter() - started)
    return failed


def start_warmup(entrypoint: Path, first: str | None = None) -> threading.Thread:
    """Start the warm-up (`warm_up_steps`) in a daemon thread."""
    thread = threading.Thread(
        target=warm_imports,
        args=(warm_up_steps(entrypoint, first),),
        name="softgrade-import-warmup",
        daemon=True,
    )
    thread.start()
    return thread
