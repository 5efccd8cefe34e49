"""Plug-in discovery: records that a lab adds from packages of its own, named in a variable.

A registry (metrics: `engine.analysis.metrics`; methods keep their own copy of this walk in
`engine.methods.registry`, which can move onto this helper) reads one record per module: a
module-level attribute (``METRIC``) holding an instance of the registry's record type. Its
built-in package is read first, then the packages named, comma-separated, in an environment
variable (``SOFTGRADE_METRIC_PACKAGES``), so a lab adds an entry without touching this
checkout. Processes the CLI or the worker start inherit the variable and see the same entries.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Iterable, Iterator, Mapping
from types import ModuleType
from typing import TypeVar

Record = TypeVar("Record")


def plugin_package_names(variable: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """The package names listed in ``variable`` (comma-separated; blanks ignored)."""
    value = (os.environ if environ is None else environ).get(variable, "")
    return [name.strip() for name in value.split(",") if name.strip()]


def package_modules(package: ModuleType, skip: Iterable[str] = ()) -> Iterator[ModuleType]:
    """Each module of ``package`` by name, private (``_x``) and ``skip``-ped ones left out.

    A plain module (no ``__path__``) counts as its own single module, so a variable may name
    one file as well as a folder of them.
    """
    if not hasattr(package, "__path__"):
        yield package
        return
    skipped = frozenset(skip)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in skipped:
            continue
        yield importlib.import_module(f"{package.__name__}.{info.name}")


def discover_records(
    packages: Iterable[str], attribute: str, record_type: type[Record], skip: Iterable[str] = ()
) -> list[tuple[str, Record]]:
    """``(module name, record)`` for every module of ``packages`` defining ``attribute``.

    Raises:
        TypeError: a module's ``attribute`` is not a ``record_type`` (a typo in a plug-in
            should not vanish silently).
    """
    found: list[tuple[str, Record]] = []
    for package_name in packages:
        for module in package_modules(importlib.import_module(package_name), skip):
            record = getattr(module, attribute, None)
            if record is None:
                continue
            if not isinstance(record, record_type):
                raise TypeError(
                    f"{module.__name__}.{attribute} is a {type(record).__name__}, "
                    f"not a {record_type.__name__}"
                )
            found.append((module.__name__, record))
    return found
