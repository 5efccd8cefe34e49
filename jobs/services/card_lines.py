"""A study card as text, for the terminal and as the comment lines heading every export
(CSV and LaTeX). Pure formatting: the cards come from their readers
(`jobs.services.export_cards.export_cards`, `jobs.services.provenance`), so presentation
(`pages.present.exports`, the report) formats them without reaching the store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

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


def card_text(card: dict[str, str]) -> str:
    """The card as aligned ``label  value`` lines (the terminal)."""
    width = max((len(k) for k in card), default=0)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in card.items())


def card_comments(card: dict[str, str], *, prefix: str = "# ") -> str:
    """The card as comment lines ``# label: value`` heading a CSV (``prefix='% '`` for
    LaTeX). Values are put on one line, so no field can end the comment early."""
    lines = [f"{prefix}{k}: {' '.join(str(v).split())}" for k, v in card.items()]
    return "\n".join(lines) + "\n"


def cards_header(cards: Sequence[Mapping[str, str]], *, prefix: str) -> str:
    """The cards as comment lines, one card after the other (each opens with its study)."""
    return "".join(card_comments(dict(card), prefix=prefix) for card in cards)


def headed(text: str, cards: Sequence[Mapping[str, str]], file_name: str) -> str:
    """An export's text under the study cards it covers, commented as its file type wants."""
    return cards_header(cards, prefix=comment_prefix(file_name)) + text
