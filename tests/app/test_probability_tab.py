"""The Compare page's Probabilities tab on a tiny study and on the bundled reference study:
computed only when opened, its correction picker, its exports with the study card."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from engine.analysis import probability_metrics as pm
from engine.analysis.ranking import BLOCKING_SENTENCE
from jobs.services.export_cards import export_cards
from pages.present import exports, stat_tables
from store import runs as store_runs
from store.bundle import REFERENCE_STUDY, import_study, read_card
from store.db import init_schema
from tests.helpers.pages import make_store, run_page, texts

TAB = "Probabilities"


def downloads(at) -> set[str]:
    """The keys of the page's download buttons."""
    return {button.proto.id.split("-")[-1] for button in at.get("download_button")}


def wilcoxon_corrections(at, tab: int = 4) -> set[str]:
    """The Correction column of the test tables shown in one tab (the pairwise Wilcoxon's;
    4: Probabilities, 3: Statistics)."""
    return {
        value
        for frame in at.tabs[tab].dataframe
        if "Correction" in frame.value.columns
        for value in frame.value["Correction"]
    }


def test_probabilities_tab_is_computed_only_when_opened(tmp_path, monkeypatch):
    make_store(tmp_path, methods=("nominal", "beta", "triangular"))
    at = run_page(tmp_path, monkeypatch)
    assert not any("RPS" in table.value.columns for table in at.table)
    assert "prob_download_csv" not in downloads(at)
    at.session_state["compare_tab"] = TAB  # the user opens the tab
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "RPS" in at.table[-1].value.columns
    assert {"prob_download_csv", "prob_download_latex"} <= downloads(at)


def test_probabilities_tab_summarises_a_tiny_study(tmp_path, monkeypatch):
    make_store(tmp_path, methods=("nominal", "beta", "triangular"))
    at = run_page(tmp_path, monkeypatch, tab=TAB)
    summary = at.table[-1].value
    assert {"RPS", "ECE (top label)", "Unimodal share"} <= set(summary.columns)
    assert set(summary["Method"]) == {"Nominal", "Beta", "Triangular"}
    assert BLOCKING_SENTENCE in texts(at, "caption")
    at.selectbox(key="prob_metric").set_value("within1").run()
    assert not at.exception, [e.value for e in at.exception]


def test_probabilities_tab_correction_defaults_to_holm_and_offers_the_papers(tmp_path, monkeypatch):
    # Six seeds: the smallest exact Wilcoxon p-value (1/32) can reach 0.05, so the pairwise
    # table is shown with its correction.
    make_store(tmp_path, methods=("nominal", "beta", "triangular"), seeds=tuple(range(6)))
    at = run_page(tmp_path, monkeypatch, tab=TAB)
    picker = at.selectbox(key="prob_correction")
    assert picker.value == "holm"
    assert picker.options[:2] == [
        "Holm (SoftGrade's default)",
        "none — as in the paper (unadjusted p-values)",
    ]
    assert wilcoxon_corrections(at) == {"Holm"}
    picker.set_value("none").run()
    assert not at.exception, [e.value for e in at.exception]
    assert wilcoxon_corrections(at) == {"unadjusted"}
    assert wilcoxon_corrections(at, tab=3) == {"Holm"}  # each tab keeps its own choice
    # The Statistics tab's picker is the same widget, with its own key.
    assert at.selectbox(key="compare_correction").options == picker.options


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A store holding only the bundled reference study, imported as a PI would."""
    home = tmp_path_factory.mktemp("reference")
    store = home / "softgrade.duckdb"
    init_schema(store)
    done = import_study(REFERENCE_STUDY, path=store)
    return home, store, done.study_id


def test_probabilities_tab_renders_the_reference_study(reference, monkeypatch):
    home, _, _ = reference
    seeds = len(read_card(REFERENCE_STUDY)["seeds"])
    at = run_page(home, monkeypatch, tab=TAB)
    summary = at.table[-1].value
    assert "RPS" in summary.columns
    assert set(summary["Seeds"]) == {seeds}
    assert set(summary[summary["Task"] == "KL"]["Method"]) >= {"Nominal", "Beta", "Exponential"}
    assert "Friedman" in texts(at, "markdown")
    at.selectbox(key="prob_correction").set_value("none").run()
    assert not at.exception, [e.value for e in at.exception]
    assert wilcoxon_corrections(at) == {"unadjusted"}  # 20 seeds: the table is shown


def test_probability_exports_carry_the_study_card_and_the_numbers(reference):
    _, store, study_id = reference
    frame = store_runs.selected_probabilities([study_id], path=store)
    summary = pm.probability_summary(pm.per_run_probability_metrics(frame))

    cards = export_cards(str(store), (study_id,))
    csv = exports.headed(stat_tables.probability_csv(summary), cards, "p.csv")
    assert csv.startswith("# study: Reference: paper protocol on the phantom")
    # The bundled reference study's own card (where and how it was run) comes with it.
    # It ran in two parts: the card keeps each part's command under its seeds.
    assert "\n# bundle command: seeds 0-12 python -m jobs run studies/paper.yaml" in csv
    assert "seeds 13-19 python -m jobs run bench/paper-seeds-13-19.yaml" in csv
    assert "\n# bundle gpus: " in csv
    back = pd.read_csv(io.StringIO(csv), comment="#")
    assert len(back) == len(summary) and back["rps_mean"].tolist() == pytest.approx(
        summary["rps_mean"].tolist()
    )

    latex = exports.headed(stat_tables.probability_latex(summary), cards, "p.tex")
    assert latex.startswith("% study: Reference: paper protocol on the phantom")
    assert "\n% bundle date: " in latex
    assert r"\begin{table*}" in latex and "ECE (P(grade $>$ k))" in latex
