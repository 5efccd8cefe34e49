"""Export a study's complete seeds as one bundle file with its study card (run where the
study ran: on the lent GPU machine at the end of the reference study).

    python bench/export_reference.py --out $OUT/reference-study.zip \
        --command "python -m jobs run engine/studies/paper.yaml"

Complete seeds are those whose every (task, method) search is stored in full; a study cut
short keeps them and drops the seed in progress. The bundle is named as the bundled
reference ("Reference: paper protocol on the phantom (N seeds)") unless --name says
otherwise. Prints the bundle's size and the per-method test metrics of what it holds.
"""

from __future__ import annotations

import argparse
import json
import sys

from jobs.services.results_io import export_bundle
from store.bundle import read_card
from store.db import StoreError, default_store_path

REFERENCE_NAME = "Reference: paper protocol on the phantom ({n} seeds)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the bundle file to write (.zip)")
    parser.add_argument("--command", default="", help="the command that ran the study")
    parser.add_argument("--study", default=None, help="study id (default: the newest)")
    parser.add_argument("--name", default=None, help="name on import (default: the reference)")
    args = parser.parse_args()
    store = default_store_path()
    try:
        # `softgrade export` writes the same bundle; only the default name differs here.
        name = args.name or REFERENCE_NAME
        done = export_bundle(args.study, args.out, name=name, command=args.command, path=store)
    except StoreError as exc:
        sys.exit(str(exc))
    meta = read_card(done.file)
    size = done.file.stat().st_size
    print(
        f"wrote {done.file}: {size / 2**20:.2f} MiB, {len(done.seeds)} complete seeds {done.seeds}"
    )
    print(json.dumps(meta["rows"]))
    print(json.dumps(done.card, indent=1, default=str))


if __name__ == "__main__":
    main()
