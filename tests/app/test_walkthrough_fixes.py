"""Small things a walkthrough met (issue 39): each study's card expander names its study,
and the Probabilities summary shows no leftover index column."""

from __future__ import annotations

from tests.helpers.pages import make_store, run_page


def test_two_picked_studies_give_two_study_cards_each_named(home, monkeypatch):
    first = make_store(home, name="knees 2024")
    second = make_store(home, name="knees 2025")
    at = run_page(home, monkeypatch, query={"compare_studies": [first, second]})
    titles = [e.label for e in at.expander if e.label.startswith("Study card")]
    assert sorted(titles) == ["Study card · knees 2024", "Study card · knees 2025"], titles


def test_the_probabilities_summary_hides_its_sorted_index(home, monkeypatch):
    make_store(home, methods=("nominal", "beta", "triangular"))
    at = run_page(home, monkeypatch, tab="Probabilities")
    table = at.table[-1]
    assert "Method" in table.value.columns
    assert table.proto.hide_index  # its sorted rows' old positions are no column
