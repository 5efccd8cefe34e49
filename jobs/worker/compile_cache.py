"""A compile paid once per machine: torch.compile's caches kept under SOFTGRADE_HOME.

A slot compiles its training step once per task (~47-60 s on an H200, issue 30). Inductor
keeps what it compiled (FX graphs, AOTAutograd graphs, autotuning results) in
``TORCHINDUCTOR_CACHE_DIR`` and Triton its kernels in ``TRITON_CACHE_DIR``; by default both
live in ``/tmp/torchinductor_<user>``, which a fresh machine or a cleaned /tmp loses. Slots
point both at ``$SOFTGRADE_HOME/compile-cache/<key>/``, so the second study on a machine
(a new worker process) finds its compiled step on disk instead of compiling it again.

The key names everything a compiled artefact depends on that torch's own cache keys might
not see: the torch, Triton and torchvision versions, the device (GPU name and compute
capability, or the CPU), and a hash of the code that is compiled (`COMPILED_CODE`). Any
change of these gives a new folder, so a wrong artefact is never reused; folders unused for
`UNUSED_AFTER_DAYS` are removed when a slot starts (a folder per GPU kind may be in use on a
shared SOFTGRADE_HOME, so only age decides).

``SOFTGRADE_COMPILE_CACHE=off`` leaves torch's defaults (benchmarks of a cold start).

Inductor imports the Python it cached, so whoever can write in a cache folder runs code in
every slot (issue 39). The cache root and the key's folder (and its ``inductor`` and
``triton`` folders) are used only when they are real folders, not links, owned by the
running user with mode 0700 (`trust_problem`). One of this user's that others could only
read is closed to 0700; one that others could write (e.g. world-writable) may hold someone
else's files: it is removed and made again, empty and private, with a warning. One owned by
another user, or a link, is refused with one warning line, and the slot compiles with torch's
own cache folders instead.

An entry that cannot be read (a disk fault, a half-written file) makes inductor raise instead
of compiling afresh (measured on an H200: every run of the study failed). A run whose compile
fails that way empties the cache, says so in the log, and is trained once more from new
trainers (`recover_unreadable_cache`, `jobs.worker.slots`).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
import stat
import threading
import time
import traceback
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import torch

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
#: The folder under SOFTGRADE_HOME that holds one sub-folder per key.
CACHE_FOLDER = "compile-cache"
#: The modules whose code torch.compile traces: the training step and loss, the model and
#: its CUDA graphs, the stem's GEMM convolution and Triton max-pool, and the output heads.
COMPILED_CODE = (
    "engine/train.py",
    "engine/grade_model.py",
    "engine/train_graphs.py",
    "engine/stem.py",
    "engine/methods/heads.py",
)
#: Key folders not used for this long are removed when a slot configures its cache.
UNUSED_AFTER_DAYS = 30
#: Set to "off" to leave torch's default cache folders alone.
SWITCH_ENV = "SOFTGRADE_COMPILE_CACHE"
# Touched each time a process uses a key folder: its age says when it was last used.
_STAMP = "last-used"

_lock = threading.Lock()
_configured: dict[str, str] = {}  # this process's choice: {"root": ..., "folder": ...}
_emptied = [0]  # times this process emptied its cache after an unreadable entry
#: Where a compile failure's frames live: inductor's and Triton's code.
_COMPILER_FRAMES = (f"torch{os.sep}_inductor{os.sep}", f"{os.sep}triton{os.sep}")


@dataclass(frozen=True)
class CacheKey:
    """What a compiled artefact depends on beyond torch's own cache keys."""

    torch: str
    triton: str
    torchvision: str
    device: str
    code: str

    @property
    def folder_name(self) -> str:
        """One path component: ``torch-2.11.0_cu130-triton-3.6.0-...-NVIDIA_H200_sm90-<hash>``."""
        parts = [
            f"torch-{self.torch}",
            f"triton-{self.triton}",
            f"tv-{self.torchvision}",
            self.device,
            self.code,
        ]
        return re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(parts))


@dataclass(frozen=True)
class CacheFolder:
    """One key's folder: its name, size on disk and when a process last used it."""

    name: str
    path: Path
    size_bytes: int
    last_used: float


