"""The study report (`pages.present.report`) on a tiny synthetic study: every section by its
heading, charts as inline SVG, and nothing that a browser would fetch."""

from __future__ import annotations

import re
from html import unescape

import duckdb
import pytest

from engine.analysis.compare import PAIR_ORDER_RULE
from jobs.cli.main import main as cli_main
from jobs.services.report_inputs import gather_report_inputs
from pages.present import report
from pages.present.report.comparisons import favours_a_text
from store.db import init_schema
from tests.helpers.reports import SNAKE_CASE, table_cells
from tests.helpers.synthetic_study import write_synthetic_study


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    store = tmp_path_factory.mktemp("report") / "softgrade.duckdb"
    init_schema(store)
    return store, write_synthetic_study(store, n_seeds=3, n_patients=20)


@pytest.fixture(scope="module")
def inputs(synthetic):
    store, study = synthetic
    return gather_report_inputs([study], path=store, n_boot=20)  # its size is not under test


#: A test that reads the whole report shares its one build (`html`, ~4.6 s of CPU: every
#: section's analyses and charts drawn as SVG), which its first reader in a process pays: over
#: the fast tier's ~2 s, so these are slow by the fixture's cost (CI runs them). The fast tier
#: keeps the report's refusals and the sections built alone below.
whole_report = pytest.mark.slow


@pytest.fixture(scope="module")
def html(inputs):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(duckdb, "connect", _no_store)  # formatting reads nothing
        return report.build_report(inputs)


def _no_store(*args: object, **kwargs: object) -> None:
    raise AssertionError("the report opened the store while formatting its inputs")


@whole_report
def test_the_report_has_every_section_under_its_heading(html):
    headings = re.findall(r"<h2>(.*?)</h2>", html)
    escaped = [t.replace("&", "&amp;") for t in report.SECTIONS.values()]
    assert headings == escaped


@whole_report
def test_the_report_fetches_nothing_and_draws_charts_as_inline_svg(html):
    assert not re.search(r"https?://", html)
    assert not re.search(r"<(script|link|img|iframe|object)\b", html, re.IGNORECASE)
    assert "@import" not in html
    assert not re.search(r"url\((?!#)", html)  # only the SVGs' own gradients, by id
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))  # one document: each chart's gradient ids its own
    assert html.count("<svg") >= 6  # CD, violins, reliability, KL × CPPD heatmaps


@whole_report
def test_the_report_reads_the_paired_comparisons_primary_endpoint_first(html):
    paired = html[html.index('id="paired"') : html.index('id="critical-difference"')]
    assert paired.index("Primary endpoint") < paired.index("Each method against Nominal")
    assert "on most seeds (Wilcoxon" in paired or "Neither the corrected t-test" in paired
    assert "Rank-biserial r" in paired and "Effect size dz" in paired
    assert "new patients" not in paired
    for column in ("ρ assumed", "p at ρ = 0 · 0.09 · 0.17 · assumed", "Break-even ρ"):
        assert column in paired
    assert "P(method better)" in paired and "P(equivalent)" in paired and "TOST p" in paired
    assert "hypothesis tests: only the" in paired and "confirmatory family" in paired
    # The bootstrap leaves the paired tables for its own, labelled one after them.
    boot = paired.index("Film-sampling bootstrap 95 % interval")
    assert boot > paired.index("Each method against") and "95 % CI (bootstrap)" not in paired


@whole_report
def test_the_paired_notes_say_which_sign_of_a_difference_favours_which_method(html):
    paired = unescape(html[html.index('id="paired"') : html.index('id="critical-difference"')])
    assert PAIR_ORDER_RULE in paired
    assert "AMAE is lower when better, so a negative difference favours A" in paired


def test_the_sign_of_a_difference_that_favours_a_follows_the_metrics_direction():
    assert "negative difference favours A" in favours_a_text("amae", "AMAE")
    assert "positive difference favours A" in favours_a_text("qwk", "QWK")


