"""The one way a command writes a file a person named: never over one, never through a link.

``softgrade export -o``, ``stats -o``, ``report -o`` (and its PDF), ``export-demo -o`` and
``backup -o`` all write through `atomic_output` (issue 39: ``export -o store.zip``, a link
to the store, destroyed the store). It:

- refuses a name that is a symbolic link, even a dangling one, whatever ``force`` says:
  writing "through" it would replace whatever it points at;
- refuses a name that exists already unless ``force`` (the ``--force`` flag), and a folder
  always;
- hands the caller a path inside a fresh private folder beside the target (same file
  system, so the final rename is atomic), then gives the finished file its name in one step:
  a file with the target's name is always whole, and a failed write leaves nothing behind.

Without ``force`` the final step links the file in (``os.link`` fails if the name was
taken meanwhile), so even a file that appears while the output is written is kept.

Pure Python (no SQL): it lives in ``store/`` beside the bundle and backup writers that are
its first users, and every layer that writes an output may import it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

#: Said when an output exists already.
FORCE_HINT = "pass --force to replace it"
#: The ``--force`` flag's help, the same on every command that writes a file.
FORCE_HELP = "replace the output file if it exists (a link or a folder is always refused)"


class OutputRefused(ValueError):
    """An output name SoftGrade will not write to (the message says why and what to do)."""


def check_output(path: Path | str, *, force: bool = False) -> Path:
    """``path`` as an absolute path in a folder that exists, if it may be written.

    Args:
        path: The output a person named (``-o``).
        force: Replace a regular file of that name (``--force``).

    Raises:
        OutputRefused: ``path`` is a link, a folder, an existing file without ``force``, or
            its folder does not exist.
    """
    given = Path(path).expanduser()
    target = Path(os.path.abspath(given))  # no resolve(): a link must be seen, not followed
    if target.is_symlink():
        raise OutputRefused(
            f"{given} is a symbolic link; SoftGrade never writes through a link (it would "
            "replace what the link points at). Name a new file; nothing was written"
        )
    if target.is_dir():
        raise OutputRefused(f"{given} is a folder; name a file in it. Nothing was written")
    if target.exists() and not force:
        raise OutputRefused(f"{given} exists already; {FORCE_HINT}. Nothing was written")
    if target.exists() and not target.is_file():
        raise OutputRefused(f"{given} is not a regular file; nothing was written")
    if not target.parent.is_dir():
        raise OutputRefused(f"{given}: no folder {target.parent}. Nothing was written")
    return target


@contextlib.contextmanager
def atomic_output(
    path: Path | str, *, force: bool = False, private: bool = False
) -> Iterator[Path]:
    """Yield a path to write the output to; on a clean exit, it becomes ``path`` at once.

    The yielded path does not exist yet (some writers, DuckDB's ``ATTACH`` and Chromium's
    ``--print-to-pdf`` among them, want to create the file themselves); it lies in a private
    folder beside ``path``, removed with anything left in it when the block ends.

    Args:
        path: The output a person named.
        force: Replace an existing regular file (never a link or a folder).
        private: Leave the file readable by this user only (a store backup); otherwise it
            gets the permissions the umask gives a new file.

    Raises:
        OutputRefused: As `check_output`, before anything is written, or at the end when a
            link or (without ``force``) a file took the name meanwhile; then nothing is left.
    """
    target = check_output(path, force=force)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    try:
        written = work / target.name
        yield written
        if not written.is_file():
            raise OutputRefused(f"{path}: nothing was written")
        os.chmod(written, 0o600 if private else 0o666 & ~_umask())
        _give_name(written, target, path, force)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_bytes(path: Path | str, data: bytes, *, force: bool = False) -> Path:
    """Write ``data`` to ``path`` through `atomic_output`; return the absolute path."""
    with atomic_output(path, force=force) as temp:
        temp.write_bytes(data)
    return check_target(path)


def write_text(path: Path | str, text: str, *, force: bool = False) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through `atomic_output`; return the absolute path."""
    return write_bytes(path, text.encode("utf-8"), force=force)


def check_target(path: Path | str) -> Path:
    """The absolute path `atomic_output` wrote ``path`` to."""
    return Path(os.path.abspath(Path(path).expanduser()))


def _give_name(written: Path, target: Path, given: Path | str, force: bool) -> None:
    if target.is_symlink():
        raise OutputRefused(f"{given} became a symbolic link while it was written; left alone")
    if force:
        os.replace(written, target)  # replaces a directory entry, never writes through one
        return
    try:
        os.link(written, target)  # fails if the name was taken meanwhile: nothing is lost
    except FileExistsError as exc:
        raise OutputRefused(
            f"{given} appeared while the output was written; it was left alone"
        ) from exc
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        if target.exists() or target.is_symlink():  # a file system without hard links
            raise OutputRefused(
                f"{given} appeared while the output was written; it was left alone"
            ) from exc
        os.replace(written, target)


def _umask() -> int:
    """This process's umask, read without changing it (``os.umask`` sets it, racing threads)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022
