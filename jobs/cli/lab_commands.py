"""The lab-server commands of ``python -m jobs``: accounts, study cards and backups.

- ``users add NAME --role ROLE [--password-file F]``: the password is read from the file's
  first line, or asked twice at a prompt (never an argument: it would stay in the shell's
  history and in ``ps``).
- ``users list``, ``users remove NAME``, ``users set-role NAME ROLE``,
  ``users disable NAME``, ``users enable NAME``, ``users password NAME [--password-file F]``.
- ``study ID``: the study card and notes.
- ``backup [-o FILE]``: a consistent copy of the store, while the worker runs.

Bad input ends with one message (``main`` prints it), never a traceback.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path

import duckdb

from jobs.cli.arg_types import add_force_arg
from jobs.services.provenance import card_text
from store import audit as store_audit
from store import studies as store_studies
from store import users as store_users
from store.audit import LOCAL_ACTOR
from store.backup import backup_store
from store.db import StoreError, default_store_path, init_schema

# Account changes from the command line are made by whoever holds the server's shell.
CLI_ACTOR = LOCAL_ACTOR


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``users``, ``study`` and ``backup`` on the CLI's subcommands."""
    users = sub.add_parser("users", help="manage the lab's accounts").add_subparsers(
        dest="users_command", required=True
    )
    roles = [r.value for r in store_users.Role]
    p = users.add_parser("add", help="add an account")
    p.add_argument("name")
    p.add_argument("--role", required=True, choices=roles)
    _password_file_arg(p)
    p.set_defaults(func=cmd_users_add)
    users.add_parser("list", help="list accounts").set_defaults(func=cmd_users_list)
    p = users.add_parser("remove", help="remove an account and end its sessions")
    p.add_argument("name")
    p.set_defaults(func=cmd_users_remove)
    p = users.add_parser("set-role", help="change an account's role")
    p.add_argument("name")
    p.add_argument("role", choices=roles)
    p.set_defaults(func=cmd_users_set_role)
    for verb, disabled in (("disable", True), ("enable", False)):
        p = users.add_parser(verb, help=f"{verb} an account")
        p.add_argument("name")
        p.set_defaults(func=cmd_users_set_disabled, disabled=disabled)
    p = users.add_parser("password", help="set a new password (ends the account's sessions)")
    p.add_argument("name")
    _password_file_arg(p)
    p.set_defaults(func=cmd_users_password)

    p = sub.add_parser("study", help="print a study's card: provenance, versions, devices")
    p.add_argument("study_id")
    p.set_defaults(func=cmd_study)

    p = sub.add_parser("backup", help="write a consistent copy of the store")
    p.add_argument(
        "-o",
        "--output",
        default=None,
        help="the new file (default: backups/softgrade-<date>.duckdb beside the store)",
    )
    add_force_arg(p)
    p.set_defaults(func=cmd_backup)


def _password_file_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--password-file",
        type=Path,
        default=None,
        help="read the password from this file's first line instead of a prompt",
    )


def read_new_password(password_file: Path | None, name: str) -> str:
    """A new password from ``password_file`` or typed twice at a prompt.

    Raises:
        ValueError: Unreadable or empty file, the two entries differ, or no terminal input.
    """
    if password_file is not None:
        try:
            lines = password_file.read_text().splitlines()
        except OSError as exc:
            raise ValueError(f"cannot read the password file {password_file}: {exc}") from exc
        if not lines or not lines[0]:
            raise ValueError(f"the password file {password_file} is empty on its first line")
        return store_users.check_password(lines[0], name, store_users.account_names())
    try:
        print(f"A password needs {store_users.PASSWORD_RULE}.", file=sys.stderr)
        first = getpass.getpass(f"password for {name}: ")
        second = getpass.getpass("the same password again: ")
    except (EOFError, KeyboardInterrupt):
        raise ValueError("no password given; nothing was changed") from None
    if first != second:
        raise ValueError("the two passwords differ; nothing was changed")
    return store_users.check_password(first, name, store_users.account_names())


def _store() -> Path:
    path = default_store_path()
    init_schema(path)
    return path


def cmd_users_add(args: argparse.Namespace) -> int:
    """Add an account."""
    store_users.check_name(args.name)
    password = read_new_password(args.password_file, args.name)
    account = store_users.add_user(args.name, args.role, password, by=CLI_ACTOR, path=_store())
    print(f"added {account.name} ({account.role.value})")
    return 0


def cmd_users_list(args: argparse.Namespace) -> int:
    """Print every account."""
    accounts = store_users.list_users(path=_store())
    if accounts.empty:
        print("no accounts: SoftGrade serves 127.0.0.1 only, without sign-in")
        return 0
    for row in accounts.itertuples(index=False):
        state = "  (disabled)" if row.disabled else ""
        print(f"{row.name:<24} {row.role:<7} since {row.created_at:%Y-%m-%d}{state}")
    return 0


def cmd_users_remove(args: argparse.Namespace) -> int:
    """Remove an account."""
    store_users.remove_user(args.name, by=CLI_ACTOR, path=_store())
    print(f"removed {args.name}; studies they launched keep their name")
    return 0


def cmd_users_set_role(args: argparse.Namespace) -> int:
    """Change an account's role."""
    account = store_users.set_role(args.name, args.role, by=CLI_ACTOR, path=_store())
    print(f"{account.name} is now {account.role.value}")
    return 0


def cmd_users_set_disabled(args: argparse.Namespace) -> int:
    """Disable or enable an account."""
    account = store_users.set_disabled(args.name, args.disabled, by=CLI_ACTOR, path=_store())
    print(f"{account.name} is {'disabled' if account.disabled else 'enabled'}")
    return 0


def cmd_users_password(args: argparse.Namespace) -> int:
    """Set an account's password."""
    path = _store()
    store_users.get_user(args.name, path=path)
    password = read_new_password(args.password_file, args.name)
    store_users.set_password(args.name, password, by=CLI_ACTOR, path=path)
    print(f"new password set for {args.name}; their sessions have ended")
    return 0


def cmd_study(args: argparse.Namespace) -> int:
    """Print a study's card and notes."""
    path = _store()
    print(card_text(store_studies.study_card(args.study_id, path=path)))
    notes = store_studies.get_study(args.study_id, path=path).notes
    if notes:
        print(f"\nnotes:\n{notes}")
    return 0


def cmd_backup(args: argparse.Namespace) -> int:
    """Write a consistent copy of the store (the store is not upgraded first)."""
    made = backup_store(args.output, force=args.force)
    runs = made.rows.get("runs", 0)
    print(
        f"backup written to {made.path}: {runs} runs, {sum(made.rows.values()):,} rows in "
        f"{len(made.rows)} tables, {made.size_bytes / 2**20:.1f} MiB in {made.seconds:.1f} s"
    )
    _audit_backup(made.path, f"{runs} runs, {made.size_bytes / 2**20:.1f} MiB")
    return 0


def os_user() -> str:
    """Who runs this command: the operating system's user name, or 'local' when unknown."""
    try:
        return getpass.getuser() or CLI_ACTOR
    except (KeyError, OSError):  # no user name in the environment or the password database
        return CLI_ACTOR


def _audit_backup(dest: Path, detail: str) -> None:
    """Log the backup under the OS user; a store too old for the log (not upgraded by a
    backup) only gets a warning, since the copy itself is made."""
    try:
        store_audit.record("backup", actor=os_user(), target=str(dest), detail=detail)
    except (StoreError, duckdb.Error) as exc:
        print(f"warning: the backup was not written to the audit log: {exc}", file=sys.stderr)
