"""Licences said plainly: SoftGrade's own, and no copyleft in the default install."""

from __future__ import annotations

import importlib.metadata as md
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPYLEFT = re.compile(r"\b(A?GPL|LGPL|Affero|General Public License)\b", re.IGNORECASE)


def _name(requirement: str) -> str:
    return re.split(r"[\s;<>=!~\[]", requirement.strip(), maxsplit=1)[0].lower()


def _licence_text(dist: md.Distribution) -> str:
    meta = dist.metadata
    classifiers = [c for c in (meta.get_all("Classifier") or []) if c.startswith("License")]
    return " ".join([meta.get("License-Expression") or "", *classifiers])


def _default_install_closure() -> dict[str, str]:
    """Every installed distribution the default install (`requirements.txt`) pulls in, with
    its licence text, following each package's own (non-extra) requirements."""
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    todo = [_name(line) for line in lines if line.strip() and not line.startswith(("#", "-"))]
    seen: dict[str, str] = {}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue  # a platform-specific requirement not installed here
        seen[name] = _licence_text(dist)
        for requirement in dist.requires or []:
            if "extra ==" not in requirement:
                todo.append(_name(requirement))
    return seen


def test_softgrade_has_a_licence_file_and_declares_it():
    assert "Apache License" in (ROOT / "LICENSE").read_text()[:200]
    assert 'license = "Apache-2.0"' in (ROOT / "pyproject.toml").read_text()


def test_the_default_install_pulls_in_no_copyleft_package():
    closure = _default_install_closure()
    assert "numpy" in closure and "streamlit" in closure, sorted(closure)
    assert "ultralytics" not in closure, "ultralytics belongs to the optional yolo extra"
    copyleft = {name: text for name, text in closure.items() if COPYLEFT.search(text)}
    assert not copyleft, copyleft


def test_the_yolo_extra_is_where_the_agpl_code_comes_from():
    assert "AGPL" in _licence_text(md.distribution("ultralytics"))
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^yolo = \["ultralytics==', pyproject, re.MULTILINE)
