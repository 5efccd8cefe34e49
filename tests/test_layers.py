"""The layers docs/architecture.md promises, read from the code's import statements.

engine/ is science only (no streamlit, duckdb, altair, store, jobs or pages); store/ uses
nothing of engine but its vocabulary (engine.vocab); presentation helpers (pages/present/)
import no streamlit; and no module of engine, store, jobs, pages or app.py imports itself
back through others, counting imports inside functions (lazy imports), not counting those
under ``if TYPE_CHECKING:``. Every import statement is read with ``ast``: nothing is
imported, so the test is fast and sees imports that a run would reach only on some paths.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "store", "jobs", "pages")
TOP_MODULES = ("app",)


@dataclass(frozen=True)
class Import:
    """One imported module as a statement names it, with where the statement is."""

    module: str
    source: Path
    line: int
    type_checking: bool


def module_name(path: Path) -> str:
    """``engine/phantom/cache.py`` -> ``engine.phantom.cache``; ``__init__`` names the package."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_files() -> dict[str, Path]:
    """Every module of the project's packages and top-level modules, by dotted name."""
    files = [ROOT / f"{name}.py" for name in TOP_MODULES]
    for package in PACKAGES:
        files += sorted(p for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)
    return {module_name(path): path for path in files if path.exists()}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.AST, type_checking: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """Every import statement anywhere in ``tree`` (functions too), and whether it sits under
    ``if TYPE_CHECKING:`` (read by type checkers only, never run)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from _statements_of(child, True)
            for child in node.orelse:
                yield from _statements_of(child, type_checking)
        else:
            yield from _statements_of(node, type_checking)


def _statements_of(node: ast.AST, type_checking: bool) -> Iterator[tuple[ast.AST, bool]]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node, type_checking
    else:
        yield from _statements(node, type_checking)


def imports_of(name: str, path: Path, known: set[str]) -> list[Import]:
    """The modules that ``path`` (module ``name``) imports. ``from pkg import sub`` names the
    submodule ``pkg.sub`` where one exists, else ``pkg``; relative imports are resolved."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node, type_checking in _statements(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        for target in dict.fromkeys(targets):
            found.append(Import(target, path, node.lineno, type_checking))
    return found


@cache  # read once per test process: every test below walks the same tree (none mutates it)
def project_imports() -> dict[str, list[Import]]:
    """Each project module's imports (of anything: the project's modules and libraries)."""
    files = project_files()
    known = set(files)
    return {name: imports_of(name, path, known) for name, path in files.items()}


def _top(module: str) -> str:
    return module.split(".")[0]


def _where(imp: Import) -> str:
    return f"{imp.source.relative_to(ROOT)}:{imp.line} imports {imp.module}"


def test_engine_imports_no_ui_sql_or_upper_layer() -> None:
    forbidden = {"streamlit", "duckdb", "altair", "store", "jobs", "pages", "app"}
    bad = [
        _where(imp)
        for name, imps in project_imports().items()
        if _top(name) == "engine"
        for imp in imps
        if _top(imp.module) in forbidden
    ]
    assert not bad, "engine/ is science only:\n" + "\n".join(bad)


def test_store_imports_nothing_of_engine_but_the_vocabulary() -> None:
    bad = [
        _where(imp)
        for name, imps in project_imports().items()
        if _top(name) == "store"
        for imp in imps
        if _top(imp.module) in {"engine", "jobs", "pages", "app", "streamlit", "altair"}
        and imp.module != "engine.vocab"
    ]
    assert not bad, "store/ may use engine.vocab only:\n" + "\n".join(bad)


def test_presentation_helpers_import_no_streamlit() -> None:
    present = ROOT / "pages" / "present"
    if not present.is_dir():
        pytest.skip("pages/present/ does not exist yet")
    bad = [
        _where(imp)
        for name, imps in project_imports().items()
        if name.startswith("pages.present")
        for imp in imps
        if _top(imp.module) == "streamlit" or imp.module.startswith("pages.widgets")
    ]
    assert not bad, "pages/present/ draws nothing:\n" + "\n".join(bad)


