"""Store verbs on a person's behalf: each role can do what it may and nothing more."""

from __future__ import annotations

import pytest

from jobs.services import lab
from jobs.services.access import LOCAL_ACCOUNT, AccessDenied
from store import jobs as store_jobs
from store import runs as store_runs
from store import studies as store_studies
from store.audit import read_audit
from store.db import connect
from store.users import Account, Role

VIEWER = Account("vera", Role.VIEWER)
MEMBER = Account("mo", Role.MEMBER)
OTHER_MEMBER = Account("meg", Role.MEMBER)
ADMIN = Account("ada", Role.ADMIN)
SPEC = {"name": "knees", "seeds": [0]}


def test_viewer_can_neither_launch_nor_cancel(store):
    with pytest.raises(AccessDenied, match="may not launch studies"):
        lab.launch_study(VIEWER, SPEC, path=store)
    job_id = lab.launch_study(MEMBER, SPEC, path=store)
    with pytest.raises(AccessDenied, match="may not cancel or resume jobs"):
        lab.cancel_job(VIEWER, job_id, path=store)
    assert store_jobs.get_job(job_id, path=store).status == "queued"


def test_member_cancels_their_own_job_only(store):
    mine = lab.launch_study(MEMBER, SPEC, client="10.0.0.9", path=store)
    theirs = lab.launch_study(OTHER_MEMBER, SPEC, path=store)
    with pytest.raises(AccessDenied, match="only what they launched; this was launched by meg"):
        lab.cancel_job(MEMBER, theirs, path=store)
    assert lab.cancel_job(MEMBER, mine, path=store) == "cancelled"
    assert store_jobs.get_job(theirs, path=store).status == "queued"
    assert read_audit(action="cancel", path=store).actor.tolist() == ["mo"]
    study = store_studies.get_study(store_jobs.get_job(mine, path=store).study_id, path=store)
    assert (study.launched_by, study.launched_from) == ("mo", "10.0.0.9")


def test_admin_cancels_anyones_job_and_deletes_studies(store):
    job_id = lab.launch_study(MEMBER, SPEC, path=store)
    assert lab.cancel_job(ADMIN, job_id, path=store) == "cancelled"
    study_id = store_jobs.get_job(job_id, path=store).study_id
    with pytest.raises(AccessDenied, match="may not delete studies"):
        lab.delete_study(MEMBER, study_id, confirm_name="knees", path=store)
    lab.delete_study(ADMIN, study_id, confirm_name="knees", path=store)
    assert store_runs.list_studies(include_archived=True, path=store).empty


def test_members_edit_their_own_studies_and_only_admins_archive(store):
    study_id = store_jobs.get_job(lab.launch_study(MEMBER, SPEC, path=store), path=store).study_id
    lab.rename_study(MEMBER, study_id, "knees v2", path=store)
    lab.set_notes(MEMBER, study_id, "*draft*", path=store)
    lab.set_tags(ADMIN, study_id, ["paper"], path=store)
    with pytest.raises(AccessDenied):
        lab.set_notes(OTHER_MEMBER, study_id, "mine now", path=store)
    with pytest.raises(AccessDenied, match="may not archive"):
        lab.archive_study(MEMBER, study_id, path=store)
    lab.archive_study(ADMIN, study_id, path=store)
    study = store_studies.get_study(study_id, path=store)
    assert (study.name, study.notes, study.tags, study.archived) == (
        "knees v2",
        "*draft*",
        ("paper",),
        True,
    )


def test_import_is_for_members_and_is_audited_under_their_name(store, tmp_path):
    from engine.films import check_import
    from store.datasets import list_datasets
    from tests.helpers.films import write_film_folder

    folder, _, _ = write_film_folder(tmp_path, n=8, n_joint=8, seed=2)
    report = check_import(folder)
    with pytest.raises(AccessDenied, match="may not import films"):
        lab.register_import(VIEWER, report, path=store)
    assert list_datasets(path=store).empty and read_audit(path=store).empty
    done = lab.register_import(MEMBER, report, name="lab films", path=store)
    line = read_audit(action="import", path=store).iloc[0]
    assert (line.actor, line.target) == ("mo", str(folder))
    assert line.detail == f"{done.dataset_id} ({done.import_id}): 8 film(s), 0 left out"


