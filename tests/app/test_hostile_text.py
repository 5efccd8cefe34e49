"""Data is never markup (issue 39): method names, study names, notes and link values from a
file, the store or a URL render as text on every result page and tab: no link (written or a
bare address remark-gfm would make one of), no image, no HTML, in markdown, captions, alerts,
labels, help, expander and tab titles or image captions."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from engine.analysis import referee
from pages.present.referee_tables import design_line, recommendation_line, truth_line
from pages.present.tables import unknown_methods_note
from pages.present.user_text import plain
from pages.widgets.referee_view import _pair_as_text, card_as_text
from store import studies as store_studies
from tests.app.test_hostile_links import EVIL, markdown_texts
from tests.helpers.markup import live_markup, resolved
from tests.helpers.pages import make_store, signed_in

# A method name as an import from elsewhere (or a store of another version) could hold it:
# no dash (run ids split at dashes), but an image, a link, bold and bare addresses.
HOSTILE_METHOD = f"![px](http://{EVIL}/p.png)[Sign_in](http://{EVIL})**x**www.{EVIL}"
HOSTILE_NAME = f"[Session expired](http://{EVIL}/phish) www.{EVIL} ada@{EVIL}"


def hostile_markup(at: AppTest) -> list[str]:
    """Every string the page renders as markdown (image captions included) that would make
    a link, an image, HTML or bold text out of the hostile values."""
    shown = markdown_texts(at)
    shown += [img.caption for element in at.get("image") for img in element.proto.imgs]
    return [t for t in shown if EVIL in resolved(t) and live_markup(t, emphasis=False)]


@pytest.fixture
def hostile_store(home: Path) -> Path:
    path = home / "softgrade.duckdb"
    study_id = make_store(home, name=HOSTILE_NAME, methods=("nominal", HOSTILE_METHOD))
    store_studies.set_notes(study_id, f"see http://{EVIL}/x and www.{EVIL}", path=path)
    return path


COMPARE_TABS = (
    "Metrics table",
    "Distributions over seeds",
    "Confusion matrices",
    "Statistics",
    "Probabilities",
    "Robustness",
)


@pytest.mark.parametrize("tab", COMPARE_TABS)
def test_hostile_method_and_study_names_are_text_on_every_compare_tab(tab, hostile_store):
    at = signed_in("compare", "ada", "admin", hostile_store)
    at.query_params["compare_tab"] = tab
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not hostile_markup(at)


@pytest.mark.parametrize("page", ["explorer", "relationship", "queue", "attention", "demo"])
def test_hostile_method_and_study_names_are_text_on_the_other_pages(page, hostile_store):
    at = signed_in(page, "ada", "admin", hostile_store).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not hostile_markup(at)


def test_the_unregistered_methods_note_names_them_as_text():
    note = unknown_methods_note([HOSTILE_METHOD])
    assert not live_markup(note.replace("**", ""))
    assert "**" in note  # still bold, around the escaped name


def test_a_recorded_referee_cards_values_are_text():
    """A result recorded with ``calibrate-inference --record DIR`` is a file anyone could
    write: its card's values reach Compare -> Statistics as markdown and captions."""
    card = card_as_text(
        {
            "recommended_label": f"[Wald](http://{EVIL}/phish)",
            "level": 0.95,
            "methods": ["nominal", HOSTILE_METHOD],
            "null_method": f"www.{EVIL}",
            "task": f"![t](http://{EVIL}/t.png)",
            "device": f"<img src=http://{EVIL}/d.png>",
            "selection": f"ada@{EVIL}",
            "created_at": f"http://{EVIL}",
            "split_sizes": {"n_train": f"[n](http://{EVIL})"},
            "datasets_done": 20,
            "datasets_asked": 20,
        }
    )
    assert not live_markup(recommendation_line(card).replace("**", ""))
    assert not live_markup(design_line(card))
    assert "Nominal" in design_line(card)  # a registered method keeps its label
    summary = pd.DataFrame(
        {"section": [referee.TRUTH], "pair": [f"{HOSTILE_METHOD} − nominal"], "null": [False],
         "value": [0.1], "mc_se": [0.01]}
    )  # fmt: skip
    shown = truth_line(summary.assign(pair=summary["pair"].map(_pair_as_text)))
    assert not live_markup(shown) and "Nominal" in shown


