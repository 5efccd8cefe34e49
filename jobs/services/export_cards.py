"""Every CSV and LaTeX export (the result pages' downloads, `python -m jobs stats -o`) starts
with the study cards it covers.

One helper for all of them (Compare's Table 4, Statistics and Probabilities, the KL × CPPD
page): :func:`export_cards` reads each picked study's card (``store.studies.study_card``,
plus the card an imported study came with, ``store.bundle.imported_card``, under
``bundle ...`` labels), and :func:`headed` puts them before a file's text as comment lines,
``# label: value`` for CSV (read it back with ``pandas.read_csv(..., comment="#")``) and
``% label: value`` for LaTeX. No streamlit: the pages cache :func:`export_cards` and pass
the cards to the views that build the downloads; the command line heads its CSV with them.
The cards' text (labels, comment lines, :func:`headed`) is `jobs.services.card_lines`, which
reads nothing, so presentation (`pages.present.exports`) uses it without this module's
store; its names are passed on here for the command line.
"""

from __future__ import annotations

from collections.abc import Sequence

from jobs.services.card_lines import (
    BUNDLE_LABELS,
    COMMENT_PREFIXES,
    Card,
    cards_header,
    comment_prefix,
    export_card,
    field_label,
    headed,
    one_line,
)
from store import studies as store_studies
from store.bundle import imported_card
from store.db import StoreError

__all__ = [
    "BUNDLE_LABELS",
    "COMMENT_PREFIXES",
    "Card",
    "cards_header",
    "comment_prefix",
    "export_card",
    "export_cards",
    "field_label",
    "headed",
    "one_line",
]


def export_cards(path: str, study_ids: Sequence[str]) -> tuple[Card, ...]:
    """The export card of each study, in the order given.

    A study whose card cannot be read right now (the store busy or changed) still gets one
    line naming it, so no export leaves out which study it covers.
    """
    cards = []
    for study_id in study_ids:
        try:
            card = export_card(
                store_studies.study_card(study_id, path=path), imported_card(study_id, path=path)
            )
        except StoreError:
            card = {"study id": study_id}
        cards.append(card)
    return tuple(cards)
