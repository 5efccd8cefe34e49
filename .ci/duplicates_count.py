"""How many copied places the source holds, as `duplicates` lists them (issue 40).

    python .ci/duplicates_count.py [--show]

Runs ``duplicates --most 200`` over the checkout, drops the pairs whose files match a class
in `.duplicates-allow` (each named there with its reason) and prints the pairs left, then
how many of them are source-source: both sides in engine/, store/, jobs/, pages/ or app.py.
The figure the issue sets a goal for (under 40) is that last count; ``--show`` lists them.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from fnmatch import fnmatchcase
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOW_FILE = ROOT / ".duplicates-allow"
SOURCE = ("engine/", "store/", "jobs/", "pages/", "app.py")
ROW = re.compile(r"^D\d+ (\S+?):\d+-\d+ ~ (\S+?):\d+-\d+")


def allowed_classes(text: str) -> list[tuple[str, str]]:
    """The (glob, glob) classes of an allow-list; a line without its reason is refused."""
    classes = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        pair, _, reason = line.partition("#")
        left, tilde, right = pair.partition("~")
        if not tilde or not left.strip() or not right.strip() or not reason.strip():
            raise ValueError(f"{ALLOW_FILE.name} line {number}: want 'GLOB ~ GLOB  # reason'")
        classes.append((left.strip(), right.strip()))
    return classes


def listed_pairs(output: str) -> list[tuple[str, str, str]]:
    """(first file, second file, row) for each row `duplicates` printed."""
    return [(m[1], m[2], line) for line in output.splitlines() if (m := ROW.match(line))]


def is_allowed(first: str, second: str, classes: list[tuple[str, str]]) -> bool:
    """Whether the pair of files falls in one allow-listed class, in either order."""
    return any(
        (fnmatchcase(first, a) and fnmatchcase(second, b))
        or (fnmatchcase(first, b) and fnmatchcase(second, a))
        for a, b in classes
    )


def is_source(path: str) -> bool:
    """Whether a file is the application's source (not tests, bench, docs or data)."""
    return path.startswith(SOURCE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", action="store_true", help="list the source-source pairs")
    args = parser.parse_args(argv)
    command = ["duplicates", "--most", "200", "--seconds", "120"]
    output = subprocess.run(command, cwd=ROOT, capture_output=True, text=True).stdout
    classes = allowed_classes(ALLOW_FILE.read_text(encoding="utf-8"))
    pairs = listed_pairs(output)
    kept = [p for p in pairs if not is_allowed(p[0], p[1], classes)]
    source = [p for p in kept if is_source(p[0]) and is_source(p[1])]
    print(output.splitlines()[0] if output else "duplicates printed nothing")
    if re.search(r"^\(\+\d+ more pairs\)", output, re.MULTILINE):
        print("warning: --most 200 cut the list; the counts below are a floor")
    print(f"pairs listed: {len(pairs)}, allow-listed: {len(pairs) - len(kept)}")
    print(f"source-source pairs (engine/ store/ jobs/ pages/ app.py): {len(source)}")
    if args.show:
        for row in source:
            print("  " + row[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