def code_hash(files: tuple[str, ...] = COMPILED_CODE, root: Path = REPO_ROOT) -> str:
    """A short SHA-256 over the compiled modules' source (their paths and bytes)."""
    digest = hashlib.sha256()
    for name in files:
        digest.update(name.encode() + b"\0")
        digest.update((root / name).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def device_tag(device: torch.device) -> str:
    """The device as the key names it: a GPU's name and compute capability, or 'cpu'."""
    if device.type != "cuda":
        return "cpu"
    index = device.index if device.index is not None else torch.cuda.current_device()
    major, minor = torch.cuda.get_device_capability(index)
    return f"{torch.cuda.get_device_name(index)} sm{major}{minor}"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "none"


def cache_key(device: torch.device) -> CacheKey:
    """The key of this process's compiled artefacts on ``device``."""
    return CacheKey(
        torch=torch.__version__,
        triton=_version("triton"),
        torchvision=_version("torchvision"),
        device=device_tag(device),
        code=code_hash(),
    )


def use_compile_cache(root: Path, device: torch.device) -> Path | None:
    """Point this process's inductor and Triton caches at ``root/<key>`` (once per process).

    Call before the first compile: lanes of one process share one environment, and inductor
    reads the folder when it first compiles. A later call with another root keeps the first
    (the folder a compiler already used). Returns the key's folder, or None when
    ``SOFTGRADE_COMPILE_CACHE=off``.
    """
    if os.environ.get(SWITCH_ENV, "").strip().lower() == "off":
        return None
    with _lock:
        if _configured:
            if _configured["root"] != str(root):
                log.warning("compile cache stays at %s (asked for %s)", _configured["folder"], root)
            return Path(_configured["folder"])
        key = cache_key(device)
        folder = root / key.folder_name
        # Inductor imports the code it cached: whoever can write here can run code in every
        # slot. The folders are this user's only (docs/security.md), as the store's are.
        root.parent.mkdir(parents=True, exist_ok=True)
        for private in (root, folder, folder / "inductor", folder / "triton"):
            refused = _private_folder(private)
            if refused:
                log.warning(
                    "compile cache not used: %s; compiling with torch's own cache folders",
                    refused,
                )
                return None
        warm = any((folder / "inductor").iterdir())
        (folder / _STAMP).touch()
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder / "inductor")
        os.environ["TRITON_CACHE_DIR"] = str(folder / "triton")
        _configured.update(root=str(root), folder=str(folder))
        log.info("compile cache %s (%s)", folder, "found" if warm else "new")
        for pruned in prune_compile_caches(root, keep=key.folder_name):
            log.info("removed compile cache %s, unused for %d days", pruned, UNUSED_AFTER_DAYS)
        return folder


def cache_generation() -> int:
    """How many times this process has emptied its compile cache (read before a compile, so
    a lane whose compile failed knows whether a sibling already emptied it)."""
    return _emptied[0]


def compile_failure(exc: BaseException) -> bool:
    """Whether ``exc`` (or one it was raised from) came out of the compiler: dynamo's backend
    failure, or a frame of inductor's or Triton's code (their cache loaders among them)."""
    seen: BaseException | None = exc
    while seen is not None:
        if type(seen).__name__ == "BackendCompilerFailed":
            return True
        frames = traceback.extract_tb(seen.__traceback__)
        if any(marker in f.filename for f in frames for marker in _COMPILER_FRAMES):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def recover_unreadable_cache(exc: BaseException, seen_generation: int) -> str | None:
    """After a failed compile, make the compile cache this process uses empty again.

    Inductor raises on an entry it cannot read (a disk fault, a half-written file: e.g.
    ``UnicodeDecodeError`` from its pad-mm cache, measured on an H200, bench/RESULTS.md)
    instead of compiling afresh. Returns why the run may be tried once more (the cache was
    emptied now, or by a sibling lane since ``seen_generation``), or None: no cache in use,
    or ``exc`` did not come out of the compiler.
    """
    if not _configured or not compile_failure(exc):
        return None
    with _lock:
        folder = Path(_configured["folder"])
        if _emptied[0] != seen_generation:
            return f"compile cache {folder} was emptied by another lane"
        _emptied[0] += 1
        # Renamed aside first, then removed: one rename wins among slot processes sharing the
        # folder, and a process still reading the old files keeps them until it closes them.
        aside = folder.with_name(f"{folder.name}.unreadable-{os.getpid()}-{time.time_ns()}")
        with contextlib.suppress(FileNotFoundError):
            folder.rename(aside)
        shutil.rmtree(aside, ignore_errors=True)
        folder.parent.mkdir(parents=True, exist_ok=True)
        for private in (folder, folder / "inductor", folder / "triton"):
            refused = _private_folder(private)
            if refused:  # cannot happen for a folder this process just made; say so if it does
                return f"compile cache {folder} unreadable and not made again: {refused}"
        (folder / _STAMP).touch()
        return (
            f"compile cache {folder} could not be read ({_root_cause(exc)}); emptied, "
            "compiling afresh"
        )


