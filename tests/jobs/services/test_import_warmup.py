"""The app process imports what the pages import before their first visitors (issue 31)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jobs.services.import_warmup import (
    declares_component,
    page_modules,
    set_up_store,
    top_level_imports,
    warm_imports,
    warm_up_steps,
)
from jobs.services.serve_app import _entrypoint

APP = Path(__file__).parents[3] / "app.py"


def test_a_page_files_imports_are_listed_with_its_widget_submodules(tmp_path):
    page = tmp_path / "page.py"
    page.write_text(
        "from __future__ import annotations\n"
        "import json\n"
        "from pages.widgets import shell, not_a_module\n"
        "from pages.widgets.reads import store_path\n"
        "def later() -> None:\n"
        "    import torch  # inside a function: not a top-level import\n"
    )
    assert top_level_imports(page) == [
        "json",
        "pages.widgets",
        "pages.widgets.shell",
        "pages.widgets.reads",
    ]


def test_the_shell_comes_first_then_the_landing_page_then_the_others():
    modules = page_modules(APP)
    assert modules[: len(top_level_imports(APP))] == top_level_imports(APP)
    assert modules.index("pages.widgets.launch_form") < modules.index("pages.widgets.pickers")
    kiosk = page_modules(APP, first="demo")
    assert kiosk.index("pages.widgets.grade_view") < kiosk.index("pages.widgets.launch_form")


@pytest.mark.slow  # a fresh interpreter: what it has imported is the point
def test_the_warm_up_imports_what_launch_needs_once_the_runtime_exists():
    # In a fresh interpreter: nothing is imported while the runtime is missing, and the
    # statistics libraries Launch's widgets pull in are imported once it exists.
    code = (
        "import sys, threading, time\n"
        "from pathlib import Path\n"
        "from jobs.services import import_warmup\n"
        "ready = threading.Event()\n"
        "modules = import_warmup.page_modules(Path(sys.argv[1]))\n"
        "warm = import_warmup.warm_imports\n"
        "worker = threading.Thread(target=warm, args=(modules, ready.is_set))\n"
        "seen = lambda: [m in sys.modules for m in ('scipy.stats', 'pages.widgets.launch_form')]\n"
        "worker.start(); time.sleep(0.3)\n"
        "print('before', *seen())\n"
        "ready.set(); worker.join()\n"
        "print('after', *seen())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(APP)],
        cwd=APP.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split("\n")[:2] == ["before False False", "after True True"], (
        done.stdout + done.stderr
    )


def test_the_store_is_set_up_after_the_shells_imports_and_before_the_pages():
    steps = warm_up_steps(APP)
    shell = top_level_imports(APP)
    assert steps[: len(shell)] == shell
    assert steps[len(shell)] is set_up_store
    assert steps[len(shell) + 1 :] == page_modules(APP)[len(shell) :]


def test_the_warm_up_sets_the_store_up_so_the_first_visit_does_not(home, monkeypatch):
    # The process's first open of the store costs 0.2-0.5 s; the warm-up pays it, and the
    # first visitor's `store_path` (`init_schema_once`) then opens nothing to set it up.
    from store import db

    assert warm_imports([set_up_store], runtime_ready=lambda: True) == []
    store = home / "softgrade.duckdb"
    assert store.exists()
    set_up_again: list[object] = []
    monkeypatch.setattr(db, "init_schema", set_up_again.append)
    assert db.init_schema_once(store) == store
    assert set_up_again == []


def test_only_streamlit_run_of_a_script_starts_the_warm_up():
    assert _entrypoint(["run", "/x/app.py", "--server.port", "1"]) == Path("/x/app.py")
    assert _entrypoint(["version"]) is None
    assert _entrypoint(["run"]) is None


def test_modules_that_declare_a_streamlit_component_are_left_to_the_page():
    # Declared outside a script run, a component is never registered, and the crop review's
    # film (streamlit_image_coordinates, through review_widgets) never showed.
    assert declares_component("streamlit_image_coordinates")
    assert declares_component("pages.widgets.review_widgets")
    assert not declares_component("pages.widgets.shell")
    modules = page_modules(APP)
    assert "pages.widgets.review_widgets" not in modules
    assert not any(declares_component(m) for m in modules)
    assert "pages.present.review_view" in modules, "the rest of the page is still warmed"
