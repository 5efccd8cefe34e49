"""A link's URL values, and names from the store, render as text (issue 31).

A link such as ``/explorer?explorer_study=![px](http://evil.example/pixel.png) [Session
expired](http://evil.example/phish)`` used to put a live phishing link and a remote image into
the page's own warning about the value. Every page is opened here with every URL parameter it
keeps set to such a value, on a store whose names are hostile too, and every element that
Streamlit renders as markdown (text, alerts, captions, headings, widget labels and help) is
read back: none may hold a link, an image or an address a browser would follow or fetch.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pages.present.user_text import plain
from store import studies as store_studies
from tests.helpers.markup import live_markup, resolved
from tests.helpers.pages import make_store, signed_in

EVIL = "evil.example"
HOSTILE_LINK = (
    f"![px](http://{EVIL}/pixel.png) [Session expired: sign in again](http://{EVIL}/phish)"
)
# Elements whose text Streamlit renders as markdown.
MARKDOWN_KINDS = (
    "markdown",
    "caption",
    "info",
    "warning",
    "error",
    "success",
    "title",
    "header",
    "subheader",
    "toast",
)
# Elements with a markdown label or help text.
WIDGET_KINDS = (
    "button",
    "checkbox",
    "toggle",
    "radio",
    "selectbox",
    "multiselect",
    "text_input",
    "number_input",
    "expander",
    "tabs",
)


def markdown_texts(at: AppTest) -> list[str]:
    """Every string of the page that Streamlit renders as markdown."""
    found: list[str] = []
    for kind in MARKDOWN_KINDS:
        found += [str(element.value) for element in at.get(kind)]
    for kind in WIDGET_KINDS:
        for element in at.get(kind):
            for attribute in ("label", "help"):
                if text := getattr(element, attribute, None):
                    found.append(str(text))
    # A radio's options are markdown too (a method or study offered by name).
    found += [str(option) for element in at.get("radio") for option in element.options]
    return found


def links_rendered(at: AppTest) -> list[str]:
    """The page's markdown strings that would render a link, an image or a bare address
    (remark-gfm links ``http://host`` even when its colon is escaped: `live_markup`)."""
    return [
        text
        for text in markdown_texts(at)
        if EVIL in resolved(text) and live_markup(text, emphasis=False)
    ]


def test_the_checker_sees_the_links_it_must_refuse():
    assert live_markup(HOSTILE_LINK) and live_markup(f"see http\\://{EVIL}/x")
    assert live_markup(f"www.{EVIL}") and live_markup(f"ada@{EVIL}")
    for text in (HOSTILE_LINK, f"http://{EVIL} www.{EVIL} ada@{EVIL} HTTPS://{EVIL}"):
        assert not live_markup(plain(text))


@pytest.fixture
def hostile_store(home: Path) -> Path:
    """A finished study named with a link and an image, notes with both."""
    path = home / "softgrade.duckdb"
    study_id = make_store(home, name=HOSTILE_LINK)
    store_studies.set_notes(study_id, f"Read this: {HOSTILE_LINK} and http://{EVIL}/x", path=path)
    return path


def _parameters(page: str, path: Path) -> list[str]:
    """The URL parameters a page keeps (its pickers' keys), read from one ordinary run."""
    at = signed_in(page, "ada", "admin", path).run()
    assert not at.exception, [e.value for e in at.exception]
    return list(at.query_params)


# The pages the issue names (compare_tab, compare_studies, compare_tasks, data_dataset,
# explorer_study) and every other page that keeps a view in its URL.
LINKED_PAGES = ("compare", "explorer", "relationship", "attention", "data", "review", "demo")
# Parameters a page keeps only once it has something to pick (this store has no imported
# dataset), named here so that the link carries them all the same.
NAMED_PARAMETERS = {"data": ["data_dataset"], "review": ["review_dataset"], "demo": ["demo_film"]}


@pytest.mark.parametrize("page", LINKED_PAGES)
def test_hostile_link_values_render_as_text(page, hostile_store, monkeypatch):
    params = sorted(set(_parameters(page, hostile_store)) | set(NAMED_PARAMETERS.get(page, [])))
    at = signed_in(page, "ada", "admin", hostile_store)
    for name in params:
        at.query_params[name] = HOSTILE_LINK
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert params, f"{page} keeps no view in its URL"
    assert not links_rendered(at)


@pytest.mark.parametrize(
    ("page", "param"),
    [
        ("compare", "compare_tab"),
        ("compare", "compare_studies"),
        ("compare", "compare_tasks"),
        ("explorer", "explorer_study"),
    ],
)
def test_the_warning_about_a_hostile_link_names_it_as_text(page, param, hostile_store):
    at = signed_in(page, "ada", "admin", hostile_store)
    at.query_params[param] = HOSTILE_LINK
    at.run()
    assert not at.exception
    warnings = [str(w.value) for w in at.warning]
    assert any(plain(HOSTILE_LINK) in w for w in warnings), warnings
    assert not links_rendered(at)


@pytest.mark.parametrize("page", ["queue", "accounts", "audit"])
def test_hostile_store_values_render_as_text_on_the_other_pages(page, hostile_store):
    at = signed_in(page, "ada", "admin", hostile_store).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not links_rendered(at)
