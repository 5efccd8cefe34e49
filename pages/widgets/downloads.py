"""The result pages' downloads: CSV and LaTeX buttons, each file headed by the picked
studies' cards."""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from jobs.services.export_cards import export_cards
from pages.present import exports
from pages.widgets.reads import RESULTS_TTL_S

# MIME type of a download, by the file name's suffix.
DOWNLOAD_TYPES = {".csv": "text/csv", ".tex": "text/x-tex"}


def download(container: DeltaGenerator, label: str, data: str, file_name: str, *, key: str) -> None:
    """A download button for a CSV or LaTeX export in ``container`` (a column)."""
    container.download_button(
        label,
        data,
        file_name=file_name,
        mime=DOWNLOAD_TYPES[Path(file_name).suffix],
        key=key,
        icon=":material/download:",
    )


@st.cache_data(ttl=RESULTS_TTL_S, show_spinner=False)
def cached_cards(path: str, study_ids: tuple[str, ...]) -> tuple[exports.Card, ...]:
    """The picked studies' cards that head every download (`jobs.services.export_cards`)."""
    return export_cards(path, study_ids)


def download_row(files: list[tuple[str, str, str, str]], cards: tuple[exports.Card, ...]) -> None:
    """One column per export ``(label, text, file name, key)``, each headed by the cards."""
    for column, (label, text, name, key) in zip(st.columns(len(files)), files, strict=True):
        download(column, label, exports.headed(text, cards, name), name, key=key)
