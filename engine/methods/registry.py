"""The method registry: every method module, found once, looked up by name.

Built-in methods are the modules of `engine.methods` that define ``METHOD``; a lab adds its
own without touching this checkout by naming importable packages in the environment variable
``SOFTGRADE_METHOD_PACKAGES`` (comma-separated), whose modules are read the same way. The
worker's processes inherit the variable, so a method added there trains like a built-in one.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Iterable
from functools import cache
from types import MappingProxyType, ModuleType

from engine.methods.base import FAMILIES, HyperParameter, Method

PLUGIN_VARIABLE = "SOFTGRADE_METHOD_PACKAGES"
#: The built-in methods, each at a position that never changes whatever is added later (the
#: paper's five first): what gives a method the same colour on every page for good
#: (`pages.present.palette`). A new built-in method is appended here.
BUILT_IN_ORDER: tuple[str, ...] = (
    "nominal",
    "binomial",
    "beta",
    "triangular",
    "exponential",
    "geometric",
    "poisson",
    "sord",
    "cdw_ce",
    "emd",
    "qwk",
    "binomial_layer",
    "clm",
    "corn",
)
# Modules of this package that are machinery, not methods.
_MACHINERY = frozenset({"base", "registry", "heads", "targets"})


class UnknownMethodError(ValueError):
    """A method name the registry does not know; the message lists the valid ones."""


def _modules(package: ModuleType) -> Iterable[ModuleType]:
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in _MACHINERY:
            continue
        yield importlib.import_module(f"{package.__name__}.{info.name}")


def _packages() -> list[ModuleType]:
    names = ["engine.methods"]
    names += [n.strip() for n in os.environ.get(PLUGIN_VARIABLE, "").split(",") if n.strip()]
    return [importlib.import_module(n) for n in names]


@cache
def _registry(plugins: str) -> MappingProxyType[str, Method]:
    """Every method, in display order; cached per value of the plugin variable."""
    found: dict[str, Method] = {}
    for package in _packages():
        for module in _modules(package):
            method = getattr(module, "METHOD", None)
            if not isinstance(method, Method):
                continue
            if method.name in found:
                raise ValueError(
                    f"method {method.name!r} is defined twice ({module.__name__} and another)"
                )
            found[method.name] = method
    ordered = sorted(
        found.values(), key=lambda m: (m.rank, FAMILIES.index(m.family), m.label.lower())
    )
    return MappingProxyType({m.name: m for m in ordered})


def registry() -> MappingProxyType[str, Method]:
    """Name -> method, in display order (the paper's five first)."""
    return _registry(os.environ.get(PLUGIN_VARIABLE, ""))


def method_names() -> tuple[str, ...]:
    """Every registered method's name, in display order."""
    return tuple(registry())


def get_method(name: str) -> Method:
    """The method called ``name``; `UnknownMethodError` listing the valid names otherwise."""
    methods = registry()
    if name not in methods:
        raise UnknownMethodError(
            f"unknown method {name!r}; allowed: {', '.join(methods)} "
            "(`softgrade methods` describes each)"
        )
    return methods[name]


def is_registered(name: str) -> bool:
    """Whether this checkout knows a method called ``name``."""
    return name in registry()


def methods_by_family() -> dict[str, list[Method]]:
    """The registered methods grouped by family, families in `FAMILIES` order."""
    groups: dict[str, list[Method]] = {f: [] for f in FAMILIES}
    for method in registry().values():
        groups[method.family].append(method)
    return {f: ms for f, ms in groups.items() if ms}


def paper_methods() -> tuple[str, ...]:
    """The paper's five methods, in the paper's order."""
    return tuple(m.name for m in registry().values() if m.in_paper)


def hyperparameters() -> dict[str, HyperParameter]:
    """Every searched hyper-parameter by name, learning rate first, then in registry order.

    Methods that share a name (``eta``) share its label; the first method's record is kept.
    """
    found: dict[str, HyperParameter] = {}
    for method in registry().values():
        for param in method.hyperparameters:
            found.setdefault(param.name, param)
    return found