def _root_cause(exc: BaseException) -> str:
    """The first error of ``exc``'s chain in one short line (dynamo's own message only says
    which backend raised)."""
    seen = exc
    while True:
        inner = getattr(seen, "inner_exception", None) or seen.__cause__ or seen.__context__
        if not isinstance(inner, BaseException) or inner is seen:
            break
        seen = inner
    lines = str(seen).strip().splitlines()
    return f"{type(seen).__name__}: {lines[0][:160]}" if lines else type(seen).__name__


def trust_problem(folder: Path) -> str | None:
    """Why ``folder`` may not hold code this process imports, or None: it must be a real
    folder (not a link), owned by the running user, with mode 0700."""
    try:
        info = folder.lstat()
    except FileNotFoundError:
        return f"{folder} does not exist"
    if stat.S_ISLNK(info.st_mode):
        return f"{folder} is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return f"{folder} is not a folder"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return f"{folder} is owned by user id {info.st_uid}, not this user ({os.getuid()})"
    if info.st_mode & 0o777 != 0o700:
        return f"{folder} has mode {info.st_mode & 0o777:04o}, not 0700"
    return None


def _private_folder(folder: Path) -> str | None:
    """Make ``folder`` (0700) or check the one there; None when it may be used, else why
    not. This user's folder others could write is removed and made again, empty."""
    if not folder.exists() and not folder.is_symlink():
        try:
            folder.mkdir(mode=0o700)
            os.chmod(folder, 0o700)  # whatever the umask
            return None
        except FileExistsError:  # another slot process made it just now: check theirs
            pass
    problem = trust_problem(folder)
    if problem is None:
        return None
    info = folder.lstat()
    mine = not hasattr(os, "getuid") or info.st_uid == os.getuid()
    if not mine or stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        return problem
    if info.st_mode & 0o022 == 0:  # only readable by others (a cache made before): closed
        os.chmod(folder, 0o700)
        return None
    log.warning("compile cache %s: made again, empty (%s)", folder, problem)
    shutil.rmtree(folder)
    folder.mkdir(mode=0o700)
    os.chmod(folder, 0o700)
    return None


def list_compile_caches(root: Path) -> list[CacheFolder]:
    """Every key folder under ``root``, most recently used first."""
    if not root.is_dir():
        return []
    found = []
    for folder in root.iterdir():
        if not folder.is_dir():
            continue
        stamp = folder / _STAMP
        last_used = stamp.stat().st_mtime if stamp.exists() else folder.stat().st_mtime
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        found.append(CacheFolder(folder.name, folder, size, last_used))
    return sorted(found, key=lambda c: c.last_used, reverse=True)


def prune_compile_caches(
    root: Path, *, keep: str, unused_after_s: float = UNUSED_AFTER_DAYS * 86400.0
) -> list[str]:
    """Remove key folders (other than ``keep``) last used more than ``unused_after_s`` ago."""
    now = time.time()
    pruned = []
    for cache in list_compile_caches(root):
        if cache.name != keep and now - cache.last_used > unused_after_s:
            shutil.rmtree(cache.path, ignore_errors=True)
            pruned.append(cache.name)
    return pruned
