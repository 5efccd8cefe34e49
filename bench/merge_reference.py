"""Merge two parts of the reference study into one bundle (seeds run in separate sessions).

    .venv/bin/python bench/merge_reference.py store/examples/reference-study.zip PART.zip \
        --out store/examples/reference-study.zip

The parts must be the same protocol on the same dataset with no seed in both
(`store.bundle_merge.merge_bundles` says every reason when they are not). The merged bundle keeps
the first part's study id, is named as the bundled reference with its seed count, and its
card keeps each part's GPUs, date and command under that part's seeds.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from store.bundle import read_card
from store.bundle_merge import merge_bundles
from store.db import StoreError

REFERENCE_NAME = "Reference: paper protocol on the phantom ({n} seeds)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path, help="the first part (its study id is kept)")
    parser.add_argument("extra", type=Path, help="the part with the other seeds")
    parser.add_argument("--out", type=Path, required=True, help="the merged bundle (.zip)")
    args = parser.parse_args()
    try:
        seeds = sorted({*read_card(args.base)["seeds"], *read_card(args.extra)["seeds"]})
        # Written beside the output first: --out may be one of the parts.
        with tempfile.TemporaryDirectory(dir=args.out.parent) as tmp:
            merged = merge_bundles(
                args.base,
                args.extra,
                Path(tmp) / args.out.name,
                name=REFERENCE_NAME.format(n=len(seeds)),
            )
            merged.replace(args.out)
    except StoreError as exc:
        sys.exit(str(exc))
    meta = read_card(args.out)
    size = args.out.stat().st_size / 2**20
    print(f"wrote {args.out}: {size:.2f} MiB, {len(meta['seeds'])} seeds {meta['seeds']}")
    print(meta["rows"])


if __name__ == "__main__":
    main()
