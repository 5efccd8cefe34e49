"""Peak disk use of a command: how much more of a filesystem it filled at its fullest.

    python bench/disk_peak.py [--path /tmp] [--every 2] -- bash .ci/run

Samples the filesystem holding --path (default: the temp folder, where the tests write)
every --every seconds while the command runs, then prints the command's exit status, its
wall time, and the used space at the start, at the peak and at the end. Anything else
writing to that filesystem meanwhile counts too: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time

GIB = 1024**3


def used_bytes(path: str) -> int:
    return shutil.disk_usage(path).used


def watch(command: list[str], path: str, every: float) -> tuple[int, float, int, int, int]:
    """Run command; return its status, seconds, and used bytes at start, peak and end."""
    start = peak = used_bytes(path)
    began = time.monotonic()
    process = subprocess.Popen(command)
    while process.poll() is None:
        peak = max(peak, used_bytes(path))
        time.sleep(every)
    end = used_bytes(path)
    return process.returncode, time.monotonic() - began, start, max(peak, end), end


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", default=tempfile.gettempdir())
    parser.add_argument("--every", type=float, default=2.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to watch after --")
    status, seconds, start, peak, end = watch(command, args.path, args.every)
    print(
        f"disk_peak: {' '.join(command)} exited {status} after {seconds:.0f} s; "
        f"{args.path}'s filesystem: {start / GIB:.1f} GiB used at start, "
        f"peak +{(peak - start) / GIB:.1f} GiB, end +{(end - start) / GIB:.1f} GiB"
    )
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
