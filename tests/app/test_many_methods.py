"""Every view with many methods: a synthetic study of every registered method (14) plus one
this checkout does not know, through each results page and the report, and the chart specs
that must stay readable at that count (violin labels, CD diagram label room)."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from engine.analysis import compare, ranking
from engine.methods import method_names
from jobs.services.report_inputs import gather_report_inputs
from jobs.services.report_record import ReportInputs
from pages.present import cd_diagram, charts, report, tables
from pages.present.palette import method_colours
from tests.helpers.pages import TIMEOUT_S, finished_synthetic_store, texts
from tests.helpers.reports import table_frame
from tests.helpers.shared_build import built_once

UNKNOWN = "imported_loss"  # a method no registry here knows (results imported from elsewhere)
PAGES = Path(__file__).parents[2] / "pages"


def _write_many(home: Path) -> dict[str, str]:
    methods = (*method_names(), UNKNOWN)
    study_id = finished_synthetic_store(home, n_seeds=6, n_patients=40, methods=methods)
    return {"study_id": study_id}


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Home and study id of a finished 15-method study (6 seeds: every test can run),
    written once per session and copied for each xdist worker."""
    built = built_once(tmp_path_factory, "many-methods", _write_many)
    return built.folder, built.description["study_id"]


@pytest.fixture(scope="module")
def many_inputs(many: tuple[Path, str]) -> ReportInputs:
    """The report's inputs of the 15-method study, gathered once for the report's tests."""
    home, study_id = many
    return gather_report_inputs([study_id], path=home / "softgrade.duckdb")


def _titles() -> list[str]:
    return [tables.method_title(m) for m in (*method_names(), UNKNOWN)]


def _page(home: Path, monkeypatch: pytest.MonkeyPatch, name: str, **state: object) -> AppTest:
    monkeypatch.setenv("SOFTGRADE_HOME", str(home))
    at = AppTest.from_file(str(PAGES / f"{name}.py"), default_timeout=TIMEOUT_S)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_at_least_fourteen_methods_are_registered():
    assert len(method_names()) >= 14


def test_table4_lists_every_method_in_registry_order_then_the_unknown_one(many, monkeypatch):
    home, _ = many
    at = _page(home, monkeypatch, "compare")
    table = at.table[0].value
    for task in ("KL", "CPPD"):
        shown = [m for m in table.loc[table["Task"] == task, "Method"] if m != compare.AVERAGE]
        assert shown == _titles()


def test_compare_and_the_study_card_name_the_method_this_checkout_does_not_know(many, monkeypatch):
    home, _ = many
    at = _page(home, monkeypatch, "compare")
    note = texts(at, "info")
    assert f"**{UNKNOWN}**" in note and "cannot train or grade with it" in note
    card = texts(at, "markdown")
    assert "Methods unknown here" in card and UNKNOWN in card
    assert UNKNOWN in at.multiselect(key="compare_methods").value


@pytest.mark.parametrize(
    "tab",
    [
        "Distributions over seeds",
        "Confusion matrices",
        "Statistics",
        "Probabilities",
        "Robustness",
        "Grade sets",
    ],
)
def test_every_compare_tab_draws_with_fifteen_methods(many, monkeypatch, tab):
    home, _ = many
    at = _page(home, monkeypatch, "compare", compare_tab=tab)
    assert at.get("vega_lite_chart") or at.dataframe


def test_the_probability_table_keeps_the_display_order(many, monkeypatch):
    home, _ = many
    at = _page(home, monkeypatch, "compare", compare_tab="Probabilities")
    table = next(t.value for t in at.table if "RPS" in t.value.columns)
    for task in ("KL", "CPPD"):
        assert list(table.loc[table["Task"] == task, "Method"]) == _titles()


def test_the_kl_cppd_page_scores_every_method(many, monkeypatch):
    home, _ = many
    at = _page(home, monkeypatch, "relationship")
    assert list(at.dataframe[0].value["method"]) == _titles()


