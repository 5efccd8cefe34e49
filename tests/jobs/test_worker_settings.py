"""The worker's training settings on the command line: threads per slot and Ray retries."""

from __future__ import annotations

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
        (["--threads-per-slot", "0"], "0 must be >= 1"),
        (["--threads-per-slot", "two"], "'two' is not a whole number"),
        (["--max-retries", "-1"], "-1 must be >= 0"),
    ],
)
def test_bad_settings_end_with_one_line_naming_the_flag(capsys, flags, said):
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["worker", *flags])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert flags[0] in err and said in err and "Traceback" not in err


def test_executors_refuse_fewer_than_one_thread_before_starting_anything():
    with pytest.raises(ValueError, match="threads per slot: 0 must be >= 1"):
        LocalExecutor([SlotPlan("cpu", None)], threads_per_slot=0)
    before = torch.get_num_threads()
    try:  # the inline executor trains in this process, so it sets this process's threads
        assert InlineExecutor("cpu", threads_per_slot=2).threads_per_slot == 2
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
