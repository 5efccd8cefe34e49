"""A result page's view in its URL (issue 22): a link opens the view it names, a change is
written back to the URL, and a link naming what the store cannot show says so once."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from pages.widgets.reads import forget_studies
from store import studies as store_studies
from tests.helpers.pages import COMPARE_PAGE, make_store, run_page, texts

STATISTICS_VIEW = {
    "compare_tasks": ["CPPD"],
    "compare_tab": "Statistics",
    "compare_stats_task": "CPPD",
    "compare_stats_metric": "qwk",
    "compare_correction": "bonferroni",
}


def test_a_compare_link_opens_its_study_tasks_tab_metric_and_correction(tmp_path, monkeypatch):
    older = make_store(tmp_path, name="older")
    make_store(tmp_path, name="newer")  # the picker's default
    at = run_page(tmp_path, monkeypatch, query={"compare_studies": older, **STATISTICS_VIEW})
    assert at.multiselect(key="compare_studies").value == [older]
    assert at.multiselect(key="compare_tasks").value == ["CPPD"]
    assert at.session_state["compare_tab"] == "Statistics"
    assert at.selectbox(key="compare_stats_task").value == "CPPD"
    assert at.selectbox(key="compare_stats_metric").value == "qwk"
    assert at.selectbox(key="compare_correction").value == "bonferroni"
    assert not at.warning
    # The view stays in the URL, and the copy-link control carries it (no server path).
    assert at.query_params["compare_stats_metric"] == "qwk"
    link = at.code[0].value
    assert f"compare_studies={older}" in link and "compare_tab=Statistics" in link
    assert str(tmp_path) not in link


def test_a_page_opened_without_a_link_writes_its_defaults_into_the_url(tmp_path, monkeypatch):
    study = make_store(tmp_path)
    at = run_page(tmp_path, monkeypatch)
    assert at.query_params["compare_studies"] == study
    assert at.query_params["compare_stats_metric"] == "amae"
    assert at.query_params["compare_tab"] == "Metrics table"


def test_a_change_after_opening_a_link_is_kept_and_written_back(tmp_path, monkeypatch):
    study = make_store(tmp_path)
    at = run_page(tmp_path, monkeypatch, query={"compare_studies": study, **STATISTICS_VIEW})
    at.selectbox(key="compare_stats_metric").set_value("mae").run()
    at.run()  # a later rerun does not bring the link's value back
    assert at.selectbox(key="compare_stats_metric").value == "mae"
    assert at.query_params["compare_stats_metric"] == "mae"


def test_a_link_value_the_view_does_not_offer_is_named_with_what_is(tmp_path, monkeypatch):
    make_store(tmp_path)
    at = run_page(tmp_path, monkeypatch, query={"compare_stats_metric": "f1", "compare_tab": "X"})
    warnings = texts(at, "warning")
    assert "metric 'f1'" in warnings and "Available: qwk, mae, amae" in warnings
    assert "tab 'X'" in warnings and "Statistics" in warnings
    assert at.selectbox(key="compare_stats_metric").value == "amae"  # the default


def test_a_link_to_a_deleted_study_says_so_and_opens_the_default(tmp_path, monkeypatch):
    deleted = make_store(tmp_path, name="deleted")
    kept = make_store(tmp_path, name="kept")
    store_studies.delete_study(deleted, confirm_name="deleted", path=tmp_path / "softgrade.duckdb")
    at = run_page(tmp_path, monkeypatch, query={"compare_studies": deleted})
    warning = texts(at, "warning")
    assert f"study {deleted}, which this store does not hold" in warning
    assert "deleted" in warning
    assert at.multiselect(key="compare_studies").value == [kept]


def test_a_link_to_a_study_id_never_in_the_store_says_so(tmp_path, monkeypatch):
    make_store(tmp_path)
    at = run_page(tmp_path, monkeypatch, query={"compare_studies": "study-from-elsewhere"})
    assert "study study-from-elsewhere, which this store does not hold" in texts(at, "warning")


def test_a_link_to_an_archived_study_shows_it_and_says_it_is_archived(tmp_path, monkeypatch):
    archived = make_store(tmp_path, name="old")
    make_store(tmp_path, name="current")
    store_studies.archive_study(archived, path=tmp_path / "softgrade.duckdb")
    at = run_page(tmp_path, monkeypatch, query={"compare_studies": archived})
    assert f"archived study {archived}" in texts(at, "info")
    assert at.toggle(key="compare_studies_archived").value is True
    assert at.multiselect(key="compare_studies").value == [archived]


def test_a_kl_cppd_link_opens_its_methods_epsilon_and_correction(tmp_path, monkeypatch):
    make_store(tmp_path)
    query = {"rel_methods": "beta", "rel_eps": "0.001", "rel_correction": "none"}
    at = run_page(tmp_path, monkeypatch, "../../pages/relationship.py", query=query)
    assert at.multiselect(key="rel_methods").value == ["beta"]
    assert at.selectbox(key="rel_eps").value == 1e-3
    assert at.selectbox(key="rel_correction").value == "none"
    assert "rel_eps=0.001" in at.code[-1].value


EXPLORER_PAGE = "../../pages/explorer.py"
RELATIONSHIP_PAGE = "../../pages/relationship.py"
# The choices a person makes on each result page; the link must carry each (issue 31).
CHOICE_KINDS = ("selectbox", "radio", "multiselect")


def copied_link(at) -> dict[str, list[str]]:
    """The query of the "Copy link to this view" control's URL."""
    links = [c.value for c in at.code if str(c.value).startswith(("/", "http"))]
    assert links, "no 'Copy link to this view' control"
    return parse_qs(urlsplit(links[-1]).query)


