"""Where the command line's log records go: SoftGrade's own to the terminal, libraries' to a
log file.

A library logs what went wrong inside it, often with a traceback: pydicom logs its GDCM
decoder's ``AttributeError`` for a corrupt JPEG Lossless film, then raises, and the import
check names the film in one sentence. The traceback above that sentence tells a person
nothing they can act on. So `route_logs` (called once by ``python -m jobs``) sends records
of SoftGrade's own packages (`OWN_PACKAGES`) to the terminal, as before, and every record at
INFO and above, library records with their tracebacks and Python warnings included, to
``$SOFTGRADE_HOME/logs/softgrade.log`` (`log_file`; created when the first record comes).

Native decoders write to the process's standard error themselves, below Python's logging
(libjpeg inside GDCM prints "Corrupt JPEG data: ..."), and so do the import check's worker
processes. `native_stderr_to` points file descriptor 2 at the log file for the length of a
block, while Python's ``sys.stderr`` (progress, messages) keeps writing to the terminal.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

#: Logger names whose records a person reads on the terminal (the app's own packages).
OWN_PACKAGES = ("engine", "jobs", "store", "pages", "app", "__main__")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Marks the handlers `route_logs` installs, so calling it again replaces them.
_ROUTED = "_softgrade_route"


def log_file(home: Path) -> Path:
    """The command line's log file under a SoftGrade home."""
    return home / "logs" / "softgrade.log"


def is_own(logger_name: str) -> bool:
    """Whether a logger belongs to SoftGrade (its records go to the terminal)."""
    return logger_name.split(".", 1)[0] in OWN_PACKAGES


class _OwnRecords(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return is_own(record.name)


class _CurrentStderr(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is when a record comes (a test's capture,
    or the terminal while `native_stderr_to` has moved descriptor 2)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property  # type: ignore[override]
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


class _LazyFile(logging.FileHandler):
    """A file handler that creates its folder and file only when the first record comes."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, mode="a", encoding="utf-8", delay=True)

    def _open(self):  # noqa: ANN202 (logging's own signature)
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        # A home that cannot be written loses the library's record, never the command (the
        # default prints a traceback of its own to the terminal).
        pass


def route_logs(to_file: Path | None, *, level: int = logging.INFO) -> None:
    """SoftGrade's records at ``level`` and above to the terminal; every record at
    ``level`` and above (libraries' with their tracebacks, Python warnings) to ``to_file``
    when given. Calling it again replaces the routes it installed."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, _ROUTED, False)]:
        root.removeHandler(handler)
        handler.close()
    console = _CurrentStderr()
    console.addFilter(_OwnRecords())
    handlers: list[logging.Handler] = [console]
    if to_file is not None:
        handlers.append(_LazyFile(to_file))
    for handler in handlers:
        handler.setLevel(level)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        setattr(handler, _ROUTED, True)
        root.addHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(True)  # warnings.warn from libraries: to the file, not the terminal


@contextlib.contextmanager
def native_stderr_to(path: Path, what: str) -> Iterator[None]:
    """Descriptor 2 (native code's and child processes' standard error) appends to ``path``
    inside the block; ``sys.stderr`` keeps writing to the standard error of before.

    Args:
        path: The log file (created, with its folder; where it cannot be, nothing moves).
        what: A line written to the log first, saying what ran (e.g. the command).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        log_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError:  # a home that cannot be written: standard error stays as it is
        yield
        return
    sys.stderr.flush()
    saved_fd = os.dup(2)
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    os.write(log_fd, f"--- {stamp} {what}\n".encode())
    saved_stderr = sys.stderr
    terminal = os.fdopen(saved_fd, "w", buffering=1, encoding="utf-8", closefd=False)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    if _writes_to_fd2(saved_stderr):  # else (a test's capture) it already writes elsewhere
        sys.stderr = terminal
    try:
        yield
    finally:
        terminal.flush()
        sys.stderr = saved_stderr
        os.dup2(saved_fd, 2)
        os.close(saved_fd)


def _writes_to_fd2(stream: object) -> bool:
    try:
        return stream.fileno() == 2  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False
