"""The worker's training settings on the command line: threads per slot and Ray retries."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from jobs.cli.main import build_parser
from jobs.cli.up_command import _worker_command
from jobs.worker.executors import InlineExecutor, LocalExecutor, SlotPlan
from jobs.worker.settings import DEFAULT_MAX_RETRIES, DEFAULT_THREADS_PER_SLOT


def test_worker_takes_threads_per_slot_and_max_retries():
    args = build_parser().parse_args(["worker", "--threads-per-slot", "3", "--max-retries", "0"])
    assert (args.threads_per_slot, args.max_retries) == (3, 0)
    plain = build_parser().parse_args(["worker"])
    assert (plain.threads_per_slot, plain.max_retries) == (1, 2)
    assert (DEFAULT_THREADS_PER_SLOT, DEFAULT_MAX_RETRIES) == (1, 2)


def test_up_hands_its_threads_and_retries_to_the_worker_it_starts():
    args = build_parser().parse_args(["up", "--threads-per-slot", "2", "--max-retries", "5"])
    command = _worker_command(args)
    assert command[command.index("--threads-per-slot") + 1] == "2"
    assert command[command.index("--max-retries") + 1] == "5"
    assert build_parser().parse_args(command[3:]).threads_per_slot == 2


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--threads-per-slot", "0"], "0 must be from 1 to 512"),
        (["--threads-per-slot", "two"], "'two' is not a whole number"),
        (["--max-retries", "-1"], "-1 must be from 0 to 10"),
        (["--processes-per-gpu", "0"], "0 must be from 1 to 32"),
        (["--slots-per-gpu", "99999"], "99999 must be from 0 to 32"),
        (["--slots-per-gpu", "-1"], "-1 must be from 0 to 32"),
        (["--cpu-slots", "0"], "0 must be from 1 to 256"),
        (["--cpu-slots", "100000"], "100000 must be from 1 to 256"),
        (["--threads-per-slot", "4096"], "4096 must be from 1 to 512"),
    ],
)
@pytest.mark.parametrize("command", ["worker", "run", "up"])
def test_bad_settings_end_with_one_line_naming_the_flag(capsys, flags, said, command):
    if command == "run" and flags[0] == "--max-retries":
        return  # a run takes no Ray options
    study = ["engine/studies/quick.yaml"] if command == "run" else []
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args([command, *study, *flags])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert flags[0] in err and said in err and "Traceback" not in err


def test_a_run_the_machine_cannot_train_leaves_no_queued_job(home, capsys, monkeypatch):
    from jobs.cli.main import main
    from store import jobs as store_jobs
    from store.db import default_store_path

    quick = Path(__file__).resolve().parents[3] / "engine" / "studies" / "quick.yaml"
    study = home / "on-a-gpu.yaml"
    study.write_text(quick.read_text().replace("device: cpu", "device: cuda"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # as on a CPU machine
    assert main(["run", str(study)]) == 2
    assert "no CUDA GPU" in capsys.readouterr().err
    assert store_jobs.list_jobs(path=default_store_path()).empty


def test_executors_refuse_fewer_than_one_thread_before_starting_anything():
    with pytest.raises(ValueError, match="threads per slot: 0 must be >= 1"):
        LocalExecutor([SlotPlan("cpu", None)], threads_per_slot=0)
    before = torch.get_num_threads()
    try:  # the inline executor trains in this process, so it sets this process's threads
        assert InlineExecutor("cpu", threads_per_slot=2).threads_per_slot == 2
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["worker", "--beat-s", "-1"], "--beat-s: -1 must be from 0.5 to 600 s"),
        (["worker", "--beat-s", "nan"], "--beat-s: nan must be from 0.5 to 600 s"),
        (["worker", "--beat-s", "often"], "'often' is not a number of seconds"),
        (["worker", "--stale-after-s", "0"], "--stale-after-s: 0 must be from 2 to 86400 s"),
        (["up", "--port", "99999"], "--port: 99999 must be from 1 to 65535"),
        (["up", "--port", "-5"], "--port: -5 must be from 1 to 65535"),
        (["up", "--max-upload-mb", "-1"], "--max-upload-mb: -1 must be from 1 to 2048"),
    ],
)
def test_bad_times_ports_and_sizes_end_with_one_line(capsys, argv, said):
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


def test_a_stale_limit_under_two_heartbeats_is_refused_before_the_worker_starts(home, capsys):
    from jobs.cli.main import main
    from store.db import default_store_path

    assert main(["worker", "--beat-s", "10", "--stale-after-s", "15"]) == 2
    err = capsys.readouterr().err
    assert "--stale-after-s 15 must be at least twice --beat-s 10" in err
    assert not default_store_path().exists()  # no worker registered, nothing started
