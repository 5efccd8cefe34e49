"""What Streamlit's markdown (CommonMark + remark-gfm) would make live in a string: the
checker the hostile-text tests share.

Backslash-escaped characters are plain text, but remark-gfm finds autolink literals
(``http://``, ``https://``, ``www.``, ``name@host.org``) in the text *after* escapes are
resolved, so ``http\\://host`` is still a link; `live_markup` checks both."""

from __future__ import annotations

import re

_ESCAPED = re.compile(r"\\.", re.DOTALL)
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
# Written links and images, raw HTML and angle-bracket autolinks: on the unescaped text.
_WRITTEN = re.compile(r"!\[|\[[^\[\]]*\][(\[]|<[A-Za-z/!?]|\*\*|__")
# GFM autolink literals (mdast-util-gfm-autolink-literal): on the resolved text.
_AUTOLINK = re.compile(r"(?i)(https?://|www\.)[-.\w]|[-.\w+]+@[-\w]+\.[-\w]")


def live_markdown(text: str) -> str:
    """What markdown can still act on: backslash-escaped characters are plain text."""
    return _ESCAPED.sub("", text)


def resolved(text: str) -> str:
    """The text markdown shows once its backslash escapes are resolved."""
    return _ESCAPE.sub(r"\1", text)


def live_markup(text: str, *, emphasis: bool = True) -> list[str]:
    """The pieces of ``text`` that would render as a link, an image, HTML, a bare address
    or (``emphasis``) bold text; empty when markdown shows it as plain text."""
    found = [m[0] for m in _WRITTEN.finditer(live_markdown(text))]
    if not emphasis:
        found = [f for f in found if f not in ("**", "__")]
    return found + [m[0] for m in _AUTOLINK.finditer(resolved(text))]
