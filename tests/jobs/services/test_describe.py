"""Workers described to people (CLI status and the sidebar)."""

from __future__ import annotations

from jobs.services.describe import format_devices


def test_worker_devices_are_counted_not_repeated():
    assert format_devices(["cuda:0"] * 4) == "cuda:0 ×4"
    assert format_devices(["cuda:0", "cuda:0", "cuda:1"]) == "cuda:0 ×2, cuda:1"
    assert format_devices(["cpu"]) == "cpu"
