"""How many processes render a phantom: a small one in this process, a large one in a pool."""

from __future__ import annotations

import pytest

from engine.datasets.prepare import FILMS_PER_RENDER_PROCESS, phantom_render_processes


@pytest.mark.parametrize("n_images", [1, 60, FILMS_PER_RENDER_PROCESS - 1])
def test_a_phantom_too_small_to_pay_for_a_pool_renders_in_one_process(n_images: int) -> None:
    assert phantom_render_processes(n_images, cpus=16) == 1


def test_a_large_phantom_gets_one_process_per_share_of_films_up_to_the_cpus_and_8() -> None:
    assert phantom_render_processes(2 * FILMS_PER_RENDER_PROCESS, cpus=16) == 2
    assert phantom_render_processes(2170, cpus=2) == 2  # the default phantom on a 2-core VM
    assert phantom_render_processes(100 * FILMS_PER_RENDER_PROCESS, cpus=64) == 8


def test_a_machine_that_reports_no_cpu_count_still_renders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: None)
    assert phantom_render_processes(2170) == 1
