"""`python -m jobs users|study|backup` and `up --host`: what a lab admin types."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from jobs.cli.lab_commands import os_user
from jobs.cli.main import main
from store import jobs as store_jobs
from store import users
from store.audit import read_audit
from store.db import SCHEMA_VERSION, connect, init_schema
from tests.helpers.cli import run_cli


@pytest.fixture
def store(home: Path) -> Path:
    path = home / "softgrade.duckdb"
    init_schema(path)
    return path


def _prompt(monkeypatch, *answers: str) -> None:
    replies = iter(answers)
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(replies))


def test_users_add_from_a_prompt_asked_twice(store, monkeypatch, capsys):
    _prompt(monkeypatch, "knee films at dawn", "knee films at dawn")
    assert main(["users", "add", "alice", "--role", "member"]) == 0
    assert "added alice (member)" in capsys.readouterr().out
    assert users.verify_password("alice", "knee films at dawn", path=store).role == "member"
    assert read_audit(path=store).iloc[0].action == "user_add"


def test_users_add_refuses_two_different_entries(store, monkeypatch, capsys):
    _prompt(monkeypatch, "knee films at dawn", "knee films at dusk")
    assert main(["users", "add", "alice", "--role", "member"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"A password needs {users.PASSWORD_RULE}.\n")  # said before asking
    assert err.endswith("error: the two passwords differ; nothing was changed\n")
    assert users.list_users(path=store).empty


def test_users_add_from_a_password_file(store, tmp_path, capsys):
    secret = tmp_path / "pw"
    secret.write_text("from a file\n")
    assert main(["users", "add", "ada", "--role", "admin", "--password-file", str(secret)]) == 0
    assert users.verify_password("ada", "from a file", path=store) is not None
    secret.write_text("")
    assert main(["users", "add", "bob", "--role", "admin", "--password-file", str(secret)]) == 2
    assert "is empty on its first line" in capsys.readouterr().err
    missing = str(tmp_path / "nope")
    assert main(["users", "add", "bob", "--role", "admin", "--password-file", missing]) == 2
    assert "cannot read the password file" in capsys.readouterr().err


def test_users_list_set_role_disable_and_remove(store, tmp_path, capsys):
    secret = tmp_path / "pw"
    secret.write_text("long enough to pass\n")
    for name, role in (("ada", "admin"), ("vera", "viewer")):
        main(["users", "add", name, "--role", role, "--password-file", str(secret)])
    assert main(["users", "set-role", "vera", "member"]) == 0
    assert main(["users", "disable", "vera"]) == 0
    capsys.readouterr()
    assert main(["users", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["ada", "admin"]
    assert lines[1].split()[:2] == ["vera", "member"] and lines[1].endswith("(disabled)")
    assert main(["users", "remove", "vera"]) == 0
    assert users.list_users(path=store).name.tolist() == ["ada"]
    assert main(["users", "remove", "ada"]) == 0  # the last account may go


def test_users_bad_input_is_one_message(store, capsys):
    assert main(["users", "remove", "ghost"]) == 2
    assert capsys.readouterr().err.startswith("error: no account named 'ghost'")
    assert main(["users", "add", "bad name!", "--role", "viewer"]) == 2
    assert "is not allowed" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["users", "add", "x", "--role", "owner"])  # argparse lists the roles
    assert "invalid choice: 'owner'" in capsys.readouterr().err


def test_study_prints_the_card_and_notes(store, capsys):
    from store.studies import set_notes

    job_id = store_jobs.enqueue_job({"name": "knees"}, launched_by="alice", path=store)
    study_id = store_jobs.get_job(job_id, path=store).study_id
    set_notes(study_id, "beta wins", path=store)
    assert main(["study", study_id]) == 0
    out = capsys.readouterr().out
    assert "study          knees\n" in out and "launched by    alice\n" in out
    assert out.rstrip().endswith("notes:\nbeta wins")
    assert main(["study", "study-nope"]) == 2
    assert capsys.readouterr().err.startswith("error: no study 'study-nope'")


def test_backup_writes_a_copy_and_never_overwrites(store, tmp_path, capsys):
    dest = tmp_path / "b" / "copy.duckdb"
    assert main(["backup", "-o", str(dest)]) == 0
    assert f"backup written to {dest}" in capsys.readouterr().out
    with connect(dest, read_only=True) as con:
        assert con.execute("SELECT value FROM meta").fetchone()[0] == str(SCHEMA_VERSION)
    before = dest.read_bytes()
    assert main(["backup", "-o", str(dest)]) == 2
    assert "exists already" in capsys.readouterr().err and dest.read_bytes() == before
    line = read_audit(action="backup", path=store).iloc[0]
    assert (line.actor, line.target) == (os_user(), str(dest))
    assert len(read_audit(action="backup", path=store)) == 1  # the refused one is not logged


def test_the_backups_audit_line_names_the_os_user_or_local(monkeypatch):
    for variable in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(variable, "")
    monkeypatch.setenv("USER", "pi")
    assert os_user() == "pi"


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    """The command in this process: what it prints and returns is what a person sees."""
    return run_cli(home, *args)


def test_up_beyond_loopback_without_accounts_refuses_to_start(home):
    done = _cli(home, "up", "--host", "0.0.0.0", "--port", "1")
    assert done.returncode == 2
    assert "refusing to serve on 0.0.0.0" in done.stderr
    assert "python -m jobs users add NAME --role admin" in done.stderr
    assert "Traceback" not in done.stderr
    proxied = _cli(home, "up", "--behind-proxy", "--port", "1")
    assert proxied.returncode == 2 and "behind a reverse proxy" in proxied.stderr


def test_damaged_store_is_one_message_from_the_cli(home):
    (home / "softgrade.duckdb").write_bytes(b"this is not a database" * 100)
    done = _cli(home, "users", "list")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: the store ") and "cannot be opened" in done.stderr
    assert (home / "softgrade.duckdb").read_bytes() == b"this is not a database" * 100


def test_up_hands_its_upload_cap_to_streamlit():
    from jobs.cli.main import build_parser
    from jobs.cli.up_command import _app_command

    args = build_parser().parse_args(["up", "--max-upload-mb", "5"])
    command = _app_command(args)
    assert command[command.index("--server.maxUploadSize") + 1] == "5"
    default = _app_command(build_parser().parse_args(["up"]))
    assert default[default.index("--server.maxUploadSize") + 1] == "64"


@pytest.mark.parametrize("cut", ["mid-block", "block boundary"])
def test_a_truncated_store_is_refused_untouched_by_every_entry_point(store, cut):
    import hashlib

    with connect(store) as con:  # enough rows that the file's tail holds data blocks
        con.execute("CREATE TABLE filler AS SELECT range AS i, random() AS r FROM range(600000)")
    data = store.read_bytes()
    block = 256 * 1024  # DuckDB's block; its three 4 KiB headers come first
    end = len(data) * 3 // 4 if cut == "mid-block" else len(data) - 2 * block
    assert (end - 3 * 4096) % block == (0 if cut == "block boundary" else (end - 12288) % block)
    store.write_bytes(data[:end])
    before = hashlib.md5(store.read_bytes()).hexdigest()
    for args in (("up", "--port", "1"), ("worker",), ("status",), ("users", "list")):
        done = _cli(store.parent, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith("error: the store ") and "truncated" in done.stderr
        assert "Nothing in it was changed" in done.stderr and "Traceback" not in done.stderr
        assert hashlib.md5(store.read_bytes()).hexdigest() == before, args
    assert not Path(f"{store}.wal").exists()


@pytest.mark.parametrize("offset", [4096, 8192, 12288], ids=["header 1", "header 2", "block 0"])
def test_a_store_damaged_in_its_headers_is_one_message_from_the_cli(store, offset):
    data = bytearray(store.read_bytes())
    data[offset + 8 : offset + 400] = bytes(range(256)) + bytes(136)
    store.write_bytes(bytes(data))
    for args in (("status",), ("users", "list")):
        done = _cli(store.parent, *args)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.startswith("error: the store ") and "cannot be opened" in done.stderr
    assert store.read_bytes() == bytes(data)


def test_status_shows_each_jobs_study_id_for_the_study_commands(store, capsys):
    job_id = store_jobs.enqueue_job({"name": "knees"}, path=store)
    study_id = store_jobs.get_job(job_id, path=store).study_id
    assert main(["status"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("JOB"))
    assert header.split()[:4] == ["JOB", "STUDY", "STATUS", "RUNS"]
    row = next(line for line in lines if line.startswith(job_id))
    assert row.split()[:4] == [job_id, study_id, "queued", "0/?"] and row.endswith("knees")


def test_resume_queues_a_cancelled_job_again_and_refuses_any_other(store, capsys):
    job_id = store_jobs.enqueue_job({"name": "knees"}, path=store)
    assert main(["cancel", job_id]) == 0
    assert main(["resume", job_id]) == 0
    assert "queued again" in capsys.readouterr().out
    assert store_jobs.get_job(job_id, path=store).status == "queued"
    assert main(["resume", job_id]) == 2
    assert "is queued: only a cancelled or failed job can be resumed" in (capsys.readouterr().err)
    assert main(["resume", "job-nope"]) == 2
    assert "no job 'job-nope'" in capsys.readouterr().err
