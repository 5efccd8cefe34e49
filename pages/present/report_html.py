"""The study report's HTML pieces: a chart as inline SVG, a table, a section, the page.

The page must open offline and fetch nothing, so charts are rendered here to static SVG by
vl-convert (Vega and Vega-Lite compiled into a Rust library: no browser, no network) and
the style sheet is inline. No streamlit.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

import altair as alt
import pandas as pd

# The SVG's namespace declarations are names, not fetched addresses; inline SVG in HTML needs
# none (the HTML parser puts <svg> in its namespace), so they are dropped and the file holds
# no http(s) text at all, which makes "references nothing online" checkable by a grep.
_NAMESPACES = re.compile(r'\s+xmlns(:\w+)?="[^"]*"')

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.7em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.86em;
        max-width: 100%; line-height: 1.25; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: right;
         overflow-wrap: break-word; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
.card td { text-align: left; } .note { color: #555; font-size: 0.9em; }
/* Tables of many rows are set smaller with their cells kept whole, so a row is one line
   (a 14-method study's fit the page); a matrix's method name may wrap. In print, smaller
   still, a compact cell may wrap again rather than be cut (a 14-method matrix measured
   933 of 980 px at this size). A chart wider than the page is scaled to it (viewBox). */
table.compact, table.matrix { font-size: 0.8em; } table.compact.dense { font-size: 0.7em; }
.compact td, .matrix td { white-space: nowrap; } .matrix td:first-child { white-space: normal; }
.row { display: flex; flex-wrap: wrap; gap: 0 1.5em; }
.figure { overflow-x: auto; margin: 0.5em 0 1em; } .methods { background: #f8f8f8;
          padding: 0.8em 1em; border-left: 3px solid #999; }
svg.marks { max-width: 100%; height: auto; }
@media print { h2 { page-break-before: auto; } .figure { page-break-inside: avoid; }
               body { max-width: none; margin: 0; } table { font-size: 0.78em; }
               table.compact, table.matrix { font-size: 0.68em; }
               .compact td { white-space: normal; }
               tr { page-break-inside: avoid; } }
@page { size: landscape; margin: 10mm; }
"""


def chart_svg(chart: alt.TopLevelMixin | alt.Chart) -> str:
    """A chart as an inline ``<svg>`` element (rendered offline by vl-convert)."""
    import vl_convert

    svg = vl_convert.vegalite_to_svg(chart.to_dict())
    return f'<div class="figure">{_NAMESPACES.sub("", svg, count=2)}</div>'


def table_html(frame: pd.DataFrame, *, digits: int = 3, css_class: str = "") -> str:
    """A frame as an HTML table, numbers to ``digits`` significant places, text escaped;
    ``css_class`` :data:`STYLE`'s table classes (``compact``: set smaller, cells kept whole
    on screen; ``compact dense``: smaller still; ``matrix``: smaller, cells kept whole)."""
    if frame.empty:
        return paragraph("Nothing to show.", note=True)
    return frame.to_html(
        index=False,
        border=0,
        classes=css_class or None,
        na_rep="–",
        float_format=lambda v: f"{v:.{digits}g}",
        escape=True,
    )


def card_html(card: dict[str, str]) -> str:
    """A study card as a two-column table."""
    rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in card.items()
    )
    return f'<table class="card">{rows}</table>'


def paragraph(text: str, *, note: bool = False) -> str:
    """One escaped paragraph (a note is set smaller and grey)."""
    cls = ' class="note"' if note else ""
    return f"<p{cls}>{html.escape(text)}</p>"


def row(figures: Sequence[str]) -> str:
    """Figures side by side, wrapping to the next line when the page is narrow."""
    return f'<div class="row">{"".join(figures)}</div>'


def bullets(items: Sequence[str]) -> str:
    """An escaped bulleted list."""
    rows = "".join(f"<li>{html.escape(item)}</li>" for item in items)
    return f"<ul>{rows}</ul>"


def heading(text: str, level: int = 3) -> str:
    """An escaped heading."""
    return f"<h{level}>{html.escape(text)}</h{level}>"


def section(section_id: str, title: str, parts: Sequence[str]) -> str:
    """A ``<section>`` with its ``<h2>`` title and its parts (already HTML)."""
    body = "\n".join(parts)
    return f'<section id="{section_id}">\n<h2>{html.escape(title)}</h2>\n{body}\n</section>'


def page(title: str, subtitle: str, sections: Sequence[str]) -> str:
    """The whole self-contained document."""
    body = "\n".join(sections)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n"
        f"<body>\n<h1>{html.escape(title)}</h1>\n{paragraph(subtitle, note=True)}\n"
        f"{body}\n</body></html>\n"
    )
