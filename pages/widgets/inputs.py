"""Inputs the Launch page's forms share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def labelled_choice(
    widget: Callable[..., Any], label: str, labels: Mapping[str, str], key: str, **more: Any
) -> Any:
    """A choice among ``labels``' keys shown by their labels (``widget``: ``st.selectbox``,
    ``st.radio``, ``st.multiselect`` or a column's), kept for the session so that a visit to
    another page and back finds the form as it was left; ``more`` goes to the widget."""
    return widget(
        label, list(labels), format_func=labels.get, key=key, persist_state="session", **more
    )
