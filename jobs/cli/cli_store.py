"""The store as the commands open it: set up or upgraded first."""

from __future__ import annotations

from pathlib import Path

from store.db import default_store_path, init_schema


def open_store() -> Path:
    """The store, set up or upgraded (`init_schema` refuses a newer or damaged file)."""
    path = default_store_path()
    init_schema(path)
    return path
