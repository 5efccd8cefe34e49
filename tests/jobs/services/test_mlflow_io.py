"""Results in from and out to MLflow (the ``mlflow`` extra): an experiment written by MLflow's
own client into a local tracking store becomes a study, a study round-trips SoftGrade →
MLflow → SoftGrade with the same per-seed metrics, a bad mapping gets one line, and without
MLflow installed the command names the extra."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.analysis.metrics import METRICS
from jobs.cli.main import main
from jobs.services import study_analysis
from store.db import connect, default_store_path, init_schema
from tests.helpers.synthetic_study import write_synthetic_study

ROOT = Path(__file__).resolve().parents[3]
ERRORS = {"nominal": 0.60, "corn": 0.50}


@pytest.fixture
def mlflow(monkeypatch):
    """MLflow, with its local file store allowed for the test's own writes (SoftGrade allows
    it itself while it reads or writes one)."""
    module = pytest.importorskip(
        "mlflow", reason="the optional mlflow extra is not installed (requirements-dev has it)"
    )
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    return module


def tracking_uri(tmp_path: Path) -> str:
    return (tmp_path / "mlruns").as_uri()


def log_experiment(mlflow, uri: str, *, seeds: int = 4, extra: bool = True) -> dict:
    """Another project's experiment, in its own names: params dataset/model/random_state,
    metrics test_amae/test_qwk (and a validation loss SoftGrade must not read). Returns
    (task, method, seed) -> the test AMAE logged."""
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("knee models")
    rng = np.random.default_rng(3)
    logged = {}
    for task in ("KL", "CPPD"):
        for seed in range(seeds):
            for method, error in ERRORS.items():
                run = client.create_run(experiment).info.run_id
                params = {"dataset": task, "model": method, "random_state": seed}
                for key, value in (params | {"n_fit": 700, "n_held_out": 300}).items():
                    client.log_param(run, key, value)
                amae = round(error + rng.normal(0, 0.02), 4)
                client.log_metric(run, "test_amae", amae)
                client.log_metric(run, "test_qwk", 1 - amae)
                client.log_metric(run, "val_loss", 0.3)
                client.set_terminated(run)
                logged[(task, method, seed)] = amae
    if extra:  # a sweep's parent run (no keys) and a run that failed: both left out
        client.set_terminated(client.create_run(experiment).info.run_id)
        failed = client.create_run(experiment).info.run_id
        client.log_param(failed, "dataset", "KL")
        client.set_terminated(failed, status="FAILED")
    return logged


MAPPING = """\
task: dataset
method: model
seed: random_state
n_train: n_fit
n_test: n_held_out
metrics:
  amae: test_amae
  qwk: test_qwk
