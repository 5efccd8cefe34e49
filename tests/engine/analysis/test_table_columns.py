"""The table vocabularies (`engine.analysis.table_columns`) and their record
(`engine.analysis.table_vocabulary`): one declaration per table, views checked against it."""

from __future__ import annotations

import pytest

from engine.analysis import paired, variance_components
from engine.analysis.table_columns import ALL_TABLES, COMPONENTS, ENDPOINT, FRIEDMAN, PAIRED
from engine.analysis.table_vocabulary import Column, TableVocabulary

#: The views shown under their headers (the others are a frame's own columns, or keys).
HEADED_VIEWS = {
    PAIRED.name: (
        "compact",
        "details",
        "full",
        "bootstrap",
        "report",
        "report_bootstrap",
        "relationship",
    ),
    ENDPOINT.name: ("page", "page_compact", "report", "report_compact"),
    COMPONENTS.name: ("shown", "shown_first"),
    FRIEDMAN.name: ("shown",),
}


def _columns(*keys: str) -> tuple[Column, ...]:
    return tuple(Column(k, k.title(), meaning=f"the {k}") for k in keys)


def test_a_view_naming_an_undeclared_column_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"view 'shown': \['p_value'\] are not its columns"):
        TableVocabulary("t", _columns("task", "p"), {"shown": ("task", "p_value")})


def test_a_column_declared_twice_or_shown_twice_is_refused() -> None:
    with pytest.raises(ValueError, match=r"declares \['task'\] twice"):
        TableVocabulary("t", _columns("task", "task"))
    with pytest.raises(ValueError, match="names a column twice"):
        TableVocabulary("t", _columns("task", "p"), {"shown": ("task", "task")})


def test_an_unknown_view_or_column_names_what_there_is() -> None:
    table = TableVocabulary("t", _columns("task", "p"), {"shown": ("p", "task")})
    assert table.view("shown") == ("p", "task")
    assert table.view_headers("shown") == ["P", "Task"]
    assert table.views_of("p") == ("shown",)
    with pytest.raises(KeyError, match="its views: shown"):
        table.view("printed")
    with pytest.raises(KeyError, match="has no column 'chi2'"):
        table.column("chi2")


def test_a_view_cannot_be_changed_by_a_reader() -> None:
    table = TableVocabulary("t", _columns("task"), {"shown": ("task",)})
    with pytest.raises(TypeError):
        table.views["shown"] = ()  # type: ignore[index]


@pytest.mark.parametrize("table", ALL_TABLES, ids=lambda t: t.name)
def test_every_column_a_headed_view_shows_has_a_header(table: TableVocabulary) -> None:
    for view in HEADED_VIEWS.get(table.name, ()):
        assert all(table.view_headers(view)), (table.name, view)


def test_every_column_of_the_latex_export_has_a_latex_header() -> None:
    headers = PAIRED.latex_headers()
    assert [headers[k] for k in PAIRED.view("latex")][5:7] == ["CI low", "CI high"]
    assert all(k in headers for k in PAIRED.view("latex"))


def test_the_engine_frames_read_the_declared_order() -> None:
    assert PAIRED.view("computed") == paired.PAIRED_COLUMNS
    assert COMPONENTS.view("computed") == variance_components.COMPONENT_COLUMNS
    assert paired.VERDICT_FIRST_COLUMNS[-2:] == ("verdict", "p_corrected_holm")


def test_stats_prints_the_verdict_first_then_every_other_computed_column() -> None:
    printed = PAIRED.view("printed")
    first = PAIRED.view("verdict_first")
    assert printed[: len(first)] == first
    assert set(printed) == set(PAIRED.view("computed")) | set(first)
    components = COMPONENTS.view("printed")
    computed = COMPONENTS.view("computed")
    assert list(components) == [k for k in computed if k in components]
    assert "estimator" not in components and "var_split" in components


def test_the_primary_endpoint_reads_the_paired_headers_where_it_shares_a_column() -> None:
    for key in ("task", "n_seeds", "ci", "verdict", "p_corrected", "p_strip", "p_tost"):
        assert ENDPOINT.column(key) == PAIRED.column(key)
    # Every method against Nominal, a soft-label method or not (issue 39).
    assert ENDPOINT.column("method").header == "Method − Nominal"
    assert "soft" not in " ".join(ENDPOINT.headers().values()).lower()


@pytest.mark.parametrize("table", [PAIRED, ENDPOINT], ids=lambda t: t.name)
def test_every_header_that_names_the_assumed_rho_says_corrected(table: TableVocabulary) -> None:
    # The pages put the assumed ρ where the header says "corrected" (`paired_headers`).
    assert all("corrected" in h for h in table.view_headers("rho_named"))
