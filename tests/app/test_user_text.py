"""User-supplied text renders as text (issue 23): names escaped, notes without images or HTML."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pages.present.user_text import code, notes, plain, plain_list, said
from store import studies as store_studies
from tests.helpers.markup import live_markup
from tests.helpers.pages import ROOT, make_store, run_page, signed_in

HOSTILE = "![x](http://127.0.0.1:1/x.png) **bold** <img src=x>"
# What `plain` makes of it: every markdown and HTML character escaped.
ESCAPED = "\\!\\[x\\](http\u2060\\://127.0.0.1\\:1/x.png) \\*\\*bold\\*\\* \\<img src=x\\>"
# An image or an HTML tag that markdown would render: not preceded by a backslash.
UNESCAPED = re.compile(r"(?<!\\)!(?<!\\)\[|(?<!\\)<img")


def test_plain_escapes_every_markdown_and_html_character_of_a_name():
    assert plain(HOSTILE) == ESCAPED
    assert plain("two\nlines") == "two lines"
    assert plain("# heading") == r"\# heading"
    assert plain("1. first") == r"1\. first"
    assert plain("- item") == r"\- item"
    assert plain("knees 2-4 (phantom)") == "knees 2-4 (phantom)"
    assert plain(None) == ""


def test_code_uses_a_fence_no_backtick_in_the_name_can_close():
    assert code("a`b") == "`` a`b ``"
    assert code("plain.png") == "`plain.png`"


def test_notes_keep_markdown_but_no_image_html_or_link():
    text = notes("**Why**: see [the paper](http://x.org)\n\n![x](http://h/x.png) <img src=x>")
    assert "**Why**" in text
    assert "the paper (http\u2060://x.org)" in text  # the address shown, not followed
    assert "![" not in text and "<img" not in text and "](" not in text
    assert "!x (http\u2060://h/x.png)" in text and "&lt;img src=x>" in text


def test_notes_leave_no_reference_nested_link_or_bare_address_live():
    text = notes("[a [b]](http://e) [r][1]\n[1]: http://e\nwww.e.org https://e.org")
    assert "\\[a \\[b]]" in text and "\\[r]\\[1]" in text and "\\[1]:" in text
    assert not live_markup(text, emphasis=False) and "www\u2060." in text


def test_plain_list_and_said_escape_each_value():
    assert plain_list(["a*", "[b](c)"]) == r"a\*, \[b\](c)"
    assert said(ValueError("no study '![x](y)'")) == r"no study '\!\[x\](y)'"


def _hostile_study(home: Path) -> str:
    study_id = make_store(home, name=HOSTILE)
    store_studies.set_notes(
        study_id, "Notes ![n](http://127.0.0.1:1/n.png) <img src=n>", path=home / "softgrade.duckdb"
    )
    return study_id


def _assert_rendered_as_text(at) -> None:
    """No markdown element holds the name unescaped, and no element is an image."""
    shown = [
        str(e.value) for kind in ("markdown", "caption", "success", "error") for e in at.get(kind)
    ]
    assert not any(UNESCAPED.search(text) for text in shown), shown
    assert not at.get("image")


@pytest.mark.parametrize("page", ["compare", "explorer", "relationship"])
def test_a_hostile_study_name_and_notes_render_as_text_on_the_result_pages(home, monkeypatch, page):
    _hostile_study(home)
    at = run_page(home, monkeypatch, str(ROOT / "pages" / f"{page}.py"))
    _assert_rendered_as_text(at)
    card = [str(e.value) for e in at.markdown if "**study**" in str(e.value)]
    assert card and plain(HOSTILE) in card[0]


def test_a_hostile_study_name_renders_as_text_on_jobs(home, monkeypatch):
    _hostile_study(home)
    at = signed_in("queue", "ada", "admin", home / "softgrade.duckdb").run()
    assert not at.exception
    _assert_rendered_as_text(at)
    assert any(f"**{plain(HOSTILE)}**" in str(e.value) for e in at.markdown)
