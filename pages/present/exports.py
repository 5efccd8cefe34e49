"""The study cards that head every CSV and LaTeX download; they live in `jobs.services.export_cards`
so the command line (`python -m jobs stats -o FILE.csv`) heads its exports the same way."""

from jobs.services.export_cards import (
    COMMENT_PREFIXES,
    Card,
    cards_header,
    comment_prefix,
    export_card,
    export_cards,
    headed,
    one_line,
)

__all__ = [
    "COMMENT_PREFIXES",
    "Card",
    "cards_header",
    "comment_prefix",
    "export_card",
    "export_cards",
    "headed",
    "one_line",
]
