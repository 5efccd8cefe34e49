"""The Compare page with real stored predictions (a tiny trained study) and with bad input."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from engine.analysis import compare
from pages.present import tables
from pages.widgets.reads import cached_jobs
from store import jobs as store_jobs
from store import runs as store_runs
from store.jobs import JobStatus
from tests.helpers.pages import TIMEOUT_S, make_store, run_page, texts

PAGE = "../../pages/compare.py"


def test_compare_page_shows_table4_of_a_trained_study(finished_study, monkeypatch):
    at = run_page(finished_study.home, monkeypatch)
    assert at.multiselect(key="compare_studies").value == [finished_study.study_id]
    table = at.table[0].value
    assert list(table.columns[:4]) == ["Task", "Method", "Seeds", "QWK ↑"]
    kl = table[table["Task"] == "KL"]
    assert list(kl["Method"]) == ["Nominal", "Beta", "Triangular", "Average"]
    assert set(kl["Seeds"]) == {"3"}

    # The numbers are the engine's, computed from the store.
    counts = store_runs.confusion_counts([finished_study.study_id], path=finished_study.store)
    per_run = compare.per_run_metrics(counts)
    beta = per_run[(per_run["task"] == "KL") & (per_run["method"] == "beta")]["amae"]
    expected = f"{beta.mean():.3f} ± {beta.std(ddof=1):.3f}"
    assert kl.loc[kl["Method"] == "Beta", "AMAE ↓"].iloc[0] == expected
    assert "dlordinal" in texts(at, "caption")  # absent classes are dropped, as stated
    downloads = {button.proto.id.split("-")[-1] for button in at.get("download_button")}
    assert len(downloads) == 6  # Report, table CSV + LaTeX, per-run CSV, statistics CSV + LaTeX
    assert "bold" in texts(at, "caption")


def test_compare_page_published_rows_are_labelled_as_the_papers(finished_study, monkeypatch):
    if compare.published_table() is None:
        pytest.skip("../shared/reference/paper_table4.csv is not there")
    at = run_page(finished_study.home, monkeypatch)
    at.toggle(key="compare_published").set_value(True).run()
    assert not at.exception
    methods = list(at.table[0].value["Method"])
    assert "Beta — paper (20 seeds)" in methods
    assert methods.index("Beta — paper (20 seeds)") == methods.index("Beta") + 1
    assert "published values" in texts(at, "caption")


def test_compare_page_widgets_drive_plots_matrices_and_statistics(finished_study, monkeypatch):
    at = run_page(finished_study.home, monkeypatch)
    assert at.selectbox(key="compare_cm_method_a").value == "nominal"
    assert at.selectbox(key="compare_cm_method_b").value in {"beta", "triangular"}
    charts_before = len(at.get("vega_lite_chart"))
    # two violins (one per task), two confusion matrices and the Statistics tab's two
    # critical-difference diagrams (one per task); the Probabilities tab's two diagrams are
    # drawn only once that tab is opened
    assert charts_before == 6
    assert "Reliability on CPPD" not in texts(at, "subheader")

    at.selectbox(key="compare_metric").set_value("qwk").run()
    at.selectbox(key="compare_cm_task").set_value("KL").run()
    at.radio(key="compare_cm_how").set_value("mean").run()
    at.radio(key="compare_cm_scale").set_value("share").run()
    at.selectbox(key="compare_stats_metric").set_value("mae").run()
    at.selectbox(key="compare_stats_task").set_value("KL").run()
    at.selectbox(key="compare_correction").set_value("bonferroni").run()
    assert not at.exception
    subheaders = texts(at, "subheader")
    assert "MAE on KL" in subheaders and "MAE over CPPD and KL" in subheaders
    markdown = texts(at, "markdown")
    assert "Two-way ANOVA" in markdown and "Tukey HSD" in markdown
    # Three seeds: Shapiro runs, but no Wilcoxon p-value could reach 0.05, so none is shown.
    assert "Shapiro–Wilk" in markdown
    assert "It needs at least 6 seeds per method" in texts(at, "info")


def test_compare_page_with_one_seed_says_tests_need_more(tmp_path, monkeypatch):
    make_store(tmp_path, seeds=(0,))
    at = run_page(tmp_path, monkeypatch)
    info = texts(at, "info")
    assert "Shapiro–Wilk needs at least 3 seeds" in info
    assert "Wilcoxon needs at least 2 seeds" in info
    assert not at.table[0].value["AMAE ↓"].str.contains("±").any()  # the value alone
    assert tables.ONE_SEED_NOTE in texts(at, "caption")


def test_compare_page_with_one_method_says_there_is_nothing_to_compare(tmp_path, monkeypatch):
    make_store(tmp_path, methods=("beta",))
    at = run_page(tmp_path, monkeypatch)
    info = texts(at, "info")
    assert "Only one method is selected" in info
    assert "nothing to set it against" in info
    assert "Kruskal–Wallis needs at least 2 methods" in info


def test_compare_page_with_kl_only_shows_kl_and_explains_the_anova(tmp_path, monkeypatch):
    make_store(tmp_path, tasks=("KL",))
    at = run_page(tmp_path, monkeypatch)
    assert set(at.table[0].value["Task"]) == {"KL"}
    assert "Two-way ANOVA needs at least 2 methods and 2 tasks" in texts(at, "info")


def test_compare_page_running_study_shows_finished_seeds_as_partial(tmp_path, monkeypatch):
    make_store(tmp_path, seeds=(0, 1, 2, 3), finished_seeds=2)
    at = run_page(tmp_path, monkeypatch)
    warning = texts(at, "warning")
    assert "still running" in warning and "2 of 4 seeds finished (seeds 0, 1)" in warning
    assert "partial" in warning
    assert set(at.table[0].value["Seeds"]) == {"2"}  # the half-done seed 2 is left out


def test_a_study_whose_job_just_finished_no_longer_reads_as_running(tmp_path, monkeypatch):
    # The study list is cached for seconds; a job that ends must not leave "still running"
    # beside every seed finished on the next click (seen on a Compare opened after Jobs).
    make_store(tmp_path, seeds=(0, 1), finished_seeds=2)
    at = run_page(tmp_path, monkeypatch)
    assert "still running" in texts(at, "warning")
    store = tmp_path / "softgrade.duckdb"
    (job_id,) = store_jobs.list_jobs(path=store)["job_id"]
    store_jobs.finish_job(job_id, JobStatus.SUCCEEDED, path=store)
    cached_jobs.clear()  # the jobs' 2 s have passed; the study list's 10 s have not
    at.run()
    assert not at.exception
    assert "still running" not in texts(at, "warning")


def test_compare_page_without_results_says_how_to_get_some(tmp_path, monkeypatch):
    at = run_page(tmp_path, monkeypatch)
    assert "No study has finished runs yet" in texts(at, "info")


def test_compare_page_two_studies_show_a_shared_method_once_per_study(tmp_path, monkeypatch):
    first = make_store(tmp_path, name="first", tasks=("KL",))
    second = make_store(tmp_path, name="second", tasks=("KL",), methods=("beta", "triangular"))
    at = run_page(tmp_path, monkeypatch)
    assert at.multiselect(key="compare_studies").value == [second]  # the newest
    at.multiselect(key="compare_studies").set_value([first, second]).run()
    assert not at.exception
    methods = list(at.table[0].value["Method"])
    assert methods == ["Nominal", "Beta · first", "Beta · second", "Triangular", "Average"]


def test_a_study_requested_by_the_jobs_page_is_picked_once(tmp_path, monkeypatch):
    older = make_store(tmp_path, name="older")
    newer = make_store(tmp_path, name="newer")
    monkeypatch.setenv("SOFTGRADE_HOME", str(tmp_path))
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT_S)
    at.session_state["requested_study"] = (older, 1.0)
    at.run()
    assert not at.exception and not at.warning
    assert at.multiselect(key="compare_studies").value == [older]

    # The request is applied once: the user's next choice stands.
    at.multiselect(key="compare_studies").set_value([newer]).run()
    at.run()
    assert at.multiselect(key="compare_studies").value == [newer]


def test_a_study_that_finished_after_the_list_was_cached_shows_at_once(
    finished_study, monkeypatch, tmp_path
):
    import shutil

    import duckdb

    shutil.copy(finished_study.store, tmp_path / "softgrade.duckdb")
    store = tmp_path / "softgrade.duckdb"
    with duckdb.connect(str(store)) as con:  # as while its first seed was still running
        selected = [r[0] for r in con.execute("SELECT run_id FROM runs WHERE selected").fetchall()]
        con.execute("UPDATE runs SET selected = false")
    at = run_page(tmp_path, monkeypatch)
    assert "No study has finished runs yet" in texts(at, "info")
    with duckdb.connect(str(store)) as con:  # its selected runs are back: the study is done
        con.execute(
            "UPDATE runs SET selected = true WHERE run_id IN (SELECT unnest(?))", [selected]
        )
    assert selected

    at = run_page(tmp_path, monkeypatch)  # within the study list's cache time

    assert at.multiselect(key="compare_studies").value == [finished_study.study_id]
    assert "No study has finished runs yet" not in texts(at, "info")


def test_compare_page_offers_the_studies_report_as_one_html_download(tmp_path, monkeypatch):
    make_store(tmp_path)
    at = run_page(tmp_path, monkeypatch)
    buttons = [b for b in at.get("download_button") if b.proto.label == "Report"]
    assert len(buttons) == 1
    assert buttons[0].proto.id.endswith("compare_report")
