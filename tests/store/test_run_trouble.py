"""Diverged and failed runs in the store (issue 37): a diverged run is kept but never selected
over a finite one, a failed run is kept with its error until the run succeeds, and the study
card counts both, by method and learning rate."""

from __future__ import annotations

import dataclasses

from store import runs as store_runs
from store import studies
from tests.helpers.stores import launch_study, record_study_run


def _diverge(store, run_id: str, epoch: int) -> None:
    from store.db import connect

    with connect(store) as con:
        con.execute("UPDATE runs SET diverged_epoch = ? WHERE run_id = ?", [epoch, run_id])


def _failure(study_id: str, job_id: str, config: int) -> store_runs.FailedRun:
    return store_runs.FailedRun(
        run_id=f"{study_id}-KL-cdw_ce-s0-c{config}",
        study_id=study_id,
        job_id=job_id,
        task="KL",
        method="cdw_ce",
        seed=0,
        config_index=config,
        config={"lr": 0.01, "alpha": 5.0},
        error_line="RuntimeError: CUDA error: an illegal memory access was encountered",
        traceback="Traceback (most recent call last):\n...\nRuntimeError: CUDA error",
    )


def test_a_diverged_run_is_never_selected_over_a_finite_one(store):
    job = launch_study(store)
    for config in (0, 1):  # config 0 has the lower validation AMAE
        record_study_run(store, job.study_id, job.job_id, config, None)
    best = f"{job.study_id}-KL-beta-s0-c0"
    _diverge(store, best, 7)
    store_runs.select_best_runs(job.study_id, path=store)
    runs = store_runs.list_runs([job.study_id], path=store).set_index("run_id")
    assert not runs.loc[best, "selected"] and runs["selected"].sum() == 1
    assert runs.loc[best, "diverged_epoch"] == 7

    _diverge(store, f"{job.study_id}-KL-beta-s0-c1", 3)  # every run diverged: the best one
    store_runs.select_best_runs(job.study_id, path=store)
    runs = store_runs.list_runs([job.study_id], path=store).set_index("run_id")
    assert runs.loc[best, "selected"]


def test_a_failed_run_is_kept_with_its_error_until_it_succeeds(store):
    job = launch_study(store)
    failure = _failure(job.study_id, job.job_id, 0)
    store_runs.record_failed_run(failure, path=store)
    store_runs.record_failed_run(dataclasses.replace(failure, error_line="again"), path=store)
    failed = store_runs.failed_runs([job.study_id], path=store)
    assert list(failed["error_line"]) == ["again"], "a second failure replaces the first"
    assert failed.iloc[0]["method"] == "cdw_ce"


def test_the_study_card_counts_diverged_and_failed_runs_by_method_and_rate(store):
    job = launch_study(store)
    for config in (0, 1, 2):
        record_study_run(store, job.study_id, job.job_id, config, None)
    _diverge(store, f"{job.study_id}-KL-beta-s0-c1", 4)
    _diverge(store, f"{job.study_id}-KL-beta-s0-c2", 9)
    for config in (0, 1):
        store_runs.record_failed_run(_failure(job.study_id, job.job_id, config), path=store)
    card = studies.study_card(job.study_id, path=store)
    assert card["diverged"].startswith("2 of 3 runs diverged")
    assert card["diverged"].endswith(": beta at lr 0.001 x2")
    assert card["failed runs"].startswith("2 run(s) failed and are not stored: cdw_ce x2")


def test_a_card_without_trouble_says_nothing_of_it(store):
    job = launch_study(store)
    record_study_run(store, job.study_id, job.job_id, 0, None)
    assert not {"diverged", "failed runs"} & set(studies.study_card(job.study_id, path=store))
