"""Every CSV and LaTeX export (the result pages' downloads, `python -m jobs stats -o`) starts
with the study cards it covers.

One helper for all of them (Compare's Table 4, Statistics and Probabilities, the KL × CPPD
page): :func:`export_cards` reads each picked study's card (``store.studies.study_card``,
plus the card an imported study came with, ``store.bundle.imported_card``, under
``bundle ...`` labels), and :func:`headed` puts them before a file's text as comment lines,
``# label: value`` for CSV (read it back with ``pandas.read_csv(..., comment="#")``) and
``% label: value`` for LaTeX (``jobs.services.provenance.card_comments``). No streamlit: the pages
cache :func:`export_cards` and pass the cards to the views that build the downloads
(`pages.present.exports` re-exports these names); the command line heads its CSV with them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from jobs.services.provenance import card_comments
from store import studies as store_studies
from store.bundle import imported_card
from store.db import StoreError

#: The comment mark of each export's file type.
COMMENT_PREFIXES: dict[str, str] = {".csv": "# ", ".tex": "% "}

Card = dict[str, str]


def comment_prefix(file_name: str) -> str:
    """The comment mark for a download's file name: ``"# "`` for ``.csv``, ``"% "`` for
    ``.tex``.

    Raises:
        ValueError: for any other file type (an export the cards cannot head).
    """
    suffix = PurePath(file_name).suffix.lower()
    if suffix not in COMMENT_PREFIXES:
        raise ValueError(
            f"{file_name!r}: exports are {' or '.join(COMMENT_PREFIXES)} files, not {suffix!r}"
        )
    return COMMENT_PREFIXES[suffix]


#: Bundle card fields whose name alone does not say what they count (the unit, whose job).
BUNDLE_LABELS: dict[str, str] = {
    "wall_s_to_last_run": "wall time to last run (s)",
    "run_seconds_total": "training time of all runs (s)",
    "runs_stored": "runs stored by its job",
}


def field_label(key: object) -> str:
    """A card field's name as a reader reads it: ``"started_at"`` -> ``"started at"``."""
    return BUNDLE_LABELS.get(str(key), str(key).replace("_", " "))


def one_line(value: Any) -> str:
    """A card value as one line: a mapping reads ``"k v, k v"`` (names without
    underscores), a list names each item once with its count (``"NVIDIA H100 x4"``),
    anything else its text."""
    if isinstance(value, Mapping):
        return ", ".join(f"{field_label(k)} {one_line(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        counts: dict[str, int] = {}
        for item in value:
            text = one_line(item)
            counts[text] = counts.get(text, 0) + 1
        return ", ".join(text if n == 1 else f"{text} x{n}" for text, n in counts.items())
    return str(value)


def export_card(card: Mapping[str, str], imported: Mapping[str, Any] | None = None) -> Card:
    """A study's card for an export: its card in this store, then (for a study imported from
    a bundle, e.g. the bundled reference study) the card it came with, each field labelled
    ``bundle <field>`` (where and how it was run: date, command, GPUs, versions)."""
    out = dict(card)
    for key, value in (imported or {}).items():
        out[f"bundle {field_label(key)}"] = one_line(value)
    return out


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


def cards_header(cards: Sequence[Mapping[str, str]], *, prefix: str) -> str:
    """The cards as comment lines, one card after the other (each opens with its study)."""
    return "".join(card_comments(dict(card), prefix=prefix) for card in cards)


def headed(text: str, cards: Sequence[Mapping[str, str]], file_name: str) -> str:
    """An export's text under the study cards it covers, commented as its file type wants."""
    return cards_header(cards, prefix=comment_prefix(file_name)) + text
