"""Every table vocabulary the engine declares (`engine.analysis.table_catalogue`): the
classical method tests, issue 21's reviewer tables, the power view and the referee's tables
beside the paired ones, each declared once and read by header through `TableVocabulary.headed`."""

from __future__ import annotations

import pytest

from engine.analysis import (
    inference_columns,
    kld_parts,
    method_test_columns,
    referee,
    referee_columns,
    table_columns,
)
from engine.analysis.table_catalogue import EVERY_TABLE
from engine.analysis.table_columns import PAIRED
from engine.analysis.table_vocabulary import Column, TableVocabulary

#: The views whose columns a reader sees under their headers, per table of the new modules.
HEADED_VIEWS = {
    "shown",
    "first",
    "last",
    "tooltip",
    "parts",
    "before_matched",
    "after_matched",
}
NEW_TABLES = (
    *method_test_columns.TABLES,
    *inference_columns.TABLES,
    *referee_columns.TABLES,
)


def test_the_catalogue_holds_every_declared_table_once() -> None:
    expected = (*table_columns.ALL_TABLES, *NEW_TABLES)
    assert expected == EVERY_TABLE
    names = [t.name for t in EVERY_TABLE]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("table", NEW_TABLES, ids=lambda t: t.name)
def test_every_column_says_what_it_holds_and_every_shown_one_has_a_header(
    table: TableVocabulary,
) -> None:
    assert all(c.meaning for c in table.columns), table.name
    for view in HEADED_VIEWS & set(table.views):
        assert all(table.view_headers(view)), (table.name, view)


def test_headed_puts_the_cells_in_the_views_order_under_their_headers() -> None:
    table = TableVocabulary(
        "t",
        (Column("task", "Task", meaning="t"), Column("p", "p value", meaning="p")),
        {"shown": ("p", "task")},
    )
    assert list(table.headed({"task": "KL", "p": 0.1, "unused": 1}).items()) == [
        ("p value", 0.1),
        ("Task", "KL"),
    ]
    with pytest.raises(KeyError):
        table.headed({"task": "KL"})


def test_the_truth_table_reads_the_paired_tables_corrected_columns() -> None:
    # One wording of the corrected interval and p on every page (the truth table's "vs
    # Nominal" comparison is the corrected test).
    for key in ("ci", "p_corrected"):
        assert inference_columns.TRUTH.column(key) == PAIRED.column(key)
    assert inference_columns.POWER.column("pair") == PAIRED.column("pair")


def test_the_engine_keys_the_tables_read_are_the_engines_own() -> None:
    assert inference_columns.KLD_PARTS.view("parts") == kld_parts.PARTS
    shown = referee_columns.REFEREE_CORRELATION.view("shown")
    assert {referee.RHO_REALISED, referee.RHO_ASSUMED, referee.RHO_TRAINING} <= set(shown)


def test_the_method_tests_write_both_p_columns_as_p_values() -> None:
    assert set(method_test_columns.METHOD_TESTS.view("p_values")) == {"p", "p_adj"}
    # Wilcoxon's and Tukey's "do they differ" read the same words.
    tests = method_test_columns.METHOD_TESTS
    assert tests.column("significant").header == tests.column("reject").header


def test_the_header_templates_name_their_value() -> None:
    assert method_test_columns.kld_at_eps_header(1e-6) == "KLD at ε = 1e-06"
    assert inference_columns.one_per_rate_header("0.001, 0.01") == (
        "One per learning rate (0.001, 0.01)"
    )


def test_a_table_without_a_shown_view_shows_its_headed_columns_in_order() -> None:
    table = TableVocabulary(
        "t",
        (
            Column("task", "Task", meaning="t"),
            Column("raw", "", meaning="a CSV-only quantity"),
            Column("p", "p value", meaning="p"),
        ),
        {"other": ("p",)},
    )
    assert table.view("shown") == ("task", "p")
    assert TableVocabulary("u", table.columns, {"shown": ("p",)}).view("shown") == ("p",)
