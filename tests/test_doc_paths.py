"""Every module, file and folder the docs name exists: docs/*.md, the README and the comments
of requirements*.txt and pyproject.toml.

A name is a path below one of the checkout's top folders (``engine/analysis/metrics.py``,
``pages/present/report/``) or a dotted module path (``engine.analysis.paired``), optionally
followed by a name the module defines at top level (``engine.analysis.paired.PRIMARY_METRIC``)
and then attributes, which are not followed. A path that is a pattern (``test_method_<name>``,
``*.yaml``) and ``jobs.<column>`` (the store's jobs table, not the package) are not names.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP = ("app", "engine", "store", "jobs", "pages", "tests", "bench", "studies", "examples")
DOCS = sorted(
    [
        *ROOT.glob("docs/*.md"),
        ROOT / "README.md",
        *ROOT.glob("requirements*.txt"),
        ROOT / "pyproject.toml",
    ]
)
_TOPS = "|".join([*TOP, "docs", r"\.ci"])
PATH = re.compile(rf"(?<![\w./-])((?:{_TOPS})(?:/[\w.\-]+)+/?)(?![\w<*])")
DOTTED = re.compile(r"(?<![\w./-])((?:engine|store|jobs|pages)(?:\.[A-Za-z_]\w*)+)")
NOT_MODULES = {".py", ".sql", ".txt", ".csv", ".md", ".yaml", ".toml", ".json", ".zip"}


@cache
def _top_level_names(module: Path) -> frozenset[str]:
    """Names a module binds at its top level (functions, classes, assignments, imports)."""
    names: set[str] = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return frozenset(names)


@cache
def _jobs_table_columns() -> frozenset[str]:
    schema = (ROOT / "store" / "schema.sql").read_text()
    table = re.search(r"CREATE TABLE IF NOT EXISTS jobs \((.*?)\n\);", schema, re.S)
    assert table, "store/schema.sql has no jobs table"
    return frozenset(re.findall(r"^\s+(\w+)\s", table.group(1), re.M))


def _dotted_exists(name: str) -> bool:
    parts = name.split(".")
    if parts[0] == "jobs" and len(parts) == 2 and parts[1] in _jobs_table_columns():
        return True
    for depth in range(len(parts), 1, -1):
        base = ROOT.joinpath(*parts[:depth])
        module = base.with_suffix(".py") if base.with_suffix(".py").exists() else None
        if module is None and (base / "__init__.py").exists():
            module = base / "__init__.py"
        if module is None and not base.is_dir():
            continue
        if depth == len(parts):
            return True
        # The next part is a name the module (or package) defines, or a sub-module.
        return module is not None and parts[depth] in _top_level_names(module)
    return False


def _names(text: str) -> list[tuple[int, str, bool]]:
    """``(line, name, exists)`` for every path and dotted module name in ``text``."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in PATH.finditer(line):
            path = match.group(1).rstrip(".")
            found.append((number, path, (ROOT / path).exists()))
        for match in DOTTED.finditer(line):
            name = match.group(1).rstrip(".")
            if Path(name).suffix in NOT_MODULES:
                continue
            found.append((number, name, _dotted_exists(name)))
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_a_doc_names_exists(doc):
    missing = [f"{line}: {name}" for line, name, ok in _names(doc.read_text()) if not ok]
    assert not missing, f"{doc.relative_to(ROOT)} names what is not there:\n" + "\n".join(missing)


def test_the_check_finds_a_moved_module_and_a_missing_name():
    text = "`engine/stats.py`, `engine.ranking`, `engine.analysis.metrics.NO_SUCH`"
    assert [ok for _, _, ok in _names(text)] == [False, False, False]
    text = "`engine/analysis/stats.py`, `engine.analysis.ranking`, `engine.analysis.metrics.MAE`"
    assert [ok for _, _, ok in _names(text)] == [True, True, True]


def _first_install_command(markdown: str) -> str:
    """The first ``pip install`` line of a fenced block (the one a newcomer copies)."""
    for block in re.findall(r"```bash\n(.*?)```", markdown, re.S):
        for line in block.splitlines():
            if "pip install" in line:
                return line
    raise AssertionError("no pip install command in a ```bash block")


def test_the_readmes_first_command_installs_what_the_licences_page_calls_the_default():
    licences = (ROOT / "docs" / "licences.md").read_text()
    default = re.search(r"the default of\s+`([^`]+)`", licences)
    assert default, "docs/licences.md no longer names the default install"
    first = _first_install_command((ROOT / "README.md").read_text())
    assert default.group(1) in first, (default.group(1), first)
    assert "[yolo]" not in first  # the AGPL extra is opt-in