@whole_report
def test_the_primary_endpoint_table_opens_with_the_verdict_and_splits_the_rest_off(html):
    paired = html[html.index('id="paired"') : html.index('id="critical-difference"')]
    first = re.search(r"<table.*?</table>", paired[paired.index("Primary endpoint") :], re.DOTALL)
    headers = [unescape(h) for h in re.findall(r"<th>(.*?)</th>", first.group(0))]
    assert headers[-3:] == ["Verdict", "p (Holm over the family)", "Significant after Holm"]
    assert "TOST p" not in headers and "p Wilcoxon (exact)" not in headers
    # Three seeds: the verdict is a verdict, not "not estimable".
    assert "not estimable" not in first.group(0)


@whole_report
def test_pairs_not_against_the_reference_go_to_an_appendix_table_without_sentences(html):
    paired = unescape(html[html.index('id="paired"') : html.index('id="critical-difference"')])
    assert "The other 2 pairs of methods are in the appendix table" in paired
    assert "Binomial's AMAE" not in paired and "separates Binomial and Beta" not in paired
    appendix = unescape(html[html.index('id="appendix"') :])
    assert "AMAE, KL: every other pair (exploratory)" in appendix
    pairs = appendix[: appendix.index(report.SHAPES_HEADING)]  # then the grade sets' shapes
    cells = table_cells(pairs)
    assert "Binomial" in cells and "Beta" in cells and "Reading" not in cells
    # One square table per metric and task: row A, column B reads A − B and the verdict.
    assert any(re.fullmatch(r"[+-]\d\.\d{3} (▲|▼|≈|·|n/e)", c) for c in cells)
    assert "Nominal" not in cells  # the reference method's pairs are in the body


@whole_report
def test_the_methods_paragraph_names_protocol_search_space_splits_and_software(html):
    methods = html[html.index('id="methods"') :]
    for words in ("3 seeds", "lr ∈ {0.0001, 0.001, 0.01}", "test and", "Wilcoxon", "scipy"):
        assert words in methods


@whole_report
def test_the_report_card_and_notes_of_the_study(synthetic, html):
    _, study = synthetic
    studies = html[html.index('id="studies"') : html.index('id="table4"')]
    assert study in studies and "No notes." in studies


def test_the_report_formats_its_inputs_without_opening_the_store(inputs, monkeypatch):
    """Once gathered, the record is all the report reads: every section (HTML) and the LaTeX
    tables are built with the store's connections refused."""
    monkeypatch.setattr(duckdb, "connect", _no_store)
    for section in (report.studies_section, report.caveats_section, report.methods_section):
        assert section(inputs)
    latex = report.report_latex(inputs)
    assert any(name.endswith("-table4.tex") for name in latex)
    assert inputs.studies[0].name in "".join(report.studies_section(inputs))


def test_an_unknown_study_or_none_is_refused_in_one_line(synthetic):
    store, _ = synthetic
    with pytest.raises(report.ReportInputError, match="no study 'study-nope'"):
        gather_report_inputs(["study-nope"], path=store)
    with pytest.raises(report.ReportInputError, match="at least one study"):
        gather_report_inputs([], path=store)


@whole_report
def test_the_kl_cppd_section_decomposes_the_kld_and_compares_it_between_methods(html):
    section = html[html.index('id="kl-cppd"') : html.index('id="curves"')]
    assert "chain-rule decomposition" in section and "KL marginal" in section
    assert "KLD of each method against Nominal, paired by seed" in section
    assert re.search(r"<li>KL × CPPD: [^<]*KLD", section)  # each body pair read in words
    assert "The other pair of methods is in the appendix table." in section
    assert "KLD, KL × CPPD: every other pair (exploratory)" in unescape(
        html[html.index('id="appendix"') :]
    )


def test_the_command_line_refuses_an_output_it_cannot_write_in_one_line(tmp_path, capsys):
    (tmp_path / "taken.html").mkdir()
    for output, words in (
        (tmp_path / "r.pdf", "writes an .html file"),
        (tmp_path / "none" / "r.html", "no folder"),
        (tmp_path / "taken.html", "is a folder; name a file in it"),
    ):
        assert cli_main(["report", "study-any", "-o", str(output)]) == report.BAD_INPUT
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err and "Traceback" not in err


