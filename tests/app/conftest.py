"""Fixtures for the page tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from store.db import default_store_path
from tests.helpers.stores import fresh_store_at


@pytest.fixture
def path(home: Path, empty_store_template: Path) -> Path:
    """The store of the page under test (in the test's SOFTGRADE_HOME)."""
    return fresh_store_at(default_store_path(), empty_store_template)
