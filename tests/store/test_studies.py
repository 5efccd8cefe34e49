"""A study's lifecycle (rename, notes, tags, archive, delete) and its provenance card."""

from __future__ import annotations

import pytest

from store import jobs as store_jobs
from store import runs as store_runs
from store import studies
from store.audit import read_audit
from store.db import StoreError, connect
from tests.helpers.stores import (
    ENVIRONMENT,
    launch_study,
    make_two_studies,
    record_study_run,
    rows_of,
)


@pytest.fixture
def two_studies(tmp_path):
    from store.db import init_schema

    store = tmp_path / "softgrade.duckdb"
    init_schema(store)
    return make_two_studies(store, tmp_path)


def test_delete_removes_the_study_everywhere_and_leaves_the_other_untouched(two_studies):
    store, home, dataset_id, (doomed, doomed_files), (kept, kept_files) = two_studies
    kept_rows = rows_of(store, kept.study_id)
    assert all(kept_rows.values())
    deleted = studies.delete_study(
        doomed.study_id, confirm_name="doomed", by="ada", home=home, path=store
    )
    assert set(rows_of(store, doomed.study_id).values()) == {0}
    assert deleted.rows["runs"] == 2 and deleted.rows["predictions"] == 6
    assert sorted(deleted.files_removed) == sorted(map(str, doomed_files))
    assert not any(f.exists() for f in doomed_files)
    assert not (home / "checkpoints" / doomed.study_id).exists()
    assert rows_of(store, kept.study_id) == kept_rows
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
    running = launch_study(store, "busy")
    store_jobs.claim_next_job("w", path=store)
    with pytest.raises(StoreError, match="is training.*cancel it"):
        studies.delete_study(running.study_id, confirm_name="busy", home=home, path=store)
    assert rows_of(store, doomed.study_id)["runs"] == 2
    assert rows_of(store, running.study_id)["jobs"] == 1


def test_delete_leaves_checkpoint_files_outside_the_home(two_studies, tmp_path_factory):
    store, home, _, _, _ = two_studies
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "precious.pt"
    elsewhere.write_bytes(b"not ours")
    job = launch_study(store, "odd")
    record_study_run(store, job.study_id, job.job_id, 0, elsewhere)
    store_jobs.request_cancel(job.job_id, path=store)
    deleted = studies.delete_study(job.study_id, confirm_name="odd", home=home, path=store)
    assert deleted.files_left == [str(elsewhere)] and elsewhere.exists()


def test_rename_notes_and_tags_are_kept_and_audited(store):
    job = launch_study(store)
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
    job = launch_study(store)
    with pytest.raises((ValueError, StoreError), match=message):
        call(store, job.study_id)
    study = studies.get_study(job.study_id, path=store)
    assert (study.name, study.notes, study.tags) == ("knees", None, ())


def test_archived_study_leaves_the_pickers_until_unarchived(store):
    shown, hidden = launch_study(store, "shown"), launch_study(store, "hidden")
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
    job = launch_study(store, by="alice")
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
    assert card["executor"] == "ray"
    assert card["threads per slot"].startswith("2 CPU threads per slot")
    assert card["search"].startswith("full")
    assert "resumed on" not in card


def test_study_card_leaves_out_how_runs_trained_when_the_worker_did_not_record_it(store):
    job = launch_study(store)
    before_v4 = {
        k: v
        for k, v in ENVIRONMENT.items()
        if k not in ("executor", "threads_per_slot", "search_pruned")
    }
    studies.record_environment(
        job.study_id, job_id=job.job_id, worker_id="w", environment=before_v4, path=store
    )
    card = studies.study_card(job.study_id, path=store)
    assert card["worker"] == "gpu-box"
    assert not {"executor", "threads per slot", "search"} & set(card)


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
    job = launch_study(store)
    with pytest.raises(ValueError, match="unknown environment fields \\['gpu'\\]"):
        studies.record_environment(
            job.study_id, job_id=job.job_id, worker_id="w", environment={"gpu": 1}, path=store
        )


def test_study_card_says_how_the_runs_were_initialised(two_studies):
    store, _, _, _, (kept, _) = two_studies
    card = studies.study_card(kept.study_id, path=store)
    assert card["weights init"] == (
        "random (trained from scratch, no pretrained weights) on all 2 runs"
    )


def test_weights_init_text_names_the_imagenet_file_and_a_mixture():
    one = studies.weights_init_text([("imagenet", 10)], "/w/resnet18.pth")
    assert one == "ImageNet weights from /w/resnet18.pth on all 10 runs"
    mixed = studies.weights_init_text([("imagenet", 4), ("random", 6)], None)
    assert mixed == (
        "ImageNet weights on 4 runs; random (trained from scratch, no pretrained weights) on 6 runs"
    )


def test_a_cpu_trained_studys_card_says_its_cuda_is_only_torchs_build(store):
    job = launch_study(store)
    on_cpu = {**ENVIRONMENT, "devices": ["cpu", "cpu"], "gpu_names": []}
    studies.record_environment(
        job.study_id, job_id=job.job_id, worker_id="w", environment=on_cpu, path=store
    )
    card = studies.study_card(job.study_id, path=store)
    assert card["devices"] == "cpu x2"
    assert card["CUDA"] == "13.0 (torch's build; these runs used no GPU)"
    assert card["cuDNN"] == "9.10.2 (torch's build; these runs used no GPU)"
