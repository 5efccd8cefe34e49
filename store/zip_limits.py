"""Limits a zip must keep before any of it is unpacked: the guard against zip bombs.

Both kinds of bundle are zips handed from one machine to another: study bundles
(`store.bundle`, ``import-study``) and demo bundles (`jobs.services.demo_bundle`, ``up --demo``). A
zip
can declare a 2 GiB member that compresses to a few kilobytes; unpacked whole it fills memory
or the disk. :func:`check_zip_limits` reads only the zip's directory (nothing is inflated) and
refuses, with one message, a zip whose members are too many, too large one by one or together,
or compressed far more than real bundle parts are (Parquet, PNG and model weights hardly
compress; a run of zeros compresses a thousandfold). :func:`copy_member` then unpacks one
member in chunks, never holding it whole and never writing more than the directory declared.

Pure Python (no store, no SQL): `jobs.services.demo_bundle` uses it too.
"""

from __future__ import annotations

import hashlib
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

_CHUNK = 1 << 20


class ZipLimitError(ValueError):
    """A zip breaks one of its :class:`ZipLimits` (the message names the member and limit)."""


@dataclass(frozen=True)
class ZipLimits:
    """What a bundle zip may hold.

    Attributes:
        max_entries: Members in the zip, folders included.
        max_entry_bytes: Unpacked size of any one member.
        max_total_bytes: Unpacked size of all members together.
        max_ratio: Unpacked / packed size of a member larger than ``ratio_floor_bytes``.
        ratio_floor_bytes: Members at most this large are not held to ``max_ratio`` (a small
            JSON card may compress well and cannot be a bomb).
    """

    max_entries: int
    max_entry_bytes: int
    max_total_bytes: int
    max_ratio: float = 100.0
    ratio_floor_bytes: int = 1 << 20


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB" if n >= 2**20 else f"{n:,} bytes"


def check_zip_limits(zf: zipfile.ZipFile, limits: ZipLimits, what: str) -> None:
    """Refuse ``zf`` if its directory breaks ``limits``; nothing is inflated.

    Args:
        zf: The open zip.
        limits: Its limits.
        what: The zip in words for the message (e.g. its path).

    Raises:
        ZipLimitError: Too many members, a member or the whole too large, or a member
            compressed beyond ``limits.max_ratio``.
    """
    infos = zf.infolist()
    if len(infos) > limits.max_entries:
        raise ZipLimitError(
            f"{what} holds {len(infos):,} files; a bundle holds at most {limits.max_entries:,}"
        )
    total = 0
    for info in infos:
        size = info.file_size
        if size > limits.max_entry_bytes:
            raise ZipLimitError(
                f"{what}: {info.filename} unpacks to {_mib(size)}; a bundle file may be at "
                f"most {_mib(limits.max_entry_bytes)}"
            )
        packed = max(info.compress_size, 1)
        if size > limits.ratio_floor_bytes and size / packed > limits.max_ratio:
            raise ZipLimitError(
                f"{what}: {info.filename} is compressed {size / packed:,.0f} to 1 "
                f"({_mib(packed)} unpacking to {_mib(size)}); bundle files compress at most "
                f"{limits.max_ratio:,.0f} to 1, so this looks like a zip bomb"
            )
        total += size
    if total > limits.max_total_bytes:
        raise ZipLimitError(
            f"{what} unpacks to {_mib(total)}; a bundle may unpack to at most "
            f"{_mib(limits.max_total_bytes)}"
        )


def copy_member(zf: zipfile.ZipFile, name: str, target: Path) -> str:
    """Unpack member ``name`` of ``zf`` to ``target`` in chunks; its SHA-256 (hex).

    zipfile stops at the size the directory declares (and checks the CRC), so after
    :func:`check_zip_limits` no member writes more than its limit.
    """
    digest = hashlib.sha256()
    with zf.open(name) as src, open(target, "wb") as out:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def _sha256_of(stream: IO[bytes]) -> str:
    digest = hashlib.sha256()
    while chunk := stream.read(_CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def member_sha256(zf: zipfile.ZipFile, name: str) -> str:
    """The SHA-256 (hex) of member ``name``, read in chunks."""
    with zf.open(name) as src:
        return _sha256_of(src)


def file_sha256(path: Path) -> str:
    """The SHA-256 (hex) of a file, read in chunks (what a bundle's manifest lists)."""
    with open(path, "rb") as src:
        return _sha256_of(src)
