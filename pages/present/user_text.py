"""Text that people typed (study, dataset and file names, tags, notes), made safe for markdown.

Streamlit renders ``st.markdown``, ``st.caption``, alerts and widget labels as markdown, so a
study named ``![x](http://host/x.png)`` made every other person's browser fetch that image,
and ``**bold**`` or ``<img ...>`` in a name changed the page. Every place that puts user text
into markdown goes through one of these (issue 23):

- `plain`: a name shown as itself (every markdown and HTML character escaped);
- `code`: a name inside an inline code span (a backtick in it cannot close the span);
- `notes`: a study's notes, still markdown, but with no image (remote or not) and no raw HTML.

No streamlit here: the pages call these, and they are unit-tested.
"""

from __future__ import annotations

import re

# CommonMark lets any ASCII punctuation be backslash-escaped. These change inline text
# anywhere (emphasis, code, links, images, tables, HTML and entities, Streamlit's :icon:
# shortcodes, $math$); a link or image needs "[", so "(" and ")" stay readable.
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]!|<>~$:&])")
# These matter at the start of a line only (a heading, quote, list item or rule).
_LINE_START = re.compile(r"^(\d+)([.)])|^([#>+\-=])")
_LONGEST_BACKTICKS = re.compile(r"`+")


def plain(text: object) -> str:
    """``text`` escaped so that markdown shows it exactly, on one line.

    Args:
        text: A user-supplied name (``None`` reads as an empty string).

    Returns:
        The text with every markdown or HTML character backslash-escaped and line breaks
        turned into spaces, so it cannot start a heading, a list, a link or an image.
    """
    one_line = " ".join(str("" if text is None else text).split())
    escaped = _MARKDOWN_SPECIALS.sub(r"\\\1", one_line)
    return _LINE_START.sub(lambda m: f"{m[1]}\\{m[2]}" if m[1] else f"\\{m[3]}", escaped)


def code(text: object) -> str:
    """``text`` as an inline code span that no backtick inside it can close."""
    one_line = " ".join(str("" if text is None else text).split())
    runs = [len(run) for run in _LONGEST_BACKTICKS.findall(one_line)]
    fence = "`" * (max(runs, default=0) + 1)
    # Markdown strips one space on each side of a span, needed only when it holds a backtick.
    pad = " " if runs else ""
    return f"{fence}{pad}{one_line}{pad}{fence}"


_IMAGE_START = re.compile(r"!\[")
_HTML_START = re.compile(r"<")


def notes(text: object) -> str:
    """A study's notes as markdown, without images or raw HTML.

    Links, emphasis, lists and code stay; an image (``![alt](url)`` or ``![alt][ref]``)
    becomes its text so that no browser fetches it, and ``<`` is escaped so that no tag
    (``<img>``, ``<script>``, an autolink) is rendered.
    """
    body = str("" if text is None else text)
    return _HTML_START.sub("&lt;", _IMAGE_START.sub(r"!\\[", body))