def test_only_admins_manage_accounts_and_read_the_audit_log(store):
    with pytest.raises(AccessDenied, match="may not manage accounts"):
        lab.add_account(MEMBER, "eve", "admin", "orange kettle marsh", path=store)
    lab.add_account(ADMIN, "eve", "viewer", "orange kettle marsh", path=store)
    lab.set_account_role(ADMIN, "eve", "member", path=store)
    lab.set_account_disabled(ADMIN, "eve", True, path=store)
    with pytest.raises(ValueError, match="your own account"):
        lab.remove_account(ADMIN, "ada", path=store)
    lab.remove_account(ADMIN, "eve", path=store)
    with pytest.raises(AccessDenied, match="may not read the audit log"):
        lab.audit_log(MEMBER, path=store)
    assert lab.audit_log(ADMIN, path=store).action.tolist()[:4] == [
        "user_remove",
        "user_disable",
        "user_set_role",
        "user_add",
    ]


def test_single_user_mode_acts_as_local(store):
    job_id = lab.launch_study(LOCAL_ACCOUNT, SPEC, path=store)
    assert store_jobs.get_job(job_id, path=store).launched_by == "local"
    assert lab.cancel_job(LOCAL_ACCOUNT, job_id, path=store) == "cancelled"


def test_the_last_admin_may_not_demote_or_disable_themself_even_as_the_only_account(store):
    from store import users as store_users

    store_users.add_user("ada", "admin", "correct horse", path=store)
    with pytest.raises(ValueError, match="you are the last admin"):
        lab.set_account_role(ADMIN, "ada", "member", path=store)
    with pytest.raises(ValueError, match="cannot disable your own account"):
        lab.set_account_disabled(ADMIN, "ada", True, path=store)
    store_users.add_user("bo", "admin", "correct horse", path=store)
    assert lab.set_account_role(ADMIN, "ada", "member", path=store).role == "member"


def test_accounts_and_the_audit_log_are_for_admins_only(store):
    for call in (lab.list_accounts, lab.audit_log):
        with pytest.raises(AccessDenied):
            call(MEMBER, path=store)
    assert lab.list_accounts(ADMIN, path=store).empty


def test_a_viewer_cannot_load_the_reference_study_and_a_member_can(store):
    with pytest.raises(AccessDenied, match="may not import films"):
        lab.load_reference_study(VIEWER, path=store)
    with connect(store, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM studies").fetchone() == (0,)
    assert read_audit(action="import", path=store).empty
    done = lab.load_reference_study(MEMBER, path=store)
    assert done.created and done.runs > 0
    lines = read_audit(action="import", path=store)
    assert lines[["actor", "target"]].values.tolist() == [["mo", done.study_id]]


def _cancelled(account: Account, store) -> str:
    job_id = lab.launch_study(account, SPEC, path=store)
    lab.cancel_job(account, job_id, path=store)
    return job_id


def test_whoever_may_cancel_a_job_may_resume_it_and_no_one_else(store):
    mine, theirs = _cancelled(MEMBER, store), _cancelled(OTHER_MEMBER, store)
    with pytest.raises(AccessDenied, match="may not cancel or resume jobs"):
        lab.resume_job(VIEWER, mine, path=store)
    with pytest.raises(AccessDenied, match="only what they launched; this was launched by meg"):
        lab.resume_job(MEMBER, theirs, path=store)
    assert store_jobs.get_job(theirs, path=store).status == "cancelled"
    assert lab.resume_job(MEMBER, mine, path=store) == "queued"
    assert lab.resume_job(ADMIN, theirs, path=store) == "queued"
    assert read_audit(action="resume", path=store).actor.tolist() == ["ada", "mo"]