"""


def stored_studies() -> int:
    with connect(default_store_path(), read_only=True) as con:
        return con.execute("SELECT count(*) FROM studies").fetchone()[0]


def test_an_experiment_logged_by_mlflow_becomes_a_study_by_a_mapping_file(
    home, tmp_path, mlflow, capsys
):
    uri = tracking_uri(tmp_path)
    logged = log_experiment(mlflow, uri)
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(MAPPING)
    args = ["import-results", "--mlflow-uri", uri, "--experiment", "knee models"]
    assert main([*args, "--mapping", str(mapping)]) == 0
    said = capsys.readouterr().out
    study = said.split("(", 1)[1].split(")", 1)[0]
    assert "read 16 MLflow runs (amae from 'test_amae', qwk from 'test_qwk')" in said
    assert "left out 1 without task, method or seed and 1 not finished" in said
    scores = study_analysis.per_run(study, path=default_store_path())
    read = {(r.task, r.method, r.seed): r.amae for r in scores.itertuples()}
    assert read == pytest.approx(logged)
    assert scores["qwk"].to_numpy() == pytest.approx(1 - scores["amae"].to_numpy())
    table = study_analysis.paired_table(
        study, metrics=("amae",), n_boot=0, path=default_store_path()
    )
    assert len(table) == 2 and table["ci_low"].notna().all()  # the sizes came through
    assert table["test_train_ratio"].to_numpy() == pytest.approx(300 / 700)
    assert main(["stats", study, "--metric", "amae", "--bootstrap", "0"]) == 0
    assert "corn" in capsys.readouterr().out


def test_map_items_override_the_defaults_and_a_filter_chooses_runs(home, tmp_path, mlflow, capsys):
    uri = tracking_uri(tmp_path)
    log_experiment(mlflow, uri, extra=False)
    maps = ["task=dataset", "method=model", "seed=params.random_state", "AMAE=metrics.test_amae"]
    args = ["import-results", "--mlflow-uri", uri, "--experiment", "knee models", "--name", "kl"]
    args += [item for m in maps for item in ("--map", m)]
    assert main([*args, "--filter", "params.dataset = 'KL'"]) == 0
    said = capsys.readouterr().out
    assert "read 8 MLflow runs (amae from 'test_amae')" in said and "left out" not in said
    study = said.split("(", 1)[1].split(")", 1)[0]
    scores = study_analysis.per_run(study, path=default_store_path())
    assert set(scores["task"]) == {"KL"} and scores["qwk"].isna().all()
    assert study_analysis.unsized_tasks(study, path=default_store_path()) == ["KL"]


def test_softgrade_to_mlflow_to_softgrade_gives_the_same_per_seed_metrics(
    home, tmp_path, mlflow, capsys
):
    store = default_store_path()
    init_schema(store)
    study = write_synthetic_study(store, n_seeds=3, n_patients=30, configs={
        "nominal": 2, "binomial": 2, "beta": 1})  # fmt: skip
    uri = tracking_uri(tmp_path)
    assert main(["export", study, "--mlflow-uri", uri, "--experiment", "out"]) == 0
    said = capsys.readouterr().out
    assert "logged 18 runs" in said and study in said
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("out").experiment_id])
    assert len(runs) == 18 and {r.data.tags["softgrade.study_id"] for r in runs} == {study}
    assert {r.data.params["task"] for r in runs} == {"KL", "CPPD"}
    assert all(r.info.status == "FINISHED" and "config.lr" in r.data.params for r in runs)
    assert main(["export", study, "--mlflow-uri", uri, "--experiment", "out"]) == 2
    assert "already holds runs of study" in capsys.readouterr().err  # not paired twice
    assert main(["import-results", "--mlflow-uri", uri, "--experiment", "out"]) == 0
    back = capsys.readouterr().out.split("(", 1)[1].split(")", 1)[0]
    keys = ["task", "method", "seed"]
    before = study_analysis.per_run(study, path=store).sort_values(keys).reset_index(drop=True)
    after = study_analysis.per_run(back, path=store).sort_values(keys).reset_index(drop=True)
    assert len(before) == 18
    pd.testing.assert_frame_equal(before[keys], after[keys])
    for metric in METRICS:
        assert after[metric].to_numpy() == pytest.approx(before[metric].to_numpy(), nan_ok=True)
    paired_before = study_analysis.paired_table(study, n_boot=0, path=store)
    paired_after = study_analysis.paired_table(back, n_boot=0, path=store)
    for column in ("mean_diff", "p_corrected", "p_wilcoxon", "test_train_ratio"):
        assert paired_after[column].to_numpy() == pytest.approx(
            paired_before[column].to_numpy(), nan_ok=True
        )
    probability = study_analysis.probability_paired_table(back, path=store)
    assert len(probability)  # the probability metrics went out and came back per seed


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--map", "model=x"], "--map: 'model' is not a mapping key; the keys are task"),
        (["--map", "task"], "--map 'task': write KEY=SOURCE"),
        ([], "no MLflow run has the param 'task' that task is mapped to; their params: "
             "dataset, model, n_fit, n_held_out, random_state"),
        (["--map", "task=dataset", "--map", "method=model", "--map", "seed=random_state",
          "--map", "amae=test_mae"],
         "no MLflow run has the metric key 'test_mae' that amae is mapped to"),
        (["--map", "task=model", "--map", "method=dataset", "--map", "seed=random_state",
          "--map", "amae=test_amae"],
         "param 'model' (mapped to task): 'nominal': the task is one of KL, CPPD"),
        (["--map", "task=dataset", "--map", "method=model", "--map", "seed=random_state",
          "--map", "amae=test_amae", "--map", "n_train=n_fit"],
         "MLflow runs give n_train (param 'n_fit') but none gives n_test (param 'n_test')"),
    ],
)  # fmt: skip
def test_a_bad_mapping_gets_one_clear_message_and_stores_nothing(
    home, tmp_path, mlflow, capsys, extra, said
):
    uri = tracking_uri(tmp_path)
    log_experiment(mlflow, uri, extra=False)
    init_schema(default_store_path())
    args = ["import-results", "--mlflow-uri", uri, "--experiment", "knee models", *extra]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and "Traceback" not in err, err
    assert stored_studies() == 0


def test_a_bad_mapping_file_gets_one_clear_message(home, tmp_path, mlflow, capsys):
    uri = tracking_uri(tmp_path)
    log_experiment(mlflow, uri, extra=False)
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text("task: dataset\nmetrics:\n  f1: test_f1\n")
    args = ["import-results", "--mlflow-uri", uri, "--experiment", "knee models"]
    assert main([*args, "--mapping", str(mapping)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "metrics: 'f1' is not a SoftGrade metric; allowed: qwk" in err


def test_two_runs_of_one_seed_are_refused_naming_both_runs(home, tmp_path, mlflow, capsys):
    uri = tracking_uri(tmp_path)
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("twice")
    ids = []
    for _ in range(2):
        run = client.create_run(experiment).info.run_id
        for key, value in {"task": "KL", "method": "corn", "seed": 0}.items():
            client.log_param(run, key, value)
        client.log_metric(run, "AMAE", 0.5)
        client.set_terminated(run)
        ids.append(run)
    assert main(["import-results", "--mlflow-uri", uri, "--experiment", "twice"]) == 2
    err = capsys.readouterr().err
    assert f"MLflow run {ids[1]} repeats MLflow run {ids[0]}" in err, err


@pytest.mark.slow  # starts a process (tests/helpers/tier_guard.py)
def test_without_mlflow_the_command_names_the_extra_to_install(tmp_path):
    """A fresh interpreter in which ``import mlflow`` fails, as where the extra is absent."""
    code = (
        "import sys; sys.modules['mlflow'] = None\n"
        "from jobs.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = {**os.environ, "SOFTGRADE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("SOFTGRADE_DB", None)
    for args in (
        ["import-results", "--mlflow-uri", "file:///x", "--experiment", "e"],
        ["export", "study-x", "--mlflow-uri", "file:///x"],
    ):
        if args[0] == "export":  # the store must exist for export to reach MLflow
            init_schema(tmp_path / "softgrade.duckdb")
            write_synthetic_study(tmp_path / "softgrade.duckdb", n_seeds=1, n_patients=10)
            with connect(tmp_path / "softgrade.duckdb", read_only=True) as con:
                args[1] = con.execute("SELECT study_id FROM studies").fetchone()[0]
        done = subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
            cwd=tmp_path, timeout=120,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "pip install 'softgrade[mlflow]'" in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
