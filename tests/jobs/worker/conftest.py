"""Homes for worker tests that find the tiny phantom already rendered."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.workers import seed_tiny_phantom


@pytest.fixture
def phantom_home(home: Path, tiny_phantom: Path) -> Path:
    """``home`` (SOFTGRADE_HOME) holding the session's rendered tiny phantom."""
    return seed_tiny_phantom(home, tiny_phantom)


@pytest.fixture
def phantom_tmp(tmp_path: Path, tiny_phantom: Path) -> Path:
    """``tmp_path`` holding the session's rendered tiny phantom, for a worker made with
    ``home=tmp_path`` in this process."""
    return seed_tiny_phantom(tmp_path, tiny_phantom)
