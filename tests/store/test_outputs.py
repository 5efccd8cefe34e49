"""`store.outputs`: an output never replaces a file unasked, never writes through a link, and
a file with the output's name is always whole."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from store.outputs import OutputRefused, atomic_output, check_output, write_text


def test_an_existing_file_is_kept_unless_forced(tmp_path):
    out = tmp_path / "table.csv"
    out.write_text("precious")
    with pytest.raises(OutputRefused, match="exists already; pass --force"):
        write_text(out, "new")
    assert out.read_text() == "precious"
    write_text(out, "new", force=True)
    assert out.read_text() == "new"


@pytest.mark.parametrize("force", [False, True])
def test_a_link_is_never_written_through_even_forced(tmp_path, force):
    store = tmp_path / "softgrade.duckdb"
    store.write_bytes(b"the store")
    link = tmp_path / "store.zip"
    link.symlink_to(store)
    with pytest.raises(OutputRefused, match="symbolic link"):
        write_text(link, "a bundle", force=force)
    assert store.read_bytes() == b"the store" and link.is_symlink()


def test_a_dangling_link_is_refused_and_its_target_not_created(tmp_path):
    link = tmp_path / "out.html"
    link.symlink_to(tmp_path / "elsewhere.html")
    with pytest.raises(OutputRefused, match="symbolic link"):
        write_text(link, "report")
    assert not (tmp_path / "elsewhere.html").exists()


def test_a_folder_or_a_missing_folder_is_refused(tmp_path):
    with pytest.raises(OutputRefused, match="is a folder"):
        check_output(tmp_path, force=True)
    with pytest.raises(OutputRefused, match="no folder"):
        check_output(tmp_path / "missing" / "x.csv")


def test_a_failed_write_leaves_nothing_behind(tmp_path):
    out = tmp_path / "bundle.zip"
    with pytest.raises(RuntimeError), atomic_output(out) as partial:
        partial.write_bytes(b"half")
        raise RuntimeError("disk full")
    assert list(tmp_path.iterdir()) == []


def test_the_name_is_given_only_once_the_file_is_whole(tmp_path):
    out = tmp_path / "bundle.zip"
    with atomic_output(out) as partial:
        partial.write_bytes(b"part one")
        assert not out.exists() and partial.parent != tmp_path
        partial.write_bytes(b"whole")
    assert out.read_bytes() == b"whole" and list(tmp_path.iterdir()) == [out]


def test_a_file_that_appears_while_writing_is_kept(tmp_path):
    out = tmp_path / "report.html"
    with pytest.raises(OutputRefused, match="appeared"), atomic_output(out) as partial:
        partial.write_text("report")
        out.write_text("someone else's")
    assert out.read_text() == "someone else's"
    assert list(tmp_path.iterdir()) == [out]


def test_a_link_planted_while_writing_is_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    out = tmp_path / "out.csv"
    with pytest.raises(OutputRefused, match="symbolic link"), atomic_output(out, force=True) as p:
        p.write_text("x")
        out.symlink_to(victim)
    assert victim.read_text() == "keep"


def test_a_new_output_gets_the_umask_permissions_and_a_private_one_0600(tmp_path):
    shared = write_text(tmp_path / "report.html", "r")
    old = os.umask(0o022)
    os.umask(old)
    assert shared.stat().st_mode & 0o777 == 0o666 & ~old
    with atomic_output(tmp_path / "copy.duckdb", private=True) as partial:
        partial.write_bytes(b"x")
    assert Path(tmp_path / "copy.duckdb").stat().st_mode & 0o777 == 0o600
