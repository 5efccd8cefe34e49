"""A worker on its way: for a while after `up` launched the app, a missing worker reads as
starting, not as absent."""

from __future__ import annotations

import pytest

from jobs.cli.up_command import WORKER_START_CAP_S
from jobs.services.up_worker import STARTING_WITHIN_S, UP_LAUNCHED_ENV, worker_starting


def test_a_worker_reads_as_starting_only_within_the_window_after_up_launched_the_app():
    env = {UP_LAUNCHED_ENV: "1000.0"}
    assert worker_starting(1000.0, env)
    assert worker_starting(1000.0 + STARTING_WITHIN_S - 0.1, env)
    assert not worker_starting(1000.0 + STARTING_WITHIN_S, env)
    assert not worker_starting(999.0, env)  # a launch time in the future is not trusted


def test_the_window_outlasts_ups_latest_first_worker_start():
    assert STARTING_WITHIN_S > WORKER_START_CAP_S + 20


@pytest.mark.parametrize("value", ["", "soon", "nan", "inf", "-inf"])
def test_without_up_or_with_a_value_that_is_not_a_time_no_worker_is_starting(value):
    assert not worker_starting(1000.0, {UP_LAUNCHED_ENV: value})
    assert not worker_starting(1000.0, {})
