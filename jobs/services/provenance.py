"""Where a study trained: code version, library versions and devices of the worker. The
study card's text for the terminal and as comment lines of exports is
`jobs.services.card_lines` (passed on here by name).

The worker calls `worker_environment` once (it has torch loaded already) and stores it with
each study it claims (`store.studies.record_environment`); the store itself never imports
torch.
"""

from __future__ import annotations

import functools
import logging
import platform
import socket
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

from jobs.services.card_lines import card_comments as card_comments
from jobs.services.card_lines import card_text as card_text

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[2]


def code_version(repo: Path = REPO) -> dict[str, Any]:
    """This checkout's version: the package version from pyproject.toml, and the git commit
    with a dirty flag (tracked files changed) when ``repo`` is a git checkout.

    Returns:
        code_version, git_commit (None outside git), git_dirty (None outside git).
    """
    out: dict[str, Any] = {"code_version": _package_version(repo), "git_commit": None}
    out["git_dirty"] = None
    if not (repo / ".git").exists():
        return out
    commit = _git(repo, "rev-parse", "HEAD")
    if commit is None:
        return out
    changes = _git(repo, "status", "--porcelain", "--untracked-files=no")
    out["git_commit"] = commit
    out["git_dirty"] = None if changes is None else bool(changes)
    return out


def _package_version(repo: Path) -> str | None:
    try:
        return metadata.version("softgrade")
    except metadata.PackageNotFoundError:
        pass
    try:
        return tomllib.loads((repo / "pyproject.toml").read_text())["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return None


def _git(repo: Path, *args: str) -> str | None:
    """A git command's output, or None when git is missing or fails (never raises)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        log.debug("git %s failed", args, exc_info=True)
        return None
    return done.stdout.strip()


def library_versions() -> dict[str, str | None]:
    """python, torch, cuda, cudnn, dlordinal, ultralytics (None where absent)."""
    import torch

    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": _cudnn_text(cudnn),
        "dlordinal": _installed("dlordinal"),
        "ultralytics": _installed("ultralytics"),
    }


def _cudnn_text(version: int | None) -> str | None:
    """cuDNN's integer version as text: 91002 -> '9.10.2' (8.x: 8902 -> '8.9.2')."""
    if not version:
        return None
    if version >= 10000:
        return f"{version // 10000}.{version // 100 % 100}.{version % 100}"
    return f"{version // 1000}.{version // 100 % 10}.{version % 100}"


def _installed(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def gpu_names(devices: list[str]) -> list[str] | None:
    """The names of this machine's GPUs among ``devices`` ('cuda:0', ...), one per entry."""
    import torch

    cuda = [d for d in devices if d.startswith("cuda")]
    if not cuda or not torch.cuda.is_available():
        return None
    names = []
    for device in cuda:
        index = int(device.split(":")[1]) if ":" in device else 0
        names.append(torch.cuda.get_device_name(index))
    return names


@functools.cache
def _static_environment() -> tuple[tuple[str, Any], ...]:
    return tuple({**code_version(), **library_versions()}.items())


def worker_environment(
    devices: list[str],
    *,
    local_devices: bool = True,
    executor: str | None = None,
    threads_per_slot: int | None = None,
    search_pruned: bool = False,
) -> dict[str, Any]:
    """Everything `store.studies.record_environment` keeps about this worker.

    Args:
        devices: The executor's devices (one entry per slot).
        local_devices: False when the slots run elsewhere (Ray), so this machine's GPU names
            would be wrong.
        executor: The executor's name ('local', 'inline', 'ray').
        threads_per_slot: torch's CPU threads in each CPU slot (CPU results depend on it).
        search_pruned: Whether the study's search stops configurations that have lost
            (``search: {pruner: ...}``, `engine.pruning`).
    """
    return {
        "worker_host": socket.gethostname(),
        "devices": list(devices),
        "gpu_names": gpu_names(devices) if local_devices else None,
        **dict(_static_environment()),
        "executor": executor,
        "threads_per_slot": threads_per_slot,
        "search_pruned": search_pruned,
    }
