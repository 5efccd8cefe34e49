"""The study cards that head every CSV and LaTeX download, as text; they live in
`jobs.services.card_lines` so the command line (`python -m jobs stats -o FILE.csv`) heads its
exports the same way. The cards themselves are read by `jobs.services.export_cards`, which
the pages call (presentation reads no store)."""

from jobs.services.card_lines import (
    COMMENT_PREFIXES,
    Card,
    cards_header,
    comment_prefix,
    export_card,
    headed,
    one_line,
)

__all__ = [
    "COMMENT_PREFIXES",
    "Card",
    "cards_header",
    "comment_prefix",
    "export_card",
    "headed",
    "one_line",
]