# pages/ reads the store through page-side services (jobs/services/, the door for plain
# reads being jobs.services.page_store): a page script, widget or app.py that imports store/
# itself fails here.
def test_page_scripts_and_widgets_import_no_store() -> None:
    bad = [
        _where(imp)
        for name, imps in project_imports().items()
        if (_top(name) == "pages" and not name.startswith("pages.present")) or name == "app"
        for imp in imps
        if _top(imp.module) == "store"
    ]
    assert not bad, "pages read the store through jobs/services, never store/:\n" + "\n".join(bad)


# Presentation formats what it is given (issue 40): the services that read the store (or,
# for provenance, the checkout's git) hand their results to its caller (a page, a widget, the
# command line), which passes them on. The study report gets them as one record
# (`jobs.services.report_inputs` gathers a `jobs.services.report_record.ReportInputs`); the
# cards' text is `jobs.services.card_lines`, which reads nothing.
READING_SERVICES = (
    "jobs.services.page_store",
    "jobs.services.study_analysis",
    "jobs.services.grade_sets",
    "jobs.services.export_cards",
    "jobs.services.provenance",
    "jobs.services.report_inputs",
)


def _reads(module: str) -> bool:
    return _top(module) == "store" or any(
        module == s or module.startswith(s + ".") for s in READING_SERVICES
    )


def test_presentation_imports_no_store_nor_a_reading_service() -> None:
    bad = [
        _where(imp)
        for name, imps in project_imports().items()
        if name.startswith("pages.present")
        for imp in imps
        if _reads(imp.module)
    ]
    assert not bad, "pages/present/ formats what it is given:\n" + "\n".join(bad)


def test_the_reading_services_named_exist_and_a_reading_import_is_recognised() -> None:
    missing = [s for s in READING_SERVICES if s not in project_files()]
    assert not missing, f"READING_SERVICES names modules that do not exist: {missing}"
    assert _reads("store.runs") and _reads("jobs.services.export_cards")
    assert not _reads("jobs.services.card_lines") and not _reads("jobs.services.report_record")


# The Statistics tab once reached its sentences and tables by climbing into the report
# (a widget importing a report section, a table module the report's HTML and the statistics'
# reads): the report now sits on top, read only by its button and the command line.
REPORT_READERS = ("pages.present.report", "pages.widgets.report_button", "jobs.cli")


def test_only_the_report_button_and_the_command_line_import_the_report() -> None:
    bad = [
        _where(imp)
        for name, imps in project_imports().items()
        if not name.startswith(REPORT_READERS)
        for imp in imps
        if imp.module.startswith("pages.present.report")  # report_html too
    ]
    assert not bad, "the report sits on top of the pages' helpers:\n" + "\n".join(bad)


def test_no_page_side_service_starts_the_command_line() -> None:
    """A page-side service sits below the command line: it neither imports jobs.cli nor runs
    ``python -m jobs`` as a child process (the detector training did until issue 40)."""
    spawned = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "jobs" / "services").rglob("*.py"))
        if _runs_jobs_module(ast.parse(path.read_text()))
    ]
    assert not spawned, f"page-side services start the CLI: {spawned}"