def test_the_explorer_offers_every_method(many, monkeypatch):
    home, _ = many
    at = _page(home, monkeypatch, "explorer")
    picker = at.selectbox(key="explorer_method")
    assert set(picker.options) == set(_titles())
    picker.set_value(UNKNOWN).run()  # its search, though this checkout has no grid for it
    assert not at.exception, [e.value for e in at.exception]


def test_the_report_has_every_method_with_a_colour(many_inputs):
    html = report.build_report(many_inputs)
    assert all(title.replace("&", "&amp;") in html for title in _titles())
    colours = method_colours([*method_names(), UNKNOWN])
    assert len(set(colours.values())) == len(colours)


def _scores(n_seeds: int = 6) -> pd.DataFrame:
    methods = [*method_names(), UNKNOWN]
    return pd.DataFrame(
        [
            {"method": m, "seed": s, "value": 0.3 + 0.01 * i + 0.02 * ((s * 7 + i) % 5)}
            for i, m in enumerate(methods)
            for s in range(n_seeds)
        ]
    )


def test_the_violin_chart_names_every_method_on_slanted_labels():
    spec = charts.violin_box(_scores(), value_title="AMAE").to_dict()
    axis = next(
        layer["encoding"]["x"]["axis"]
        for layer in spec["layer"]
        if "axis" in layer["encoding"].get("x", {})
    )
    assert axis["values"] == list(range(len(method_names()) + 1))
    assert axis["labelAngle"] < 0 and axis["labelOverlap"] is False
    for title in _titles():
        assert f"'{title}'" in axis["labelExpr"]


def test_the_cd_diagram_leaves_room_for_its_longest_label():
    scores = _scores()
    cd = ranking.critical_difference(scores, lower_is_better=True)
    labels, _, frame = cd_diagram.critical_difference_layout(cd.table, cd.groups)
    assert set(labels["Method"]) == set(_titles())
    k = len(cd.table)
    px_per_rank = frame.width / (frame.high - frame.low)
    room = {"left": (1 - frame.low) * px_per_rank, "right": (frame.high - k) * px_per_rank}
    for side, rows in labels.groupby("side"):
        longest = max(len(text) for text in rows["text"])
        assert room[side] >= cd_diagram.CD_ELBOW_PX + cd_diagram.CD_CHAR_PX * longest
    assert frame.width > cd_diagram.CD_WIDTH_PX  # grew past the default to fit them


def test_a_line_chart_of_many_methods_lists_them_all_under_the_chart():
    lifts = pd.DataFrame(
        {"method": [*method_names(), UNKNOWN], "level": 0, "knee": 1, "lift_own": 1.0}
    )
    spec = charts.stress_lift(lifts, column="lift_own", title="t", level_title="KL").to_dict()
    colour = spec["layer"][0]["encoding"]["color"]
    assert colour["legend"]["orient"] == "bottom" and colour["legend"]["symbolLimit"] == 0
    few = charts.stress_lift(lifts.head(3), column="lift_own", title="t", level_title="KL")
    assert "orient" not in few.to_dict()["layer"][0]["encoding"]["color"]["legend"]


def test_the_reports_violins_fit_its_page_with_many_methods(many_inputs):
    html = "".join(report.distributions_section(many_inputs))
    widths = [float(w) for w in re.findall(r'<svg[^>]*?\swidth="([\d.]+)', html)]
    assert len(widths) == 2 and max(widths) <= 1100  # the report's page width


def test_the_reports_cd_readings_name_methods_by_their_labels(many_inputs):
    html = "".join(report.critical_difference_section(many_inputs))
    assert "CDW-CE" in html and "cdw_ce" not in html