def choices(at) -> dict[str, object]:
    """Every keyed picker on the page with its value."""
    return {
        widget.key: widget.value
        for kind in CHOICE_KINDS
        for widget in at.get(kind)
        if widget.key and not widget.key.startswith("$$")
    }


@pytest.mark.parametrize(
    "page", [EXPLORER_PAGE, RELATIONSHIP_PAGE, COMPARE_PAGE], ids=["explorer", "kl-cppd", "compare"]
)
def test_the_copied_link_carries_every_choice_on_the_view(tmp_path, monkeypatch, page):
    make_store(tmp_path)
    at = run_page(tmp_path, monkeypatch, page)
    link = copied_link(at)
    picked = choices(at)
    assert picked, "no picker found"
    missing = sorted(set(picked) - set(link))
    assert not missing, f"the link leaves out {missing}: {link}"
    for key, value in picked.items():
        shown = [str(v) for v in value] if isinstance(value, list) else [str(value)]
        assert link[key] == shown, (key, link[key], shown)


def test_the_copied_link_follows_a_choice_made_inside_a_live_section(tmp_path, monkeypatch):
    """The overlay lives in a fragment (it re-reads a running study); the link is drawn
    outside it and must still name the overlay picked."""
    make_store(tmp_path)
    at = run_page(tmp_path, monkeypatch, EXPLORER_PAGE)
    at.radio(key="explorer_overlay").set_value("seed").run()
    assert copied_link(at)["explorer_overlay"] == ["seed"]
    assert at.query_params["explorer_overlay"] == "seed"


