"""Fixtures for the page tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from store.db import default_store_path, init_schema


@pytest.fixture
def path(home: Path) -> Path:
    """The store of the page under test (in the test's SOFTGRADE_HOME)."""
    store = default_store_path()
    init_schema(store)
    return store
