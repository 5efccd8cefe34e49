"""Spawned pools ignore whatever script ``__main__`` currently is (Streamlit swaps its page in)."""

from __future__ import annotations

import sys
import time
import types

import pytest

from engine.spawn import spawn_pool


@pytest.mark.slow  # starts a process (tests/helpers/tier_guard.py)
def test_a_pool_started_while_main_is_a_page_script_does_not_run_that_script(tmp_path, monkeypatch):
    marker = tmp_path / "ran.txt"
    page = tmp_path / "page.py"
    # What Streamlit leaves behind after running a page: a fake __main__ with the page's file.
    page.write_text(
        f"open({str(marker)!r}, 'a').write('x')\nraise SystemExit('a page, not a worker')\n"
    )
    fake_main = types.ModuleType("__main__")
    fake_main.__file__ = str(page)
    monkeypatch.setitem(sys.modules, "__main__", fake_main)

    with spawn_pool(2, time.sleep, (0,)) as pool:
        result = pool.map_async(abs, [-1, -2, -3]).get(timeout=300)  # a hang guard only

    assert result == [1, 2, 3]
    assert not marker.exists(), "a child re-ran the page script"
    assert sys.modules["__main__"] is fake_main  # put back afterwards


def test_main_is_restored_when_the_pool_cannot_start():
    original = sys.modules["__main__"]
    with pytest.raises(ValueError):
        spawn_pool(0, time.sleep, (0,))
    assert sys.modules["__main__"] is original