def test_the_link_offers_this_runs_choice_before_the_slow_sections_are_drawn(tmp_path, monkeypatch):
    """Issue 39: under load the control kept the previous run's link ("seed 0" for seed 2)
    until the whole run ended. A run stopped while the search section is drawn (as a slow
    one is still being drawn) already offers this run's seed and method."""
    import streamlit as st

    from pages.present import explorer_views

    make_store(tmp_path, methods=("nominal", "beta"))
    at = run_page(tmp_path, monkeypatch, EXPLORER_PAGE)
    assert copied_link(at)["explorer_seed"] == ["0"]

    def still_drawing(*args: object, **kwargs: object) -> str:
        st.stop()  # the run goes no further: what the control offers now is what it shows
        return ""

    monkeypatch.setattr(explorer_views, "search_sentence", still_drawing)
    at.selectbox(key="explorer_method").set_value("beta").run()
    at.selectbox(key="explorer_seed").set_value(2).run()
    assert not at.exception
    assert "Learning curves" not in [h.value for h in at.subheader]  # not reached
    link = copied_link(at)
    assert link["explorer_seed"] == ["2"] and link["explorer_method"] == ["beta"]


def test_a_click_sent_with_an_out_of_date_url_keeps_the_new_choice(tmp_path, monkeypatch):
    """A click made before the browser had the last rerun's URL sends that older URL: the
    earlier seed in it is an echo of this session's own writing, not a link to apply."""
    make_store(tmp_path)
    at = run_page(tmp_path, monkeypatch, EXPLORER_PAGE)
    assert at.query_params["explorer_seed"] == "0"
    at.selectbox(key="explorer_seed").set_value(2).run()
    at.query_params["explorer_seed"] = "0"  # the URL the browser still showed at the click
    at.radio(key="explorer_overlay").set_value("seed").run()
    assert at.selectbox(key="explorer_seed").value == 2
    assert at.query_params["explorer_seed"] == "2"
    assert copied_link(at)["explorer_seed"] == ["2"]
    assert not at.exception


def test_a_kl_cppd_link_opens_the_method_shown_seed_by_seed(tmp_path, monkeypatch):
    make_store(tmp_path)
    at = run_page(tmp_path, monkeypatch, RELATIONSHIP_PAGE, query={"rel_method": "beta"})
    assert at.selectbox(key="rel_method").value == "beta"
    assert copied_link(at)["rel_method"] == ["beta"]


def test_a_study_deleted_while_viewed_is_named_on_the_next_click(tmp_path, monkeypatch):
    viewed = make_store(tmp_path, name="viewed")
    other = make_store(tmp_path, name="other")
    at = run_page(tmp_path, monkeypatch, query={"compare_studies": viewed})
    assert at.multiselect(key="compare_studies").value == [viewed]
    store_studies.delete_study(viewed, confirm_name="viewed", path=tmp_path / "softgrade.duckdb")
    forget_studies()  # the few seconds of the study list's cache have passed
    at.run()  # the member's next click
    assert not at.exception
    warning = texts(at, "warning")
    assert f"The study you were viewing, “viewed” ({viewed}), was deleted" in warning
    assert at.multiselect(key="compare_studies").value == [other]
    at.run()
    assert "was deleted" not in texts(at, "warning")  # said once


def test_a_study_archived_while_viewed_says_how_to_show_it(tmp_path, monkeypatch):
    viewed = make_store(tmp_path, name="viewed")
    make_store(tmp_path, name="other")
    at = run_page(tmp_path, monkeypatch, EXPLORER_PAGE, query={"explorer_study": viewed})
    store_studies.archive_study(viewed, path=tmp_path / "softgrade.duckdb")
    forget_studies()  # the few seconds of the study list's cache have passed
    at.run()
    assert not at.exception
    assert f"“viewed” ({viewed}), was archived" in texts(at, "info")
    assert "Show archived studies" in texts(at, "info")


def test_hiding_archived_studies_oneself_gets_no_note_about_them(tmp_path, monkeypatch):
    archived = make_store(tmp_path, name="old")
    make_store(tmp_path, name="current")
    store_studies.archive_study(archived, path=tmp_path / "softgrade.duckdb")
    at = run_page(tmp_path, monkeypatch, query={"compare_studies": archived})
    at.toggle(key="compare_studies_archived").set_value(False).run()
    assert not at.exception
    assert "was archived" not in texts(at, "info")
    assert archived not in at.multiselect(key="compare_studies").value
