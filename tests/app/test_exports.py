"""Every CSV and LaTeX download of the result pages starts with the study cards it covers
(``pages.present.exports``) and still reads back as the same table."""

from __future__ import annotations

import io
from collections.abc import Callable

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from jobs.services.export_cards import export_cards
from pages.present import exports
from tests.helpers.pages import download_reader, make_store, run_page

RELATIONSHIP = "../../pages/relationship.py"
COMPARE_KEYS = {
    "compare_download_csv",
    "compare_download_latex",
    "compare_download_runs",
    "compare_download_stats_csv",
    "compare_download_stats_latex",
}
RELATIONSHIP_KEYS = {"rel_download_seeds", "rel_download_summary", "rel_download_latex"}
PROBABILITY_KEYS = {"prob_download_csv", "prob_download_latex"}


@pytest.fixture
def downloads(monkeypatch: pytest.MonkeyPatch) -> Callable[[AppTest], dict[str, tuple[str, str]]]:
    """Reads what each download button of a page run serves: key -> (file type, text)."""
    return download_reader(monkeypatch)


def split_header(text: str, mark: str) -> tuple[list[str], str]:
    """The comment lines an export opens with, and the rest of its text."""
    lines = text.splitlines(keepends=True)
    n = next(i for i, line in enumerate(lines) if not line.startswith(mark))
    return [line.rstrip("\n") for line in lines[:n]], "".join(lines[n:])


def assert_headed_by(served: tuple[str, str], cards: tuple[dict[str, str], ...]) -> None:
    """The export starts with exactly the cards' comment lines and, for a CSV, reads back
    with ``comment="#"`` as the same table as its text without them."""
    kind, text = served
    mark = {"csv": "# ", "tex": "% "}[kind]
    header, body = split_header(text, mark[0])
    assert header == exports.cards_header(cards, prefix=mark).splitlines()
    assert body.strip(), "the export has a table under its cards"
    if kind == "csv":
        back = pd.read_csv(io.StringIO(text), comment="#")
        pd.testing.assert_frame_equal(back, pd.read_csv(io.StringIO(body)))
    else:
        assert body.lstrip().startswith(("\\begin", "%")), body[:80]


# -- the helper ------------------------------------------------------------------------------


def test_comment_prefix_follows_the_file_type_and_refuses_others():
    assert exports.comment_prefix("softgrade_table4.csv") == "# "
    assert exports.comment_prefix("softgrade_table4.TEX") == "% "
    with pytest.raises(ValueError, match=r"\.csv or \.tex"):
        exports.comment_prefix("softgrade_table4.xlsx")


def test_one_line_flattens_mappings_and_counts_repeated_items():
    assert exports.one_line({"torch": "2.11.0", "numpy": "2.5.2"}) == "torch 2.11.0, numpy 2.5.2"
    assert exports.one_line(["H100", "H100", "A100"]) == "H100 x2, A100"
    assert exports.one_line([0, 1, 2]) == "0, 1, 2"
    assert exports.one_line(3.5) == "3.5"


def test_export_card_puts_an_imported_studys_own_card_after_the_local_one():
    local = {"study": "Reference", "study id": "study-1"}
    bundle = {"date": "2026-11-26", "gpus": ["H100", "H100"], "cuda": "13.0", "job": {"a": 1}}
    card = exports.export_card(local, bundle)
    assert list(card) == [
        "study",
        "study id",
        "bundle date",
        "bundle gpus",
        "bundle cuda",
        "bundle job",
    ]
    assert card["bundle gpus"] == "H100 x2" and card["bundle job"] == "a 1"
    assert exports.export_card(local, None) == local


def test_headed_puts_every_card_before_the_text_with_the_files_comment_mark():
    cards = ({"study": "a", "code": "git 1"}, {"study": "b\nwith a line break"})
    csv = exports.headed("x,y\n1,2\n", cards, "t.csv")
    assert csv == "# study: a\n# code: git 1\n# study: b with a line break\nx,y\n1,2\n"
    pd.testing.assert_frame_equal(
        pd.read_csv(io.StringIO(csv), comment="#"), pd.DataFrame({"x": [1], "y": [2]})
    )
    assert exports.headed("\\begin{table}\n", cards[:1], "t.tex").startswith("% study: a\n% code")


def test_export_cards_read_the_store_and_name_a_study_they_cannot_read(tmp_path):
    study_id = make_store(tmp_path, name="knees v2")
    store = str(tmp_path / "softgrade.duckdb")
    card, missing = export_cards(store, (study_id, "study-gone"))
    assert card["study"] == "knees v2" and card["study id"] == study_id
    assert not any(label.startswith("bundle") for label in card)  # run here, not imported
    assert missing == {"study id": "study-gone"}


# -- every download of the result pages ------------------------------------------------------


def test_compare_downloads_start_with_every_picked_studys_card(tmp_path, monkeypatch, downloads):
    first = make_store(tmp_path, name="first")
    second = make_store(tmp_path, name="second")
    at = run_page(tmp_path, monkeypatch)
    at.multiselect(key="compare_studies").set_value([first, second]).run()
    assert not at.exception, [e.value for e in at.exception]
    served = downloads(at)
    assert set(served) == COMPARE_KEYS
    cards = export_cards(str(tmp_path / "softgrade.duckdb"), (first, second))
    assert [c["study"] for c in cards] == ["first", "second"]
    for key in COMPARE_KEYS:
        assert_headed_by(served[key], cards)


def test_probability_downloads_start_with_the_study_card(tmp_path, monkeypatch, downloads):
    study_id = make_store(tmp_path, methods=("nominal", "beta", "triangular"))
    at = run_page(tmp_path, monkeypatch, tab="Probabilities")
    served = downloads(at)
    assert set(served) >= PROBABILITY_KEYS
    cards = export_cards(str(tmp_path / "softgrade.duckdb"), (study_id,))
    for key in PROBABILITY_KEYS:
        assert_headed_by(served[key], cards)


def test_relationship_downloads_start_with_the_study_card(tmp_path, monkeypatch, downloads):
    study_id = make_store(tmp_path, name="joint")
    at = run_page(tmp_path, monkeypatch, RELATIONSHIP)
    served = downloads(at)
    assert set(served) == RELATIONSHIP_KEYS
    cards = export_cards(str(tmp_path / "softgrade.duckdb"), (study_id,))
    for key in RELATIONSHIP_KEYS:
        assert_headed_by(served[key], cards)
    # The Table 7 export follows the correction picked on the page.
    at.selectbox(key="rel_correction").set_value("none").run()
    _, text = downloads(at)["rel_download_summary"]
    tests = pd.read_csv(io.StringIO(text), comment="#")
    pairwise = tests.loc[tests["test"].str.startswith("Pairwise", na=False), "test"]
    assert set(pairwise) == {"Pairwise (Wilcoxon, unadjusted)"}
