"""Store verbs done on a person's behalf: each checks the role (`jobs.services.access`) first, then
acts and leaves its audit line under the person's name.

Pages call these rather than the store verbs, so a page that forgot to hide a button still
cannot let a viewer cancel a job or a member delete a study. Every function raises
`jobs.services.access.AccessDenied` (a ValueError with the reason) when the role does not allow it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from engine.films import ImportReport
    from jobs.services.importer import RegisteredImport
    from store.bundle import ImportedStudy

from jobs.services.access import Action, require
from store import audit as store_audit
from store import jobs as store_jobs
from store import studies as store_studies
from store import users as store_users
from store.jobs import JobStatus
from store.studies import DeletedStudy, Study
from store.users import Account, Role


def launch_study(
    account: Account,
    spec: dict[str, Any],
    *,
    request_id: str | None = None,
    client: str | None = None,
    path: Path | str | None = None,
) -> str:
    """Queue a validated study as ``account``; return its job id.

    Args:
        client: Where the browser is (e.g. ``st.context.ip_address``), kept as
            ``studies.launched_from``.
    """
    require(account, Action.LAUNCH)
    return store_jobs.enqueue_job(
        spec, request_id=request_id, launched_by=account.name, launched_from=client, path=path
    )


def cancel_job(account: Account, job_id: str, *, path: Path | str | None = None) -> JobStatus:
    """Cancel a job: members only their own, admins any."""
    job = store_jobs.get_job(job_id, path=path)
    require(account, Action.CANCEL_OWN, owner=job.launched_by)
    return store_jobs.request_cancel(job_id, by=account.name, path=path)


def resume_job(account: Account, job_id: str, *, path: Path | str | None = None) -> JobStatus:
    """Queue a cancelled job again, to resume at its first unfinished run: whoever may
    cancel it (members their own, admins any)."""
    job = store_jobs.get_job(job_id, path=path)
    require(account, Action.CANCEL_OWN, owner=job.launched_by)
    return store_jobs.resume_job(job_id, by=account.name, path=path)


def register_import(
    account: Account,
    report: ImportReport,
    *,
    name: str | None = None,
    skip_bad: bool = False,
    path: Path | None = None,
) -> RegisteredImport:
    """Check that ``account`` may import films, then register the checked folder; its audit
    line (``import``, under the person's name) is written with the dataset.

    Call it once the folder has passed `jobs.services.access.confine_import_path` and been checked.
    """
    from jobs.services.importer import register_import as register

    require(account, Action.IMPORT)
    return register(report, name=name, skip_bad=skip_bad, by=account.name, store_path=path)


def load_reference_study(account: Account, *, path: Path | str | None = None) -> ImportedStudy:
    """Load the bundled reference study (``store/examples/reference-study.zip``) as ``account``:
    it adds a study to the store, as importing does, so members and admins may, viewers not.
    A load that adds it leaves an ``import`` audit line under the person's name.

    Raises:
        AccessDenied: The role may not import.
        StoreError: The bundle cannot be read.
    """
    from store.bundle import REFERENCE_STUDY, import_study

    require(account, Action.IMPORT)
    done = import_study(REFERENCE_STUDY, path=path)
    if done.created:
        store_audit.record(
            "import",
            actor=account.name,
            target=done.study_id,
            detail=f"the bundled reference study ({done.runs:,} runs) from the Load button",
            path=path,
        )
    return done


def _owned_study(account: Account, study_id: str, path: Path | str | None) -> Study:
    study = store_studies.get_study(study_id, path=path)
    require(account, Action.EDIT_OWN_STUDY, owner=study.launched_by)
    return study


def rename_study(
    account: Account, study_id: str, name: str, *, path: Path | str | None = None
) -> Study:
    """Rename a study (members their own, admins any)."""
    _owned_study(account, study_id, path)
    return store_studies.rename_study(study_id, name, by=account.name, path=path)


def set_notes(
    account: Account, study_id: str, notes: str, *, path: Path | str | None = None
) -> Study:
    """Replace a study's markdown notes (members their own, admins any)."""
    _owned_study(account, study_id, path)
    return store_studies.set_notes(study_id, notes, by=account.name, path=path)


def set_tags(
    account: Account, study_id: str, tags: Iterable[str], *, path: Path | str | None = None
) -> Study:
    """Replace a study's tags (members their own, admins any)."""
    _owned_study(account, study_id, path)
    return store_studies.set_tags(study_id, tags, by=account.name, path=path)


def archive_study(
    account: Account, study_id: str, *, archived: bool = True, path: Path | str | None = None
) -> Study:
    """Archive (or with ``archived=False`` bring back) a study; admins only."""
    require(account, Action.ARCHIVE)
    verb = store_studies.archive_study if archived else store_studies.unarchive_study
    return verb(study_id, by=account.name, path=path)


def delete_study(
    account: Account,
    study_id: str,
    *,
    confirm_name: str,
    home: Path | None = None,
    path: Path | str | None = None,
) -> DeletedStudy:
    """Delete a study for good after its name was typed; admins only."""
    require(account, Action.DELETE)
    return store_studies.delete_study(
        study_id, confirm_name=confirm_name, by=account.name, home=home, path=path
    )


def add_account(
    account: Account, name: str, role: Role | str, password: str, *, path: Path | str | None = None
) -> Account:
    """Add an account; admins only."""
    require(account, Action.MANAGE_ACCOUNTS)
    return store_users.add_user(name, role, password, by=account.name, path=path)


def set_account_role(
    account: Account, name: str, role: Role | str, *, path: Path | str | None = None
) -> Account:
    """Change an account's role; admins only, and not their own away from admin while they
    are the last enabled admin."""
    require(account, Action.MANAGE_ACCOUNTS)
    if name == account.name and store_users.parse_role(str(role)) is not Role.ADMIN:
        _keep_self_admin(account, "give up the admin role", path)
    return store_users.set_role(name, role, by=account.name, path=path)


def set_account_disabled(
    account: Account, name: str, disabled: bool, *, path: Path | str | None = None
) -> Account:
    """Disable or enable an account; admins only, and not their own (another admin must)."""
    require(account, Action.MANAGE_ACCOUNTS)
    if disabled and name == account.name:
        raise ValueError("you cannot disable your own account; another admin can")
    return store_users.set_disabled(name, disabled, by=account.name, path=path)


def remove_account(account: Account, name: str, *, path: Path | str | None = None) -> None:
    """Remove an account; admins only, and not their own (another admin must)."""
    require(account, Action.MANAGE_ACCOUNTS)
    if name == account.name:
        raise ValueError("you cannot remove your own account; another admin can")
    store_users.remove_user(name, by=account.name, path=path)


def _keep_self_admin(account: Account, verb: str, path: Path | str | None) -> None:
    """Refuse to let the last enabled admin ``verb`` (nobody would be left to manage accounts)."""
    if store_users.other_enabled_admins(account.name, path=path) == 0:
        raise ValueError(
            f"you are the last admin, so you cannot {verb}; make another account admin first"
        )


def audit_log(
    account: Account,
    *,
    actor: str | None = None,
    action: str | None = None,
    since: date | None = None,
    until: date | None = None,
    limit: int = 500,
    path: Path | str | None = None,
) -> pd.DataFrame:
    """The latest audit lines, newest first, optionally of one person, action or days;
    admins only (see `store.audit.read_audit`)."""
    require(account, Action.VIEW_AUDIT)
    return store_audit.read_audit(
        actor=actor, action=action, since=since, until=until, limit=limit, path=path
    )


def list_accounts(account: Account, *, path: Path | str | None = None) -> pd.DataFrame:
    """Every account with its role, disabled flag and last sign-in; admins only."""
    require(account, Action.MANAGE_ACCOUNTS)
    return store_users.list_users(path=path)


def list_lab_account_sign_ins(account: Account, *, path: Path | str | None = None) -> pd.DataFrame:
    """Everyone who signed in through the lab's identity provider (not rows of `users`:
    their role comes from the e-mail mapping), with first and last sign-in; admins only."""
    require(account, Action.MANAGE_ACCOUNTS)
    return store_audit.lab_account_sign_ins(path=path)
