"""The fast tier's guard: a test not marked slow that starts a process or trains fails."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys

import pytest
import torch

from engine.train import Trainer
from tests.helpers.tier_guard import OPTIMISER_STEP_BUDGET

REFUSED = pytest.fail.Exception


def test_a_fast_test_that_starts_a_subprocess_fails():
    with pytest.raises(
        REFUSED, match="started a process .*python.*mark the test @pytest.mark.slow"
    ):
        subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_a_fast_test_may_ask_git_a_question():
    # provenance asks git for the code's version: native, a few milliseconds
    done = subprocess.run(["git", "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("git version")


def test_a_fast_test_that_starts_a_multiprocessing_process_fails():
    process = multiprocessing.get_context("spawn").Process(target=print)
    with pytest.raises(REFUSED, match="started a process"):
        process.start()


def test_a_fast_test_that_fits_a_grading_model_fails():
    with pytest.raises(REFUSED, match="trained a model"):
        Trainer.fit(object(), None, None)  # refused before the arguments are read


def _steps(n: int) -> None:
    weight = torch.nn.Parameter(torch.zeros(2))
    optimiser = torch.optim.SGD([weight], lr=0.1)
    for _ in range(n):
        optimiser.zero_grad()
        (weight - 1).pow(2).sum().backward()
        optimiser.step()


def test_a_fast_test_may_take_a_few_optimiser_steps():
    _steps(OPTIMISER_STEP_BUDGET)


def test_a_fast_test_that_runs_a_training_loop_fails():
    with pytest.raises(REFUSED, match="optimiser steps"):
        _steps(OPTIMISER_STEP_BUDGET + 1)


@pytest.mark.slow
def test_a_slow_test_may_start_a_process():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
