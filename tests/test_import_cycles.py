"""No import cycle among the project's own modules (issue 20), lazy imports included.

The graph is read from the source with `ast`, so an import inside a function counts as much
as one at the top of a module: a circle closed by lazy imports is still a circle. Imports
under ``if TYPE_CHECKING:`` never run and are left out. Importing ``a.b.c`` runs ``a`` and
``a.b`` too, so it is an edge to each of them, except to the importer's own packages (Python
initialises those first, and a sibling import passes through them without running them).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "store", "jobs", "pages")


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported_names(tree: ast.Module, package: str) -> set[str]:
    """Every dotted name an import statement anywhere in ``tree`` may run, outside
    ``if TYPE_CHECKING:`` blocks (a ``from a import b`` names both ``a`` and ``a.b``)."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for branch in child.orelse:
                    visit_statement(branch)
                continue
            visit_statement(child)

    def visit_statement(child: ast.AST) -> None:
        if isinstance(child, ast.Import):
            names.update(alias.name for alias in child.names)
        elif isinstance(child, ast.ImportFrom):
            base = child.module or ""
            if child.level:
                anchor = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in child.names)
        visit(child)

    visit(tree)
    return names


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module → the project modules importing it runs (see the module docstring)."""
    paths = {
        _module_name(path, root): path for pkg in PACKAGES for path in (root / pkg).rglob("*.py")
    }
    graph = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges: set[str] = set()
        for name in _imported_names(ast.parse(path.read_text()), package):
            parts = name.split(".")
            edges.update(
                prefix
                for prefix in (".".join(parts[:i]) for i in range(1, len(parts) + 1))
                if prefix in paths
            )
        parts = module.split(".")
        own = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
        graph[module] = edges - own
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
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
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_no_module_of_engine_store_jobs_or_pages_is_in_an_import_cycle() -> None:
    assert import_cycles(import_graph()) == []


def test_a_cycle_closed_by_a_function_level_import_is_found(tmp_path: Path) -> None:
    engine = tmp_path / "engine"
    engine.mkdir()
    (engine / "__init__.py").write_text("")
    (engine / "a.py").write_text("from engine.b import f\n")
    (engine / "b.py").write_text("def f():\n    from engine import a\n")
    (engine / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from engine.a import f\n"
    )
    for name in ("store", "jobs", "pages"):
        (tmp_path / name).mkdir()
    assert import_cycles(import_graph(tmp_path)) == [["engine.a", "engine.b"]]
