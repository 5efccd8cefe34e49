"""Methods end to end through the real worker: a lab's method added in one new file outside
the checkout is trained, stored and compared; a study of every registered method runs from a
YAML file and every method reaches `jobs stats` and `jobs report`."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from engine.methods import PLUGIN_VARIABLE, method_names
from pages.present.tables import method_title
from store import runs as store_runs
from store.db import init_schema
from tests.helpers.method_plugins import (
    LAB_METHOD,
    LAB_METHOD_SOURCE,
    write_method_package,
)
from tests.helpers.studies import run_jobs_cli, tiny_study
from tests.helpers.workers import start_worker, wait_while_the_job_progresses

# Each test trains a study in worker processes, on a home holding the tiny phantom rendered.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("phantom_home")]


def _study_file(folder: Path, **overrides: object) -> Path:
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump(tiny_study(**overrides), sort_keys=False))
    return path


def _stats_methods(home: Path, study_id: str) -> set[str]:
    """The methods `jobs stats` compares (both sides of its pairs)."""
    out = home / "paired.csv"
    done = run_jobs_cli(home, "stats", study_id, "--bootstrap", "0", "-o", str(out))
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(out, comment="#")
    return set(table["method_a"]) | set(table["method_b"])


def _report(home: Path, study_id: str) -> str:
    """The HTML of `jobs report`; a method in it is named as the pages name it
    (`method_title`)."""
    out = home / "report.html"
    done = run_jobs_cli(home, "report", study_id, "-o", str(out), timeout=600)
    assert done.returncode == 0, done.stderr
    return out.read_text()


def test_a_method_added_in_one_file_outside_the_checkout_is_trained_stored_and_compared(
    home: Path, monkeypatch: pytest.MonkeyPatch
):
    plugins = home / "lab-methods"
    write_method_package(plugins, "labmethods", {"mce_wk": LAB_METHOD_SOURCE})
    # What a lab sets before `softgrade up`: the worker, its slot processes and the
    # commands below inherit it (this test process too, to read the registry).
    monkeypatch.setenv(PLUGIN_VARIABLE, "labmethods")
    monkeypatch.setenv("PYTHONPATH", str(plugins))
    monkeypatch.syspath_prepend(str(plugins))
    store = home / "softgrade.duckdb"
    init_schema(store)
    baseline = method_names()[0]
    study = _study_file(home, tasks=["CPPD"], methods=[baseline, LAB_METHOD], seeds=[0, 1])
    submitted = run_jobs_cli(home, "submit", str(study))
    assert submitted.returncode == 0, submitted.stderr
    job_id = re.search(r"queued (\S+)", submitted.stdout).group(1)

    worker = start_worker(home)
    try:
        wait_while_the_job_progresses(
            store,
            job_id,
            lambda job: job["status"] == "succeeded",
            "the study with the lab's method to succeed",
            worker=worker,
            log=home / "worker.log",
        )
    finally:
        worker.terminate()
        worker.wait(30)

    study_id = store_runs.list_studies(path=store).study_id.iloc[0]
    runs = store_runs.list_runs([study_id], selected_only=True, path=store)
    mine = runs[runs["method"] == LAB_METHOD]
    assert len(mine) == 2 and mine["checkpoint_path"].map(lambda p: Path(p).is_file()).all()
    assert _stats_methods(home, study_id) == {baseline, LAB_METHOD}
    assert method_title(LAB_METHOD) in _report(home, study_id)


def test_a_study_of_every_registered_method_from_yaml_reaches_stats_and_the_report(
    home: Path,
):
    store = home / "softgrade.duckdb"
    init_schema(store)
    methods = list(method_names())
    study = _study_file(home, methods=methods, max_epochs=1, patience=1)

    done = run_jobs_cli(home, "run", str(study), timeout=1800)

    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    study_id = store_runs.list_studies(path=store).study_id.iloc[0]
    runs = store_runs.list_runs([study_id], selected_only=True, path=store)
    assert sorted(runs.groupby("method")["task"].nunique().items()) == sorted(
        (m, 2) for m in methods
    )
    assert _stats_methods(home, study_id) == set(methods)
    report = _report(home, study_id)
    missing = [m for m in methods if method_title(m) not in report]
    assert not missing, f"the report does not name {missing}"
