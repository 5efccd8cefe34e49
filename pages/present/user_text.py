"""Text that people typed (study, dataset and file names, tags, notes), made safe for markdown.

Streamlit renders ``st.markdown``, ``st.caption``, alerts and widget labels as markdown, so a
study named ``![x](http://host/x.png)`` made every other person's browser fetch that image,
and ``**bold**`` or ``<img ...>`` in a name changed the page. Every place that puts user text
into markdown goes through one of these (issue 23):

- `plain`: a name shown as itself (every markdown and HTML character escaped);
- `code`: a name inside an inline code span (a backtick in it cannot close the span);
- `notes`: a study's notes, still markdown (emphasis, lists, code), but with no image, no raw
  HTML and no link whose text hides its address;
- `plain_list`: several names, each shown as itself;
- `said`: an error's message, which often quotes what someone typed or a link carried.

Values from a link's URL (``?explorer_study=...``), a file, a CSV or the store are text too
(issue 31): a link such as ``?compare_tab=[Session expired](http://host/phish)`` must not put
a live link or a remote image into the page's own warning about it.

Issue 39: escaping is not enough for a bare address. Streamlit's markdown (remark-gfm) finds
GFM "autolink literals" (``http://``, ``https://``, ``www.``, ``name@host.org``) in the text
*after* escapes are resolved, so an address with its colon escaped still became a link.
`plain` therefore also puts an invisible WORD JOINER (U+2060) inside each such start
(``http⁠://``, ``www⁠.``, ``name⁠@host``), which no autolink pattern matches across; the
text reads the same. Every value from a file, the store, a URL, an import or a bundle that
reaches a caption, label, help text, expander title, alert or markdown on a page goes
through `plain` (or `code`).

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
        The text with every markdown or HTML character backslash-escaped, line breaks
        turned into spaces and every autolink start broken by a WORD JOINER, so it cannot
        start a heading, a list, a link (written or bare) or an image.
    """
    one_line = " ".join(str("" if text is None else text).split())
    escaped = _MARKDOWN_SPECIALS.sub(r"\\\1", unlinked(one_line))
    return _LINE_START.sub(lambda m: f"{m[1]}\\{m[2]}" if m[1] else f"\\{m[3]}", escaped)


#: Put inside an autolink's start so that no GFM autolink pattern matches; shows as nothing.
WORD_JOINER = "\u2060"
# The starts of GFM's autolink literals (remark-gfm: ``https?://``, ``www.``, an e-mail's
# ``@``; ``mailto:`` and ``xmpp:`` need the ``@`` too).
_AUTOLINK_START = re.compile(r"(?i)(https?)(?=:)|(www)(?=\.)|(?=@)")


def unlinked(text: str) -> str:
    """``text`` with a WORD JOINER inside every start of a GFM autolink literal
    (``http⁠://``, ``www⁠.``, ``a⁠@b.org``), so markdown shows it and links nothing."""
    return _AUTOLINK_START.sub(lambda m: f"{m[0]}{WORD_JOINER}", text)


def code(text: object) -> str:
    """``text`` as an inline code span that no backtick inside it can close."""
    one_line = " ".join(str("" if text is None else text).split())
    runs = [len(run) for run in _LONGEST_BACKTICKS.findall(one_line)]
    fence = "`" * (max(runs, default=0) + 1)
    # Markdown strips one space on each side of a span, needed only when it holds a backtick.
    pad = " " if runs else ""
    return f"{fence}{pad}{one_line}{pad}{fence}"


def plain_list(values: object, sep: str = ", ") -> str:
    """Several names (e.g. the ids a link asked for), each escaped by `plain`, joined."""
    items = [values] if isinstance(values, str) else list(values or ())  # type: ignore[call-overload]
    return sep.join(plain(value) for value in items)


def said(error: object) -> str:
    """An error's message as text: store and check messages quote names, paths and link
    values as they were typed, so the message is escaped like a name."""
    return plain(str(error))


_HTML_START = re.compile(r"<")
# An inline link ``[text](address "title")``: shown as its text and its address, as text.
_INLINE_LINK = re.compile(r"(?<!\\)\[([^\[\]\n]*)\]\(([^()\s]*)(?:\s+[^()]*)?\)")
# Whatever "[" is left could still open a link or an image (nested brackets, a reference
# ``[text][ref]`` and its definition ``[ref]: address``): every one is escaped.
_BRACKET = re.compile(r"(?<!\\)\[")
# An address GitHub-flavoured markdown would make a link of by itself (``https://``, ``www.``).
_BARE_ADDRESS = re.compile(r"(?i)\b(https?|ftp|mailto)(:)|\b(www)(\.)")


def notes(text: object) -> str:
    """A study's notes as markdown, without images, raw HTML or links.

    Emphasis, lists, headings and code stay. A link ``[text](address)`` becomes
    ``text (address)`` and an image ``![alt](address)`` ``!alt (address)``, both as text; any
    other ``[`` is escaped, so no link, reference or image is left to follow or fetch; no
    address is made clickable, so a note cannot dress a phishing address as "Sign in
    again"; and ``<`` is escaped so that no tag (``<img>``, ``<script>``, an autolink) is
    rendered.
    """
    body = str("" if text is None else text)
    body = _INLINE_LINK.sub(lambda m: f"{m[1]} ({m[2]})", body)
    body = _BRACKET.sub(r"\\[", unlinked(body))
    body = _BARE_ADDRESS.sub(lambda m: f"{m[1]}\\:" if m[1] else f"{m[3]}\\.", body)
    return _HTML_START.sub("&lt;", body)