def test_the_reports_pairs_stay_short_with_many_methods(many_inputs):
    """15 methods give 105 pairs per task: the body holds each method against Nominal (14 per
    task), the appendix one square table per metric and task, and no sentence per pair."""
    body = "".join(report.paired_section(many_inputs))
    appendix = "".join(report.appendix_section(many_inputs))
    endpoint = re.search(r"<table.*?</table>", body, re.DOTALL)
    assert endpoint is not None and endpoint.group(0).count("<tr>") == 2 * 14  # body rows
    assert body.count("<li>") <= 2 * 14 + 2  # at most a reading per body row, then a summary
    assert "The other 182 pairs of methods are in the appendix table" in body
    pairs = appendix[: appendix.index(report.SHAPES_HEADING.replace("'", "&#x27;"))]
    matrices = re.findall(r"<table.*?</table>", pairs, re.DOTALL)
    assert len(matrices) == 3  # AMAE on KL and CPPD, the KLD
    assert all(m.count("<tr>") == 14 for m in matrices)  # 14 methods besides Nominal
    assert "<li>" not in appendix


def _matrices(appendix: str) -> dict[str, pd.DataFrame]:
    """The appendix's verdict matrices by their heading, each indexed by its row method."""
    found = re.findall(r"<h4>(.*?)</h4>\s*(<table.*?</table>)", appendix, re.DOTALL)
    return {
        unescape(title): table_frame(table).set_index("A \\ B")
        for title, table in found
        if "every other pair" in title
    }


def test_every_pair_not_against_nominal_is_in_the_appendix_and_in_no_body_sentence(many_inputs):
    """The 15-method report's structure: the 2 × 14 pairs against Nominal in the body's
    tables, every other pair of the 105 per task in both cells of its appendix matrix, and no
    body sentence that names such a pair (readings are grouped, a few per task)."""
    body = unescape("".join(report.paired_section(many_inputs)))
    matrices = _matrices("".join(report.appendix_section(many_inputs)))
    titles = _titles()
    others = [t for t in titles if t != "Nominal"]
    for task in ("KL", "CPPD"):
        matrix = matrices[f"AMAE, {task}: every other pair (exploratory)"]
        assert sorted(matrix.index) == sorted(others)
        for i, a in enumerate(others):
            for b in others[i + 1 :]:  # both sides of every pair read a difference and mark
                assert re.fullmatch(r"[+-]\d\.\d{3} \S+", matrix.loc[a, b]), (task, a, b)
                assert re.fullmatch(r"[+-]\d\.\d{3} \S+", matrix.loc[b, a]), (task, a, b)
    readings = re.findall(r"<li>(.*?)</li>", body, re.DOTALL)
    assert len(readings) <= 2 * 4 + 2  # a few grouped findings per task, not one per pair
    for i, a in enumerate(others):
        for b in others[i + 1 :]:
            assert not any(f"{a} − {b}" in r or f"{b} − {a}" in r for r in readings)


def test_a_many_method_report_folds_its_long_tables(many_inputs):
    """Grade sets one row per method (both tasks side by side), the KLD's two tables one,
    the residuals one figure, and the paired tests' detail one compact table per family."""
    sets = "".join(report.grade_sets_section(many_inputs))
    first = table_frame(re.search(r"<table.*?</table>", sets, re.DOTALL).group(0))
    assert len(first) == 15 and {"KL · LAC (1 − p)", "CPPD · LAC (1 − p)"} <= set(first)
    assert report.SHAPES_HEADING in unescape(sets)  # the body names what the appendix holds
    kl_cppd = "".join(report.kl_cppd_section(many_inputs))
    assert kl_cppd.count("<svg") == 2  # the true table and one figure of 15 residual panels
    paired = "".join(report.paired_section(many_inputs))
    compact = re.findall(r'<table[^>]*class="[^"]*compact', paired)
    assert len(compact) >= 3  # verdict table, its merged detail, the bootstrap
    merged = ("dz · rank-biserial r", "P(method better · equivalent · Nominal better)")
    assert all(f"<th>{header}</th>" in unescape(paired) for header in merged)
