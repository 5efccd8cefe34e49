"""A study's lifecycle (rename, notes, tags, archive, delete) and its provenance card."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from store import jobs as store_jobs
from store import runs as store_runs
from store import studies
from store.audit import read_audit
from store.datasets import register_dataset, save_splits, set_study_dataset
from store.db import StoreError, connect

ENVIRONMENT = {
    "worker_host": "gpu-box",
    "devices": ["cuda:0", "cuda:0", "cuda:1"],
    "gpu_names": ["NVIDIA H100", "NVIDIA H100", "NVIDIA H100"],
    "code_version": "0.1.0",
    "git_commit": "3de5e32aa9bb0c1d2e3f",
    "git_dirty": True,
    "python": "3.11.7",
    "torch": "2.14.1",
    "cuda": "13.0",
    "cudnn": "9.10.2",
    "dlordinal": "2.7.0",
    "ultralytics": "8.4.190",
}


def _launch(store, name="knees", by="alice"):
    job_id = store_jobs.enqueue_job(
        {"name": name, "seeds": [0]}, launched_by=by, launched_from="10.1.2.3", path=store
    )
    return store_jobs.get_job(job_id, path=store)


def _run(store, study_id, job_id, config, checkpoint):
    images = ["a", "b", "c"]
    store_runs.record_run(
        store_runs.RunRecord(
            run_id=f"{study_id}-KL-beta-s0-c{config}",
            study_id=study_id,
            job_id=job_id,
            task="KL",
            method="beta",
            seed=0,
            config_index=config,
            config={"lr": 0.001},
            best_epoch=1,
            epochs_run=2,
            val_amae=0.5 + config,
            device="cuda",
            duration_s=1.0,
            weights_init="random",
            checkpoint_path=None if checkpoint is None else str(checkpoint),
            predictions=pd.DataFrame(
                {
                    "image_id": images,
                    "split": ["val", "test", "test"],
                    "y_true": [0, 1, 2],
                    "y_pred": [0, 1, 1],
                    "probs": [np.full(5, 0.2, dtype=np.float32)] * 3,
                }
            ),
            epochs=pd.DataFrame(
                {
                    "epoch": [0, 1],
                    "train_loss": [1.0, 0.9],
                    "val_loss": [1.1, 1.0],
                    "val_amae": [0.6, 0.5],
                    "duration_s": [0.1, 0.1],
                }
            ),
        ),
        path=store,
    )


def _finished_study(store: Path, home: Path, name: str, dataset_id: str):
    """A study with a succeeded job, two runs, their checkpoint files and an environment."""
    job = _launch(store, name)
    set_study_dataset(job.study_id, dataset_id, path=store)
    store_jobs.claim_next_job("w", path=store)
    studies.record_environment(
        job.study_id, job_id=job.job_id, worker_id="w", environment=ENVIRONMENT, path=store
    )
    files = []
    for config in (0, 1):
        ckpt = home / "checkpoints" / job.study_id / f"c{config}.pt"
        ckpt.parent.mkdir(parents=True, exist_ok=True)
        ckpt.write_bytes(b"weights")
        files.append(ckpt)
        _run(store, job.study_id, job.job_id, config, ckpt)
    store_jobs.finish_job(job.job_id, store_jobs.JobStatus.SUCCEEDED, path=store)
    return job, files


def _rows_of(store: Path, study_id: str) -> dict[str, int]:
    with connect(store, read_only=True) as con:
        q = lambda sql: con.execute(sql, [study_id]).fetchone()[0]  # noqa: E731
        runs = "SELECT run_id FROM runs WHERE study_id = ?"
        jobs = "SELECT job_id FROM jobs WHERE study_id = ?"
        return {
            "studies": q("SELECT count(*) FROM studies WHERE study_id = ?"),
            "runs": q("SELECT count(*) FROM runs WHERE study_id = ?"),
            "predictions": q(f"SELECT count(*) FROM predictions WHERE run_id IN ({runs})"),
            "epoch_metrics": q(f"SELECT count(*) FROM epoch_metrics WHERE run_id IN ({runs})"),
            "jobs": q("SELECT count(*) FROM jobs WHERE study_id = ?"),
            "job_logs": q(f"SELECT count(*) FROM job_logs WHERE job_id IN ({jobs})"),
            "study_environments": q("SELECT count(*) FROM study_environments WHERE study_id = ?"),
        }


@pytest.fixture
def two_studies(tmp_path):
    from store.db import init_schema

    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    return make_two_studies(store, tmp_path)


def make_two_studies(store: Path, home: Path):
    """Studies "doomed" and "kept" (launched by alice) on one dataset, each with two runs
    and their checkpoint files under ``home``; the store is set up already."""
    meta = pd.DataFrame(
        {"image_id": ["a", "b", "c"], "patient_id": ["p", "q", "r"], "kl": [0, 1, 2]}
    )
    dataset_id = register_dataset(
        spec_key="phantom:1", kind="phantom", params={}, meta=meta, path=store
    )
    save_splits(
        dataset_id, 0, pd.Series(["val", "test", "test"], index=["a", "b", "c"]), path=store
    )
    doomed, doomed_files = _finished_study(store, home, "doomed", dataset_id)
    kept, kept_files = _finished_study(store, home, "kept", dataset_id)
    return store, home, dataset_id, (doomed, doomed_files), (kept, kept_files)


def test_delete_removes_the_study_everywhere_and_leaves_the_other_untouched(two_studies):
    store, home, dataset_id, (doomed, doomed_files), (kept, kept_files) = two_studies
    kept_rows = _rows_of(store, kept.study_id)
    assert all(kept_rows.values())
    deleted = studies.delete_study(
        doomed.study_id, confirm_name="doomed", by="ada", home=home, path=store
    )
    assert set(_rows_of(store, doomed.study_id).values()) == {0}
    assert deleted.rows["runs"] == 2 and deleted.rows["predictions"] == 6
    assert sorted(deleted.files_removed) == sorted(map(str, doomed_files))
    assert not any(f.exists() for f in doomed_files)
    assert not (home / "checkpoints" / doomed.study_id).exists()
    assert _rows_of(store, kept.study_id) == kept_rows
    assert all(f.read_bytes() == b"weights" for f in kept_files)
    with connect(store, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM datasets").fetchone()[0] == 1
        assert con.execute("SELECT count(*) FROM splits").fetchone()[0] == 3
        assert con.execute("SELECT count(*) FROM labels").fetchone()[0] == 3
    line = read_audit(action="delete", path=store).iloc[0]
    assert line.actor == "ada" and line.target == doomed.study_id and "2 runs" in line.detail


def test_delete_needs_the_exact_name_and_a_stopped_job(two_studies):
    store, home, _, (doomed, _), _ = two_studies
    with pytest.raises(StoreError, match="type the study's name 'doomed' exactly"):
        studies.delete_study(doomed.study_id, confirm_name="kept", home=home, path=store)
    running = _launch(store, "busy")
    store_jobs.claim_next_job("w", path=store)
    with pytest.raises(StoreError, match="is training.*cancel it"):
        studies.delete_study(running.study_id, confirm_name="busy", home=home, path=store)
    assert _rows_of(store, doomed.study_id)["runs"] == 2
    assert _rows_of(store, running.study_id)["jobs"] == 1


def test_delete_leaves_checkpoint_files_outside_the_home(two_studies, tmp_path_factory):
    store, home, _, _, _ = two_studies
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "precious.pt"
    elsewhere.write_bytes(b"not ours")
    job = _launch(store, "odd")
    _run(store, job.study_id, job.job_id, 0, elsewhere)
    store_jobs.request_cancel(job.job_id, path=store)
    deleted = studies.delete_study(job.study_id, confirm_name="odd", home=home, path=store)
    assert deleted.files_left == [str(elsewhere)] and elsewhere.exists()


def test_rename_notes_and_tags_are_kept_and_audited(store):
    job = _launch(store)
    studies.rename_study(job.study_id, "  knees   v2 ", by="bob", path=store)
    studies.set_notes(job.study_id, "# Why\nbeta wins on **CPPD**", by="bob", path=store)
    studies.set_tags(job.study_id, ["paper", " cppd ", "paper", ""], by="bob", path=store)
    study = studies.get_study(job.study_id, path=store)
    assert study.name == "knees v2" and study.notes.startswith("# Why")
    assert study.tags == ("paper", "cppd")
    assert read_audit(actor="bob", path=store).action.tolist() == ["tags", "notes", "rename"]
    studies.set_notes(job.study_id, "   ", path=store)
    assert studies.get_study(job.study_id, path=store).notes is None


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s, i: studies.rename_study(i, "  ", path=s), "1 to 120 characters"),
        (lambda s, i: studies.set_tags(i, ["a,b"], path=s), "no commas"),
        (lambda s, i: studies.set_tags(i, [str(n) for n in range(21)], path=s), "at most 20"),
        (lambda s, i: studies.set_notes(i, "x" * 20_001, path=s), "at most 20,000"),
        (lambda s, i: studies.rename_study("study-none", "x", path=s), "no study 'study-none'"),
    ],
)
def test_bad_lifecycle_input_gets_one_message_and_changes_nothing(store, call, message):
    job = _launch(store)
    with pytest.raises((ValueError, StoreError), match=message):
        call(store, job.study_id)
    study = studies.get_study(job.study_id, path=store)
    assert (study.name, study.notes, study.tags) == ("knees", None, ())


def test_archived_study_leaves_the_pickers_until_unarchived(store):
    shown, hidden = _launch(store, "shown"), _launch(store, "hidden")
    studies.archive_study(hidden.study_id, by="ada", path=store)
    assert store_runs.list_studies(path=store).name.tolist() == ["shown"]
    everything = store_runs.list_studies(include_archived=True, path=store)
    assert sorted(everything.name) == ["hidden", "shown"]
    assert everything.set_index("name").archived_at.notna().to_dict() == {
        "hidden": True,
        "shown": False,
    }
    assert len(store_jobs.list_jobs(path=store)) == 2  # the Jobs page still lists its job
    studies.unarchive_study(hidden.study_id, by="ada", path=store)
    assert len(store_runs.list_studies(path=store)) == 2
    assert read_audit(path=store).action.tolist()[:2] == ["unarchive", "archive"]
    assert shown.study_id != hidden.study_id


def test_launch_and_cancel_record_who_and_from_where(store):
    job = _launch(store, by="alice")
    assert job.launched_by == "alice"
    assert store_jobs.list_jobs(path=store).launched_by.tolist() == ["alice"]
    store_jobs.request_cancel(job.job_id, by="ada", path=store)
    log = read_audit(path=store)
    assert log[["actor", "action", "target"]].values.tolist() == [
        ["ada", "cancel", job.job_id],
        ["alice", "launch", job.study_id],
    ]
    study = studies.get_study(job.study_id, path=store)
    assert (study.launched_by, study.launched_from) == ("alice", "10.1.2.3")


def test_launch_without_a_user_is_local(store):
    job_id = store_jobs.enqueue_job({"name": "cli"}, path=store)
    assert store_jobs.get_job(job_id, path=store).launched_by == "local"


def test_study_card_says_who_launched_it_and_where_it_trained(two_studies):
    store, _, dataset_id, _, (kept, _) = two_studies
    card = studies.study_card(kept.study_id, path=store)
    assert card["study"] == "kept" and card["launched by"] == "alice"
    assert card["launched from"] == "10.1.2.3"
    assert card["status"].startswith("succeeded, 0/? runs")
    assert card["dataset"] == f"{dataset_id} (phantom:1, 3 images)"
    assert card["code"] == "git 3de5e32aa9bb with uncommitted changes (softgrade 0.1.0)"
    assert (card["torch"], card["CUDA"], card["cuDNN"]) == ("2.14.1", "13.0", "9.10.2")
    assert card["worker"] == "gpu-box"
    assert card["devices"] == "cuda:0 x2, cuda:1 (NVIDIA H100 x3)"
    assert card["run devices"] == "cuda x2"
    assert "resumed on" not in card


def test_study_card_of_a_resumed_study_names_every_worker_host(two_studies):
    store, _, _, _, (kept, _) = two_studies
    studies.record_environment(
        kept.study_id,
        job_id=kept.job_id,
        worker_id="w2",
        environment={**ENVIRONMENT, "worker_host": "cpu-box", "git_commit": None},
        path=store,
    )
    card = studies.study_card(kept.study_id, path=store)
    assert card["worker"] == "cpu-box" and card["code"] == "softgrade 0.1.0 (not a git checkout)"
    assert card["resumed on"] == "2 claims by workers (also on gpu-box)"
    assert len(studies.study_environments(kept.study_id, path=store)) == 2


def test_study_card_of_a_study_stored_before_provenance(store):
    with connect(store) as con:
        con.execute("INSERT INTO studies (study_id, name, spec) VALUES ('s-old', 'old', '{}')")
    card = studies.study_card("s-old", path=store)
    assert card["launched by"].startswith("not recorded")
    assert "code" not in card and "worker" not in card


def test_environment_with_unknown_fields_is_refused(store):
    job = _launch(store)
    with pytest.raises(ValueError, match="unknown environment fields \\['gpu'\\]"):
        studies.record_environment(
            job.study_id, job_id=job.job_id, worker_id="w", environment={"gpu": 1}, path=store
        )
