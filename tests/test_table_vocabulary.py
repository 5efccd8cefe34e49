"""Every table vocabulary is declared once, in the engine (issue 40): no page, report or
command-line module spells a declared table's column list or header mapping itself.

In the spirit of the metric registry's literal test (tests/engine/test_metric_registry.py):
the columns a surface shows, their order and their headers come from the engine's
declarations (`engine.analysis.table_catalogue.EVERY_TABLE`: `table_columns`,
`method_test_columns`, `inference_columns`, `referee_columns`); a module above the engine
may format each cell by key, but a literal list of a table's keys (``("task", "method_a",
"method_b", ...)``) or a literal key -> header mapping restates the vocabulary and fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from engine.analysis.table_catalogue import EVERY_TABLE as ALL_TABLES
from engine.analysis.table_vocabulary import TableVocabulary

ROOT = Path(__file__).resolve().parents[1]
#: The layers that show, print or write tables: pages (the Statistics tab, presentation and
#: the report), the page-side services and the command line.
SCANNED = ("app.py", "pages", "jobs/cli", "jobs/services")
#: A literal naming this many of one table's keys, and nothing else, is a column list.
MIN_KEYS = 3
#: Keys that name a row in many tables (a study's task, method, seed): a list of these alone
#: is not one table's vocabulary; a restated list holds at least one key besides them.
IDENTIFIERS = frozenset({"study_id", "task", "metric", "method", "seed", "n_seeds"})
#: Headers shorter than this ("p", "F", "A", "Task") are ordinary words, not vocabulary.
MIN_HEADER = 8


def scanned_files() -> list[Path]:
    """Every Python file of the scanned layers."""
    files = []
    for part in SCANNED:
        path = ROOT / part
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return files


def _strings(nodes: list[ast.expr | None]) -> list[str] | None:
    """The nodes' string values, or None when any is not a string constant; an unpacked part
    (``*KEYS``, ``**headers``) is passed over, so a list that adds literal keys to another
    list still counts."""
    spelled = [n for n in nodes if n is not None and not isinstance(n, ast.Starred)]
    values = [n.value for n in spelled if isinstance(n, ast.Constant)]
    all_strings = len(values) == len(spelled) and all(isinstance(v, str) for v in values)
    return values if all_strings else None


def _restated_table(keys: list[str], tables: tuple[TableVocabulary, ...]) -> str | None:
    """The table whose column list ``keys`` restates, or None."""
    if len(keys) < MIN_KEYS or set(keys) <= IDENTIFIERS:
        return None
    for table in tables:
        if set(keys) <= set(table.keys):
            return table.name
    return None


def restated_vocabulary(source: str, tables: tuple[TableVocabulary, ...]) -> list[str]:
    """Where ``source`` restates a declared table: a tuple, list or set literal of its keys, a
    dict literal mapping its keys to header strings, or one of its headers spelled out."""
    headers = {
        text: table.name
        for table in tables
        for text in (*table.headers().values(), *table.latex_headers().values())
        if len(text) >= MIN_HEADER
    }
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            keys = _strings(list(node.elts))
            name = _restated_table(keys, tables) if keys else None
            if name:
                found.append(f"line {node.lineno}: the {name} table's columns {keys}")
        elif isinstance(node, ast.Dict):
            keys = _strings(list(node.keys))
            name = _restated_table(keys, tables) if keys else None
            if name and _strings(list(node.values)):
                found.append(f"line {node.lineno}: the {name} table's headers {keys}")
        elif isinstance(node, ast.Constant) and str(node.value) in headers:
            name = headers[str(node.value)]
            found.append(f"line {node.lineno}: the {name} table's header {node.value!r}")
    return found


def test_no_page_report_or_command_line_module_restates_a_table_vocabulary() -> None:
    restated = [
        f"{path.relative_to(ROOT)} {where}"
        for path in scanned_files()
        for where in restated_vocabulary(path.read_text(encoding="utf-8"), ALL_TABLES)
    ]
    assert not restated, (
        "read the table's views and headers from its declaration in engine.analysis "
        "(table_catalogue.EVERY_TABLE lists them):\n" + "\n".join(restated)
    )


@pytest.mark.parametrize(
    "source",
    [
        # The report's paired columns as they were spelled before issue 40.
        'SHOWN = ("task", "method_a", "method_b", "n_seeds", "mean_diff", "ci")',
        # A header mapping of the variance components.
        'H = {"var_split": "σ² split", "var_init": "σ² init", "var_residual": "σ² residual"}',
        # A header spelled out in a frame.
        'frame = pd.DataFrame({"Kendall\'s W": [0.5]})',
        # The Statistics tab's test headers as stat_tables spelled them before.
        'TEST_HEADERS = {"normal": "Looks normal", "median_diff": "Median A − B", "p_adj": "p"}',
        # Temperature scaling's averaged columns, and a referee header.
        'cols = ["temperature", "ece_before", "ece_after", "rps_before"]',
        'row = {"ρ assumed (n_test/n)": 0.3}',
        # calibrate-sets' printed columns.
        'SHOWN = ("task", "method", "score", "per_grade", "coverage", "mc_low")',
    ],
)
def test_the_scan_finds_a_restated_column_list_a_header_map_and_a_header(source: str) -> None:
    assert restated_vocabulary(source, ALL_TABLES)


def test_the_scan_leaves_cells_formatted_by_key_alone() -> None:
    source = (
        "cells = {'task': row['task'], 'pair': pair_text(row), 'n_seeds': str(n)}\n"
        "shown = {h[k]: cells[k] for k in PAIRED.view('compact')}\n"
        "keys = ('task', 'method')\n"
        "probabilities = ['task', 'method', 'n_seeds', 'metric']\n"
    )
    assert restated_vocabulary(source, ALL_TABLES) == []
