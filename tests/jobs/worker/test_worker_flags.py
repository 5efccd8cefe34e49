"""Worker flags are bounded before anything starts (issue 39): ``--max-retries`` past
`FLAG_MAX_RETRIES` is refused by the parser, naming the range."""

from __future__ import annotations

import pytest

from jobs.cli.arg_types import FLAG_MAX_RETRIES
from jobs.cli.main import build_parser


@pytest.mark.parametrize("command", ["worker", "up"])
def test_max_retries_past_the_bound_is_refused_naming_the_range(command, capsys):
    parser = build_parser()
    with pytest.raises(SystemExit) as done:
        parser.parse_args([command, "--executor", "ray", "--max-retries", "100000"])
    assert done.value.code == 2
    assert f"from 0 to {FLAG_MAX_RETRIES}" in capsys.readouterr().err


def test_max_retries_within_the_bound_is_kept():
    args = build_parser().parse_args(["worker", "--max-retries", str(FLAG_MAX_RETRIES)])
    assert args.max_retries == FLAG_MAX_RETRIES