def chart_specs(at: AppTest) -> list[dict]:
    """Every Vega-Lite chart's spec on the page (Altair's and vega_lite_chart's)."""
    import json

    elements = [*at.get("arrow_vega_lite_chart"), *at.get("vega_lite_chart")]
    return [json.loads(element.proto.spec) for element in elements if element.proto.spec]


def _walk(node: object, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    """Every (path, value) pair of a spec, depth first."""
    found: list[tuple[tuple[str, ...], object]] = [(path, node)]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _walk(value, (*path, str(key)))
    elif isinstance(node, list):
        for value in node:
            found += _walk(value, path)
    return found


#: Where a chart shows text: its title and subtitle, axis and legend titles, and the text
#: of its tooltips (field names and titles), each drawn by Vega as text, never as markup.
TEXT_KEYS = {"title", "subtitle", "text"}


def chart_markup(spec: dict) -> list[str]:
    """What a chart would make of data other than text: a link (an ``href`` channel or
    ``cursor`` to one), a remote image (an ``image`` mark), a fetched URL (``url`` data), a
    tooltip shown as HTML, or a hostile value changed on its way into a title (escaped for
    markdown, which Vega does not read, so shown with backslashes)."""
    problems = []
    for path, value in _walk(spec):
        key = path[-1] if path else ""
        if key == "href" or (key == "url" and "data" in path):
            problems.append(f"{'/'.join(path)}: {value}")
        if key == "type" and value == "image" or key == "mark" and value == "image":
            problems.append(f"image mark at {'/'.join(path)}")
        if key in TEXT_KEYS and isinstance(value, str | list) and EVIL in str(value):
            lines = value if isinstance(value, list) else [value]
            if any(resolved(str(line)) != str(line) for line in lines):
                problems.append(f"escaped for markdown in a chart: {value}")
    tooltip = spec.get("config", {}).get("tooltip") or spec.get("usermeta", {}).get("tooltip")
    if isinstance(tooltip, dict) and tooltip.get("sanitize") is False:
        problems.append("tooltips rendered as HTML")
    return problems


def chart_shows_name(specs: list[dict]) -> bool:
    """Whether some chart's title, axis, legend or tooltip shows the hostile method's name
    (or a chart's data holds it): the walk below has something to check."""
    return any(EVIL in json_text for json_text in map(str, specs))


@pytest.mark.parametrize("tab", [*COMPARE_TABS[1:3], "Robustness"])
def test_hostile_names_in_compare_charts_stay_text(tab, hostile_store):
    """Issue 39: chart titles, axis and legend titles and tooltips carry method and study
    names. Vega draws them as text; no chart may link, load an image or a URL from them,
    and no title may carry them escaped for markdown (backslashes a reader would see)."""
    at = signed_in("compare", "ada", "admin", hostile_store)
    at.query_params["compare_tab"] = tab
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    specs = chart_specs(at)
    assert specs and chart_shows_name(specs)
    assert not [problem for spec in specs for problem in chart_markup(spec)]


@pytest.mark.parametrize("page", ["explorer", "relationship"])
def test_hostile_names_in_the_other_pages_charts_stay_text(page, hostile_store):
    at = signed_in(page, "ada", "admin", hostile_store).run()
    assert not at.exception, [e.value for e in at.exception]
    specs = chart_specs(at)
    assert specs and chart_shows_name(specs)
    assert not [problem for spec in specs for problem in chart_markup(spec)]


def test_the_chart_checker_sees_what_it_must_refuse():
    linked = {"encoding": {"href": {"field": "u"}}, "title": "x"}
    escaped = {"title": {"text": plain(HOSTILE_METHOD)}}
    image = {"mark": "image", "data": {"url": f"http://{EVIL}/d.json"}}
    assert chart_markup(linked) and chart_markup(escaped) and len(chart_markup(image)) == 2
    assert not chart_markup({"title": {"text": f"KL · {HOSTILE_METHOD}"}})