def _runs_jobs_module(tree: ast.AST) -> bool:
    """Whether a list or tuple literal anywhere in ``tree`` holds "-m" followed by "jobs"."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)):
            words = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            if any(a == "-m" and b == "jobs" for a, b in zip(words, words[1:], strict=False)):
                return True
    return False


def test_a_spawned_cli_is_recognised() -> None:
    assert _runs_jobs_module(ast.parse('cmd = [sys.executable, "-m", "jobs", "detector"]'))
    assert not _runs_jobs_module(ast.parse('cmd = [sys.executable, "-m", "streamlit"]'))


def import_graph() -> dict[str, set[str]]:
    """Project module -> the project modules it imports at run time (TYPE_CHECKING left out)."""
    graph = project_imports()
    known = set(graph)
    return {
        name: {imp.module for imp in imps if imp.module in known and not imp.type_checking}
        for name, imps in graph.items()
    }


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module, or a module importing itself
    (Tarjan's algorithm, iterative), each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1 or node in graph[node]:
                    groups.append(sorted(group))
    return sorted(groups, key=len, reverse=True)


def cycle_path(graph: dict[str, set[str]], group: list[str]) -> list[str]:
    """One concrete circle through ``group``'s first module (breadth-first, shortest)."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & members):
            if child == start:
                return [*paths[node], start]
            if child not in paths:
                paths[child] = [*paths[node], child]
                queue.append(child)
    return group


def test_import_cycles_are_found_lazy_imports_included() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert import_cycles(graph) == [["a", "b", "c"], ["e"]]
    assert cycle_path(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    # a lazy import inside a function counts; one under TYPE_CHECKING does not
    source = [
        "from typing import TYPE_CHECKING",
        "if TYPE_CHECKING:",
        "    import x",
        "def f():",
        "    import y",
    ]
    tree = ast.parse("\n".join(source))
    seen = {(node.names[0].name, tc) for node, tc in _statements(tree) if node.names}
    assert ("y", False) in seen and ("x", True) in seen


# Until engine/ was split into rooms (issue 20), nine engine modules imported each other in
# a circle closed by lazy imports; this keeps any new circle from closing unnoticed.
def test_no_import_cycle_among_engine_store_jobs_pages() -> None:
    graph = import_graph()
    cycles = import_cycles(graph)
    described = [
        f"{len(group)} modules: {', '.join(group)}\n"
        f"    e.g. {' -> '.join(cycle_path(graph, group))}"
        for group in cycles
    ]
    assert not cycles, "import cycles (lazy imports count):\n" + "\n".join(described)


def _room(module: str) -> str:
    """``jobs.cli.main`` -> ``jobs.cli``; other modules by their top package."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "jobs" and len(parts) > 1 else parts[0]


# jobs/ by role (docs/architecture.md): who may import which room of jobs/ and pages/.
JOBS_ROOMS_MAY_IMPORT: dict[str, set[str]] = {
    "jobs.services": {"jobs", "jobs.services"},
    "jobs.worker.factory": {"jobs", "jobs.services", "jobs.worker.factory"},
    "jobs.cli": {"jobs", "jobs.services", "jobs.worker.factory", "jobs.cli", "pages.present"},
}


def test_jobs_rooms_import_only_what_their_role_allows() -> None:
    bad = []
    for name, imps in project_imports().items():
        room = _room(name)
        for imp in imps:
            target = _room(imp.module) if _top(imp.module) == "jobs" else imp.module
            if room in JOBS_ROOMS_MAY_IMPORT and _top(imp.module) in {"jobs", "pages", "app"}:
                allowed = JOBS_ROOMS_MAY_IMPORT[room]
                if not any(target == a or target.startswith(a + ".") for a in allowed):
                    bad.append(_where(imp))
            # The pages use the lab services only: never the command line or the worker.
            if room in {"pages", "app"} and target in {"jobs.cli", "jobs.worker.factory"}:
                bad.append(_where(imp))
            # The services sit below the command line ("jobs" above is the package itself).
            if room == "jobs.services" and target == "jobs.cli":
                bad.append(_where(imp))
    assert not bad, "jobs/ rooms cross their roles:\n" + "\n".join(bad)


def test_jobs_is_split_into_its_three_rooms() -> None:
    loose = sorted(
        p.name for p in (ROOT / "jobs").glob("*.py") if p.name not in {"__init__.py", "__main__.py"}
    )
    assert not loose, f"modules directly in jobs/ (put each in cli/, worker/ or services/): {loose}"
