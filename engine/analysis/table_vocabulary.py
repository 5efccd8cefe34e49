"""The record a table's vocabulary is declared in: its columns (key, header, meaning) and its
views (which columns each surface shows, in what order).

A table the app shows, the report prints and `softgrade stats` writes is declared once, as a
`TableVocabulary` (the declarations are `engine.analysis.table_columns`); the pages, the report
and the command line read a view's keys and a column's header from it and only format the
values. Headers are science vocabulary ("p (corrected)", "σ² split"), not formatting, so they
live here; how a value is written ("< 0.001", "[-0.03, 0.01]") stays in `pages.present`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeVar

#: The view a surface shows when it names none: every column with a header, in declaration
#: order, unless the table declares it otherwise.
SHOWN = "shown"
#: Whatever a surface puts under a header: a cell's text, or a column of values.
V = TypeVar("V")


@dataclass(frozen=True)
class Column:
    """One column of a table.

    Attributes:
        key: its name in the computed frame, the CSV and the code (``p_corrected``).
        header: what a reader sees above it ("p (corrected)"); empty for a column written
            only under its key (a CSV-only quantity).
        meaning: a short sentence on what the column holds.
        latex: its header in the LaTeX export where that differs from ``header`` (a LaTeX
            table keeps an interval's two ends in two numeric columns); empty: ``header``.
    """

    key: str
    header: str
    meaning: str
    latex: str = ""


@dataclass(frozen=True)
class TableVocabulary:
    """A table's columns and its views: view name -> the keys that view shows, in order.

    A table without a ``shown`` view shows every column that has a header, in the order
    declared (`SHOWN`), so only a view that leaves columns out or reorders them is written.
    Every key a view names must be a declared column, and no view names a key twice; a
    mistake raises `ValueError` when the module declaring the table is imported.
    """

    name: str
    columns: tuple[Column, ...]
    views: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        keys = [c.key for c in self.columns]
        if len(set(keys)) != len(keys):
            doubled = sorted({k for k in keys if keys.count(k) > 1})
            raise ValueError(f"table {self.name!r} declares {doubled} twice")
        for view, shown in self.views.items():
            unknown = [k for k in shown if k not in keys]
            if unknown:
                raise ValueError(
                    f"table {self.name!r}, view {view!r}: {unknown} are not its columns "
                    f"(declared: {', '.join(keys)})"
                )
            if len(set(shown)) != len(shown):
                raise ValueError(f"table {self.name!r}, view {view!r} names a column twice")
        # Frozen all the way down: a view's order cannot be changed by a reader.
        views = {SHOWN: tuple(c.key for c in self.columns if c.header), **self.views}
        object.__setattr__(self, "views", MappingProxyType(views))

    @property
    def keys(self) -> tuple[str, ...]:
        """Every declared key, in declaration order."""
        return tuple(c.key for c in self.columns)

    def view(self, name: str) -> tuple[str, ...]:
        """The keys view ``name`` shows, in order."""
        try:
            return self.views[name]
        except KeyError:
            raise KeyError(
                f"table {self.name!r} has no view {name!r}; its views: {', '.join(self.views)}"
            ) from None

    def column(self, key: str) -> Column:
        """The column ``key``."""
        for column in self.columns:
            if column.key == key:
                return column
        raise KeyError(f"table {self.name!r} has no column {key!r}; its columns: {self.keys}")

    def headers(self) -> dict[str, str]:
        """Key -> header of every column that has one (a fresh dict, safe to extend)."""
        return {c.key: c.header for c in self.columns if c.header}

    def latex_headers(self) -> dict[str, str]:
        """Key -> header in the LaTeX export (``latex`` where set, else ``header``)."""
        return {c.key: c.latex or c.header for c in self.columns if c.latex or c.header}

    def view_headers(self, name: str) -> list[str]:
        """The headers of view ``name``, in order."""
        return [self.column(k).header for k in self.view(name)]

    def headed(self, cells: Mapping[str, V], view: str = SHOWN) -> dict[str, V]:
        """``cells`` (key -> a value, or a column's values) of view ``view``, in its order,
        keyed by header: a row or a frame's columns as a reader reads them."""
        return {self.column(k).header: cells[k] for k in self.view(view)}

    def views_of(self, key: str) -> tuple[str, ...]:
        """The views that show column ``key``."""
        return tuple(view for view, shown in self.views.items() if key in shown)
