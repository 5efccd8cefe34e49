"""The Search & learning curves page on a tiny stored study, and its table helpers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from engine.analysis import explorer
from engine.methods import search_grid
from engine.vocab import run_id
from pages.present import explorer_views as views
from store import jobs as store_jobs
from store import runs as store_runs
from store.db import init_schema

PAGE = "../../pages/explorer.py"
TIMEOUT_S = 120  # the first run imports torch and altair
CONFIGS = {"nominal": 3, "beta": 4}  # configurations per search
EPOCHS = 6


def make_study(
    home: Path,
    *,
    name: str = "tiny",
    seeds: tuple[int, ...] = (0, 1),
    epochs: bool = True,
    running: bool = False,
) -> tuple[str, str]:
    """A KL study whose searches tried several configurations, each run with its epoch rows.

    Validation AMAE differs per configuration and seed, so each search has one clear winner
    (selected by `store.runs.select_best_runs`, as the worker does). ``running`` leaves the
    job running. Returns the study id and job id.
    """
    path = home / "softgrade.duckdb"
    if not path.exists():
        init_schema(path)
    spec = {"name": name, "tasks": ["KL"], "methods": list(CONFIGS), "seeds": list(seeds)}
    job_id = store_jobs.enqueue_job({**spec, "budget": 4}, path=path)
    job = store_jobs.claim_next_job("test-worker", path=path)
    assert job is not None and job.job_id == job_id
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 5, 20)
    predictions = pd.DataFrame(
        {
            "image_id": [f"im{i:02d}" for i in range(20)],
            "split": ["val", "test"] * 10,
            "y_true": truth,
            "y_pred": truth,
            "probs": [np.full(5, 0.2, dtype=np.float32)] * 20,
        }
    )
    for seed in seeds:
        for method, n_configs in CONFIGS.items():
            for index, params in enumerate(search_grid(method)[:n_configs]):
                val_amae = round(0.3 + 0.1 * ((index + seed) % n_configs), 3)
                best = 2 + index % 3
                history = pd.DataFrame(
                    {
                        "epoch": np.arange(1, EPOCHS + 1),
                        "train_loss": np.linspace(1.5, 0.5, EPOCHS),
                        "val_loss": np.linspace(1.6, 0.9, EPOCHS),
                        "val_amae": np.full(EPOCHS, val_amae + 0.05),
                        "duration_s": np.full(EPOCHS, 0.5),
                    }
                )
                history.loc[history["epoch"] == best, "val_amae"] = val_amae
                store_runs.record_run(
                    store_runs.RunRecord(
                        run_id=run_id(job.study_id, "KL", method, seed, index),
                        study_id=job.study_id,
                        job_id=job_id,
                        task="KL",
                        method=method,
                        seed=seed,
                        config_index=index,
                        config=params.as_dict(),
                        best_epoch=best,
                        epochs_run=EPOCHS,
                        val_amae=val_amae,
                        device="cpu",
                        duration_s=3.0,
                        weights_init="random",
                        checkpoint_path=None,
                        predictions=predictions,
                        epochs=history if epochs else pd.DataFrame(),
                    ),
                    path=path,
                )
    store_runs.select_best_runs(job.study_id, path=path)
    if not running:
        store_jobs.finish_job(job_id, store_jobs.JobStatus.SUCCEEDED, path=path)
    return job.study_id, job_id


def run_page(home: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    """Render the page against the store in ``home``; fail on any exception."""
    monkeypatch.setenv("SOFTGRADE_HOME", str(home))
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT_S).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest, kind: str) -> str:
    """Every element of one kind (info, caption, markdown, ...) as one string."""
    return "\n".join(str(element.value) for element in at.get(kind))


def charts(at: AppTest) -> list:
    """Every chart on the page."""
    return at.get("vega_lite_chart") or at.get("arrow_vega_lite_chart")


def chart_rows(chart) -> pd.DataFrame:
    """Every data row of a chart (Streamlit sends each dataset as Arrow bytes)."""
    frames = [pa.ipc.open_stream(d.data.data).read_all().to_pandas() for d in chart.proto.datasets]
    return pd.concat(frames, ignore_index=True)


def test_explorer_shows_every_configuration_with_the_selected_one_marked(tmp_path, monkeypatch):
    study_id, _ = make_study(tmp_path)
    at = run_page(tmp_path, monkeypatch)
    assert at.title[0].value == "Search & learning curves"
    assert at.selectbox(key="explorer_study").value == study_id
    assert at.selectbox(key="explorer_task").value == "KL"
    assert at.selectbox(key="explorer_method").value == "nominal"
    assert at.selectbox(key="explorer_seed").value == 0

    table = at.dataframe[0].value
    assert list(table.columns) == [
        *["Configuration", "Learning rate", "Validation AMAE", "Rank", "Epochs run"],
        *["Best epoch", "Training time (s)", "Selected"],
    ]
    assert len(table) == CONFIGS["nominal"]
    # Seed 0: configuration 0 has the lowest validation AMAE, so it is selected and ranked 1.
    winner = table[table["Selected"] == views.SELECTED_MARK]
    assert list(winner["Configuration"]) == [0] and list(winner["Rank"]) == [1]
    assert "Configuration **0**" in texts(at, "markdown")

    at.selectbox(key="explorer_method").set_value("beta").run()
    at.selectbox(key="explorer_seed").set_value(1).run()
    assert not at.exception
    table = at.dataframe[0].value
    assert len(table) == CONFIGS["beta"] and "η" in table.columns
    # Seed 1: (index + 1) % 4 is lowest at configuration 3.
    assert list(table.loc[table["Selected"] == views.SELECTED_MARK, "Configuration"]) == [3]


def test_explorer_shows_each_hyper_parameter_across_seeds(tmp_path, monkeypatch):
    make_study(tmp_path)
    at = run_page(tmp_path, monkeypatch)
    assert [tab.label for tab in at.tabs] == ["Learning rate", "η"]
    assert "Black tick" in texts(at, "markdown") or "black tick" in texts(at, "markdown")
    summaries = [d.value for d in at.dataframe[1:]]
    lr = summaries[0]
    assert set(lr["Method"]) == {"Nominal", "Beta"}
    assert lr["Runs"].sum() == 2 * sum(CONFIGS.values())  # every run of both seeds
    assert set(summaries[1]["Method"]) == {"Beta"}  # nominal has no η


def test_explorer_draws_the_selected_runs_curves_per_method_or_per_seed(tmp_path, monkeypatch):
    study_id, _ = make_study(tmp_path)
    at = run_page(tmp_path, monkeypatch)
    assert len(charts(at)) == 4  # configuration strip, two parameter strips, learning curves
    curves = charts(at)[-1]
    assert json.loads(curves.proto.spec)["title"]["text"] == "KL: selected runs, seed 0"
    lines = set(chart_rows(curves)["line"].dropna())
    assert lines == {run_id(study_id, "KL", "nominal", 0, 0), run_id(study_id, "KL", "beta", 0, 0)}

    at.radio(key="explorer_overlay").set_value("seed").run()
    assert not at.exception
    curves = charts(at)[-1]
    title = json.loads(curves.proto.spec)["title"]["text"]
    assert title == "KL: selected runs, every seed of Nominal"
    lines = set(chart_rows(curves)["line"].dropna())
    assert lines == {
        run_id(study_id, "KL", "nominal", 0, 0),
        run_id(study_id, "KL", "nominal", 1, 2),
    }
    assert "best epoch" in texts(at, "caption")


def test_explorer_with_an_empty_store_says_how_to_get_results(tmp_path, monkeypatch):
    init_schema(tmp_path / "softgrade.duckdb")
    at = run_page(tmp_path, monkeypatch)
    assert "No study has finished runs yet" in texts(at, "info")
    assert not at.dataframe


def test_explorer_without_epoch_rows_shows_the_search_and_says_why_no_curves(tmp_path, monkeypatch):
    make_study(tmp_path, epochs=False)
    at = run_page(tmp_path, monkeypatch)
    assert len(at.dataframe[0].value) == CONFIGS["nominal"]
    assert "No per-epoch rows are stored" in texts(at, "info")


def test_explorer_names_a_running_study_with_no_finished_run(tmp_path, monkeypatch):
    path = tmp_path / "softgrade.duckdb"
    init_schema(path)
    store_jobs.enqueue_job({"name": "just-started"}, path=path)
    store_jobs.claim_next_job("test-worker", path=path)
    at = run_page(tmp_path, monkeypatch)
    info = texts(at, "info")
    assert "No run of just-started has finished yet" in info
    assert "No study has finished runs yet" in info


def test_explorer_follows_a_running_study_with_its_run_in_training(tmp_path, monkeypatch):
    study_id, job_id = make_study(tmp_path, running=True)
    training = run_id(study_id, "KL", "beta", 0, 4)  # not stored yet
    store_jobs.update_progress(
        job_id,
        worker_id="test-worker",
        current_run=training,
        current_epoch=3,
        latest_val_amae=0.42,
        path=tmp_path / "softgrade.duckdb",
    )
    at = run_page(tmp_path, monkeypatch)
    assert "still running" in texts(at, "info") and "grow run by run" in texts(at, "info")
    assert "Training now: KL · Beta · seed 0 · configuration 4, epoch 3" in texts(at, "caption")
    curves = charts(at)[-1]
    rows = chart_rows(curves)
    live = rows[rows["run_id"] == training]
    assert live[["epoch", "value"]].values.tolist() == [[3, 0.42]]
    assert list(live["series"]) == ["val_amae"] and not live["best"].any()
    assert "red diamond" in json.loads(curves.proto.spec)["title"]["subtitle"]


def test_a_study_requested_by_the_jobs_page_is_picked(tmp_path, monkeypatch):
    older, _ = make_study(tmp_path, name="older")
    make_study(tmp_path, name="newer")
    monkeypatch.setenv("SOFTGRADE_HOME", str(tmp_path))
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT_S)
    at.session_state["requested_study"] = (older, 1.0)
    at.run()
    assert not at.exception
    assert at.selectbox(key="explorer_study").value == older


def test_live_point_is_left_out_once_the_run_is_stored_or_elsewhere():
    job = pd.Series({"current_run": "st-KL-beta-s1-c2", "current_epoch": 5, "latest_val_amae": 0.3})
    point, sentence = views.live_point(job, set(), task="KL", method=None, seed=1)
    assert len(point) == 1 and sentence.startswith("Training now: KL · Beta · seed 1")
    point, sentence = views.live_point(job, set(), task="KL", method=None, seed=0)
    assert point.empty and sentence is not None  # another seed's run: named, not drawn
    point, sentence = views.live_point(job, {"st-KL-beta-s1-c2"}, task="KL", method=None, seed=1)
    assert point.empty and sentence is None  # finished: its stored curve says the rest
    assert views.live_point(None, set(), task="KL", method=None, seed=1)[1] is None


def test_search_sentence_says_a_running_search_has_a_best_so_far():
    search = explorer.search_table(
        pd.DataFrame(
            {
                "run_id": ["a", "b"],
                "study_id": "s",
                "task": "KL",
                "method": "beta",
                "seed": 0,
                "config_index": [0, 1],
                "config": ['{"lr": 0.01, "eta": 1.0}', '{"lr": 0.001, "eta": 0.8}'],
                "selected": [False, True],
                "best_epoch": [4, 7],
                "epochs_run": [10, 12],
                "val_amae": [0.5, 0.4],
                "duration_s": 1.0,
            }
        )
    )
    text = views.search_sentence(search, planned=6, running=True)
    assert "tried **2** of the 6 planned configurations" in text
    assert "Configuration **1** (lr=0.001, eta=0.8)" in text and "epoch 7" in text
    assert text.endswith("best so far.")
    assert "planned" not in views.search_sentence(search, planned=2)


def test_a_run_the_pruner_stopped_is_named_so_in_the_search_table_and_the_note():
    search = explorer.search_table(
        pd.DataFrame(
            {
                "run_id": ["a", "b", "c"],
                "study_id": "s",
                "task": "KL",
                "method": "beta",
                "seed": 0,
                "config_index": [0, 1, 2],
                "config": ['{"lr": 0.01, "eta": 1.0}', '{"lr": 0.001, "eta": 0.8}', "{}"],
                "selected": [False, True, False],
                "best_epoch": [4, 7, 2],
                "epochs_run": [10, 12, 3],
                "val_amae": [0.5, 0.4, 0.3],
                "duration_s": 1.0,
                "pruned": [False, False, True],
            }
        )
    )
    table = views.configuration_table(search).set_index("Configuration")
    assert table.loc[1, "Selected"] == views.SELECTED_MARK and table.loc[1, "Rank"] == 1
    assert table.loc[2, "Selected"] == "stopped by the pruner after epoch 3"
    assert table.loc[2, "Rank"] == 3 and table.loc[0, "Selected"] == ""
    pruned_spec = {"search": {"pruner": "asha"}, "max_epochs": 12}
    assert "never selected" in views.rank_note(pruned_spec)
    assert "pruner" not in views.rank_note({"max_epochs": 12})


def test_planned_configs_reads_the_budget_from_the_stored_spec():
    assert views.planned_configs('{"budget": 15}', "nominal") == 3  # its whole grid
    assert views.planned_configs({"budget": 4}, "exponential") == 4
    assert views.planned_configs("{}", "beta") is None
    assert views.planned_configs("not json", "beta") is None


def test_a_parameter_reading_takes_labels_and_meanings_from_the_registry():
    from engine.methods import get_method

    effects = pd.DataFrame({"method": ["triangular", "triangular"], "param": "alpha2"})
    text = views.parameter_reading("alpha2", effects)
    (alpha2,) = [h for h in get_method("triangular").hyperparameters if h.name == "alpha2"]
    assert text.startswith(f"**{alpha2.label}**: {alpha2.meaning.rstrip('.')}.")


def test_a_parameter_shared_by_name_is_explained_per_method_when_meanings_differ():
    from engine.methods import get_method

    methods = [m for m in ("geometric", "cdw_ce") if "alpha" in get_method(m).parameter_names]
    meanings = {
        m: next(h.meaning for h in get_method(m).hyperparameters if h.name == "alpha")
        for m in methods
    }
    text = views.param_meaning("alpha", methods)
    for method, meaning in meanings.items():
        assert meaning.rstrip(".") in text
        if len(set(meanings.values())) > 1:
            assert f"for {get_method(method).label}, " in text
    assert views.param_meaning("alpha", ["imported_loss"])  # unknown method: no crash


def test_the_per_value_table_counts_stopped_runs_only_where_the_pruner_stopped_some():
    summary = pd.DataFrame(
        {
            "task": "KL",
            "method": "beta",
            "param": "eta",
            "value": [0.8, 1.0],
            "n_runs": [4, 2],
            "n_seeds": [2, 2],
            "n_pruned": [0, 2],
            "val_amae_mean": [0.41, np.nan],
            "val_amae_median": [0.40, np.nan],
            "val_amae_std": [0.02, np.nan],
            "n_selected": [2, 0],
            "selected_share": [1.0, 0.0],
        }
    )
    table = views.summary_table(summary, "eta")
    assert list(table["Stopped"]) == [0, 2]
    assert list(table["Mean val AMAE"]) == ["0.4100", "—"]
    assert views.summary_note(summary) == views.PRUNED_SUMMARY_NOTE
    full = summary.assign(n_pruned=0)
    assert "Stopped" not in views.summary_table(full, "eta")
    assert views.summary_note(full) == views.SUMMARY_NOTE


def test_a_parameter_reading_says_what_a_cross_is_on_a_pruned_search():
    effects = pd.DataFrame({"method": ["beta", "beta"], "param": "eta", "pruned": [False, True]})
    assert "a cross is a run the pruner stopped" in views.parameter_reading("eta", effects)
    assert "cross" not in views.parameter_reading("eta", effects.assign(pruned=False))


def test_search_sentence_shows_a_stored_configuration_as_text_and_counts_epochs():
    """A configuration's text comes from the store (an import's too): a link in it is text;
    one epoch is "1 epoch" (issue 39's walk)."""
    from tests.helpers.markup import live_markup

    search = explorer.search_table(
        pd.DataFrame(
            {
                "run_id": ["a"], "study_id": "s", "task": "KL", "method": "beta", "seed": 0,
                "config_index": [0], "config": ['{"[x](http://evil.example)": 1}'],
                "selected": [True], "best_epoch": [1], "epochs_run": [1], "val_amae": [0.5],
                "duration_s": 1.0,
            }
        )
    )  # fmt: skip
    text = views.search_sentence(search)
    assert "trained 1 epoch and" in text
    assert not live_markup(text, emphasis=False)
