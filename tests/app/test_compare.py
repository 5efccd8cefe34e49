"""The Compare page with real stored predictions (a tiny trained study) and with bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from engine.analysis import compare
from store import jobs as store_jobs
from store import runs as store_runs
from store.db import init_schema

PAGE = "../../pages/compare.py"
TIMEOUT_S = 120  # the first run imports torch, scipy and statsmodels


def make_store(
    home: Path,
    *,
    name: str = "synthetic",
    tasks: tuple[str, ...] = ("KL", "CPPD"),
    methods: tuple[str, ...] = ("nominal", "beta"),
    seeds: tuple[int, ...] = (0, 1, 2),
    finished_seeds: int | None = None,
) -> str:
    """A store of synthetic selected runs (one configuration per search); returns the study id.

    ``finished_seeds`` leaves the job running with only that many seeds stored (the next
    seed half stored), as a study in progress looks.
    """
    path = home / "softgrade.duckdb"
    if not path.exists():
        init_schema(path)
    spec = {"name": name, "tasks": list(tasks), "methods": list(methods), "seeds": list(seeds)}
    spec["budget"] = 1
    job_id = store_jobs.enqueue_job(spec, path=path)
    job = store_jobs.claim_next_job("test-worker", path=path)
    assert job is not None and job.job_id == job_id
    rng = np.random.default_rng(7)
    stored_seeds = seeds if finished_seeds is None else seeds[: finished_seeds + 1]
    for position, seed in enumerate(stored_seeds):
        grades = np.random.default_rng(seed)
        kl = grades.integers(0, 5, 30)
        cppd = np.concatenate([np.minimum(kl, 3), grades.integers(0, 4, 10)])
        images = [f"j{i:02d}" for i in range(30)] + [f"c{i:02d}" for i in range(10)]
        split = np.where(np.arange(40) % 3 == 0, "val", "test")
        for task in tasks:
            for m_index, method in enumerate(methods):
                if finished_seeds is not None and position == finished_seeds and m_index > 0:
                    break  # the seed in progress: only its first search is done
                truth, n_classes = (kl, 5) if task == "KL" else (cppd, 4)
                step = rng.integers(-1, 2, truth.size) * (
                    rng.random(truth.size) < 0.3 + m_index / 10
                )
                predictions = pd.DataFrame(
                    {
                        "image_id": images[: truth.size],
                        "split": split[: truth.size],
                        "y_true": truth,
                        "y_pred": np.clip(truth + step, 0, n_classes - 1),
                        "probs": [np.full(n_classes, 1 / n_classes, dtype=np.float32)] * truth.size,
                    }
                )
                store_runs.record_run(
                    store_runs.RunRecord(
                        run_id=f"{job.study_id}-{task}-{method}-s{seed}-c0",
                        study_id=job.study_id,
                        job_id=job_id,
                        task=task,
                        method=method,
                        seed=seed,
                        config_index=0,
                        config={"lr": 0.001},
                        best_epoch=1,
                        epochs_run=1,
                        val_amae=0.5,
                        device="cpu",
                        duration_s=1.0,
                        weights_init="random",
                        checkpoint_path=None,
                        predictions=predictions,
                    ),
                    path=path,
                )
    store_runs.select_best_runs(job.study_id, path=path)
    if finished_seeds is None:
        store_jobs.finish_job(job_id, store_jobs.JobStatus.SUCCEEDED, path=path)
    return job.study_id


def run_page(
    home: Path, monkeypatch: pytest.MonkeyPatch, page: str = PAGE, *, tab: str | None = None
) -> AppTest:
    """Render a page against the store in ``home`` (on Compare, with ``tab`` open); fail on
    any exception."""
    monkeypatch.setenv("SOFTGRADE_HOME", str(home))
    at = AppTest.from_file(page, default_timeout=TIMEOUT_S)
    if tab is not None:
        at.session_state["compare_tab"] = tab  # as a click on the tab does
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest, kind: str) -> str:
    """Every element of one kind (info, warning, caption, markdown, ...) as one string."""
    return "\n".join(str(element.value) for element in at.get(kind))


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
    assert len(downloads) == 5  # table CSV + LaTeX, per-run CSV, statistics CSV + LaTeX
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
    # two violins (one per task) and two confusion matrices; the Probabilities tab's two
    # diagrams are drawn only once that tab is opened
    assert charts_before == 4
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
    assert at.table[0].value["AMAE ↓"].str.endswith("± –").all()


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
