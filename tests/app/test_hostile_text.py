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