def test_two_studies_each_have_their_part_of_a_section_under_name_and_id(tmp_path):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    first = write_synthetic_study(store, n_seeds=2, n_patients=20, seed=0)
    second = write_synthetic_study(store, n_seeds=2, n_patients=20, seed=1)
    parts = report.table4_section(gather_report_inputs([first, second], path=store, n_boot=0))
    headings = [p for p in parts if p.startswith("<h3>")]
    assert headings == [f"<h3>synthetic ({first})</h3>", f"<h3>synthetic ({second})</h3>"]
    assert report.file_name([first, second]) == f"softgrade_report_{first}_and_1_more.html"


@whole_report
def test_no_report_table_shows_a_snake_case_identifier(html):
    cells = table_cells(html)
    assert len(cells) > 100  # the card, Table 4, the paired and KL × CPPD tables
    assert [c for c in cells if SNAKE_CASE.search(c)] == []
    assert not {"True", "False"} & set(cells)  # booleans read yes / no


@whole_report
def test_the_report_spells_out_kld_and_drops_the_developers_command_line(html):
    assert "Kullback–Leibler divergence" in unescape(html)
    assert "python -m jobs stats" not in html and "STUDY_ID" not in html


@whole_report
def test_the_primary_endpoint_states_its_result_in_a_sentence(html):
    paired = unescape(html[html.index('id="paired"') : html.index('id="critical-difference"')])
    assert re.search(r"Result: (none|all \d+|\d+ of the \d+) .*significant after Holm", paired)
    assert "Significant after Holm" in paired


@whole_report
def test_the_critical_difference_ranks_read_as_exploratory_beside_the_endpoint(html):
    section = unescape(html[html.index('id="critical-difference"') : html.index('id="distri')])
    assert "Exploratory." in section and "independent blocks" in section
    assert "primary endpoint" in section


@whole_report
def test_the_caveats_say_the_films_are_synthetic_and_only_the_primary_is_confirmatory(html):
    caveats = unescape(html[html.index('id="caveats"') : html.index('id="table4"')])
    assert "Synthetic data" in caveats and "not radiographs of patients" in caveats
    assert "Annotation noise" in caveats and "probability 0.1" in caveats
    assert "Robustness against the true grade" in caveats
    assert "Only the primary endpoint is confirmatory" in caveats
    assert "Search budgets" in caveats and "Here they are equal" in caveats  # 1 config each


@whole_report
def test_the_methods_paragraph_states_the_declared_stopping_rule(html):
    methods = unescape(html[html.index('id="methods"') :])
    assert "validation loss had not improved for 40 epochs" in methods
    assert "without a better validation AMAE" not in methods
    assert "lowest validation AMAE at its kept epoch" in methods  # the search's selection


@whole_report
def test_the_reliability_diagram_says_it_pools_the_seeds(html):
    section = unescape(html[html.index('id="reliability"') : html.index('id="kl-cppd"')])
    assert "Films, 3 seeds pooled" in section  # the size legend
    assert "a film counts once per seed that tested it" in section


@whole_report
def test_the_report_gives_grade_sets_per_method(html):
    sets = html[html.index('id="grade-sets"') : html.index('id="kl-cppd"')]
    assert "Mean set size" in sets and "Ordinal APS (Lu 2022)" in sets
    assert "reach 90%" in sets and "<svg" in sets


# Gathers the whole report's inputs of a new study (~2.3 s of CPU): over the fast tier's ~2 s.
@pytest.mark.slow
def test_a_two_seed_report_gives_no_verdict_and_says_why(tmp_path):
    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    study = write_synthetic_study(store, n_seeds=2, n_patients=20)
    inputs = gather_report_inputs([study], path=store, n_boot=20)
    paired = unescape("".join(report.paired_section(inputs)))
    assert "not estimable: fewer than 3 seeds (2)" in paired
    verdicts = [c for c in table_cells(paired) if re.fullmatch(r"\w+ better( \(.*\))?", c)]
    assert verdicts == []  # no "X better" cell from two seeds
