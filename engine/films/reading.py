"""Reading a film's file without trusting it: inside its folder, a regular file, capped.

An imported folder is chosen by a person (inside the data roots, `jobs.services.access`), but what
it
holds and what its labels CSV lists are not: a row may name ``../outside.png`` or an
absolute path, a file or a sub-folder may be a link leading out of the folder, a "film" may
be a FIFO (reading it blocks for ever), a link to ``/dev/zero`` (reading it never ends) or a
sparse file of gigabytes. `film_path_refusal` says what is wrong with a path **before** it is
opened; `read_capped` opens only a regular file, without following a last link and without
blocking, and reads at most `MAX_FILM_BYTES` + 1 bytes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

# Bytes read from one film file at most. An uncompressed 16-bit film at the pixel cap
# (`engine.films.decode.MAX_PIXEL_BYTES`, 128 MiB) fits; uploads are capped lower still
# (`jobs up --max-upload-mb`, 64 MB by default).
MAX_FILM_BYTES = 256 * 2**20


#: `FilmRefused.reason` of a listed name that is a link to nothing (a ``missing_file``).
DANGLING_LINK = "a link to a file that does not exist"


class FilmRefused(ValueError):
    """A film that is not read or not decoded, with the import check's kind of problem.

    Attributes:
        kind: A kind of `engine.films.problems.PROBLEM_KINDS`.
        reason: What is wrong, without the file's name (the report names the file).
    """

    def __init__(self, kind: str, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.reason = reason or message


def film_path_refusal(root: Path, name: str, *, real_root: str | None = None) -> FilmRefused | None:
    """What keeps ``name`` (as a labels CSV or a folder walk lists it) from being read as a
    film of ``root``, or None when it may be read. Nothing is opened.

    Refused: an absolute path, a path with ``..`` out of the folder, a path whose links (of
    the file or of any folder on the way) lead outside the folder's real path, and anything
    that is not a regular file (a FIFO, a device, a socket, a folder). ``real_root`` is
    ``os.path.realpath(root)`` when the caller checks many names at once (resolved here
    otherwise).
    """
    text = name.replace("\\", "/")
    if text.startswith("/") or (len(text) > 2 and text[1] == ":" and text[2] == "/"):
        return _outside(name, "an absolute path, outside the imported folder")
    if ".." in text.split("/"):
        return _outside(name, "a path that climbs out of the imported folder with '..'")
    real_root = os.path.realpath(root) if real_root is None else real_root
    real = os.path.realpath(os.path.join(real_root, text))
    if os.path.commonpath([real_root, real]) != real_root:
        return _outside(
            name,
            "a link (or a folder on its path that is a link) leading outside the imported folder",
        )
    try:
        info = os.stat(real)
    except OSError as exc:
        return FilmRefused(
            "missing_file",
            f"{name}: cannot be found ({exc.strerror or exc})",
            DANGLING_LINK if os.path.islink(os.path.join(root, text)) else "not in the folder",
        )
    return _not_regular(name, info.st_mode) or _too_large(name, info.st_size)


def read_capped(path: Path | str, name: str = "", cap: int = MAX_FILM_BYTES) -> bytes:
    """The bytes of a regular file, at most ``cap`` of them.

    The real path is opened without following a link (one swapped in after the check is
    refused) and without blocking (a FIFO swapped in returns at once), its type and size
    are checked on the open file, and at most ``cap + 1`` bytes are read, so a file that
    grows, or lies about its size, is refused without being read whole.

    Raises:
        FilmRefused: Not a regular file, over ``cap`` bytes, or not readable.
    """
    name = name or Path(path).name
    real = os.path.realpath(path)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        raise FilmRefused(
            "unreadable", f"{name}: cannot be read ({exc.strerror or exc})", "cannot be read"
        ) from exc
    with os.fdopen(fd, "rb", buffering=0) as handle:
        info = os.fstat(fd)
        refusal = _not_regular(name, info.st_mode) or _too_large(name, info.st_size, cap)
        if refusal is not None:
            raise refusal
        data = _read_up_to(handle, cap + 1)
    if len(data) > cap:
        raise _too_large(name, len(data), cap) or FilmRefused("too_large", name)
    return data


def _read_up_to(handle: object, limit: int) -> bytes:
    chunks, left = [], limit
    while left > 0:
        chunk = handle.read(min(left, 8 * 2**20))  # type: ignore[attr-defined]
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _outside(name: str, what: str) -> FilmRefused:
    reason = f"{what}; it is not read"
    return FilmRefused("outside_folder", f"{name}: {reason}", reason)


def _not_regular(name: str, mode: int) -> FilmRefused | None:
    if stat.S_ISREG(mode):
        return None
    what = (
        "a FIFO (named pipe)"
        if stat.S_ISFIFO(mode)
        else "a folder"
        if stat.S_ISDIR(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "not a regular file"
    )
    reason = f"{what}, not a film file; it is not read"
    return FilmRefused("not_a_file", f"{name}: {reason}", reason)


def _too_large(name: str, size: int, cap: int = MAX_FILM_BYTES) -> FilmRefused | None:
    if size <= cap:
        return None
    reason = f"{size / 2**20:,.0f} MiB or more; a film file may have at most {cap / 2**20:,.0f} MiB"
    return FilmRefused("too_large", f"{name}: {reason}", reason)
