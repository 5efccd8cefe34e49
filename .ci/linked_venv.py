"""Fill a fresh venv with a wheel's declared dependencies, hard-linked from the CI venv.

The installed-wheel check (.ci/installed_wheel.sh) must show that what the wheel declares is
enough to run it. Installing those dependencies afresh put a second copy of torch's CUDA build
(~7 GB with the rest) on CI's disk, beside the suite's own, and once ran CI out of space.
Linking the same files costs no disk and shows the same thing: only the distributions reachable
from the wheel's Requires-Dist (no extras) are in the new venv, and `pip check` there then
confirms every requirement among them is met.

A declared distribution whose files another distribution in the CI venv also wrote (the
headless OpenCV that ultralytics' opencv-python overwrites there) is installed afresh instead,
without dependencies, so the new venv holds what a user's install holds.

Usage: linked_venv.py WHEEL TARGET_VENV  (run with the CI venv's python)
"""

from __future__ import annotations

import email.parser
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def wheel_requirements(wheel: Path) -> list[Requirement]:
    """The Requires-Dist lines of a wheel's METADATA."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(name).decode("utf-8")
    message = email.parser.Parser().parsestr(text)
    return [Requirement(line) for line in message.get_all("Requires-Dist") or []]


def applies(requirement: Requirement, extras: Iterable[str]) -> bool:
    """Whether a requirement holds here for a distribution installed with these extras."""
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": extra}) for extra in [*extras, ""])


def dependency_closure(
    roots: list[Requirement], installed: dict[str, metadata.Distribution]
) -> dict[str, metadata.Distribution]:
    """Every installed distribution the roots need, with the extras they ask for."""
    needed: dict[str, metadata.Distribution] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    pending = [r for r in roots if applies(r, ())]
    missing: list[str] = []
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        key = (name, frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        if name not in installed:
            missing.append(str(requirement))
            continue
        dist = installed[name]
        needed[name] = dist
        for line in dist.requires or []:
            child = Requirement(line)
            if applies(child, requirement.extras):
                pending.append(child)
    if missing:
        sys.exit(f"not installed in the CI venv, so not linked: {', '.join(sorted(missing))}")
    return needed


def link_distribution(dist: metadata.Distribution, target: Path) -> int:
    """Hard-link a distribution's site-packages files into target; across filesystems (a
    temp folder on tmpfs) symlink them, which costs no disk either."""
    linked = 0
    for record in site_files(dist):
        source = Path(str(dist.locate_file(record)))
        if not source.is_file():
            continue
        destination = target / record
        destination.parent.mkdir(parents=True, exist_ok=True)
        if destination.exists():
            continue
        try:
            os.link(source, destination)
        except OSError:
            destination.symlink_to(source)
        linked += 1
    return linked


def site_files(dist: metadata.Distribution) -> list[metadata.PackagePath]:
    """The files a distribution's RECORD lists inside site-packages (not its scripts and data,
    which RECORD names from ``..``)."""
    return [f for f in dist.files or [] if f.parts and f.parts[0] != ".."]


def files_of(dist: metadata.Distribution) -> set[str]:
    """The site-packages paths of `site_files`, as text to compare."""
    return {str(f) for f in site_files(dist)}


def overwritten(
    closure: dict[str, metadata.Distribution], installed: dict[str, metadata.Distribution]
) -> list[str]:
    """Declared distributions sharing a file with an installed one outside the closure."""
    outside = set().union(*(files_of(d) for n, d in installed.items() if n not in closure))
    return sorted(name for name, dist in closure.items() if files_of(dist) & outside)


def site_packages(venv: Path) -> Path:
    """The target venv's purelib folder, as its own python names it."""
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    out = subprocess.run(
        [venv / "bin" / "python", "-c", code], capture_output=True, text=True, check=True
    )
    return Path(out.stdout.strip())


def main(argv: list[str]) -> None:
    wheel, venv = Path(argv[0]), Path(argv[1])
    installed: dict[str, metadata.Distribution] = {
        canonicalize_name(d.metadata["Name"]): d for d in metadata.distributions()
    }
    closure = dependency_closure(wheel_requirements(wheel), installed)
    fresh = overwritten(closure, installed)
    target = site_packages(venv)
    files = sum(link_distribution(d, target) for n, d in closure.items() if n not in fresh)
    print(f"linked {len(closure) - len(fresh)} declared distributions ({files} files)")
    if fresh:
        pins = [f"{closure[name].metadata['Name']}=={closure[name].version}" for name in fresh]
        print(f"installed afresh, their files overwritten in the CI venv: {', '.join(pins)}")
        pip = [str(venv / "bin" / "pip"), "install", "-q", "--no-deps", *pins]
        subprocess.run(pip, check=True)


if __name__ == "__main__":
    main(sys.argv[1:])
