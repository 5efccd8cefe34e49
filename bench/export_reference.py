"""Export a study's complete seeds as one bundle file with its study card (run where the
study ran: on the lent GPU machine at the end of the reference study).

    python bench/export_reference.py --out $OUT/reference-study.zip \
        --command "python -m jobs run studies/paper.yaml"

Complete seeds are those whose every (task, method) search is stored in full; a study cut
short keeps them and drops the seed in progress. The bundle is named as the bundled
reference ("Reference: paper protocol on the phantom (N seeds)") unless --name says
otherwise. Prints the bundle's size and the per-method test metrics of what it holds.
"""

from __future__ import annotations

import argparse
import json
import platform
import socket
import sys
import time
from importlib import metadata
from pathlib import Path

from engine.analysis.compare import finished_seeds
from store.bundle import export_study, read_card
from store.db import connect, default_store_path
from store.runs import list_studies, run_group_counts

REFERENCE_NAME = "Reference: paper protocol on the phantom ({n} seeds)"
PACKAGES = ("torch", "torchvision", "numpy", "pandas", "duckdb", "dlordinal", "scikit-learn")


def study_card(store: Path, study_id: str, command: str) -> dict:
    """Where, when and how the study ran: GPUs, versions, date, command, wall time."""
    card: dict = {
        "date": time.strftime("%Y-%m-%d"),
        "command": command,
        "python": platform.python_version(),
        "host": socket.gethostname(),
        "packages": {},
    }
    for name in PACKAGES:
        try:
            card["packages"][name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            card["packages"][name] = None
    try:
        import torch

        if torch.cuda.is_available():
            card["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
            card["cuda"] = torch.version.cuda
    except ImportError:  # pragma: no cover - torch is a requirement
        pass
    with connect(store, read_only=True) as con:
        job = con.execute(
            "SELECT started_at, finished_at, status FROM jobs WHERE study_id = ? "
            "ORDER BY created_at DESC LIMIT 1",
            [study_id],
        ).fetchone()
        runs = con.execute(
            "SELECT min(created_at), max(created_at), sum(duration_s), count(*), "
            "list(DISTINCT device) FROM runs WHERE study_id = ?",
            [study_id],
        ).fetchone()
    if job is not None:
        card["job"] = {"started_at": str(job[0]), "finished_at": str(job[1]), "status": job[2]}
        if job[0] is not None and runs[1] is not None:
            card["wall_s_to_last_run"] = round((runs[1] - job[0]).total_seconds(), 1)
    card["runs_stored"] = int(runs[3])
    card["run_seconds_total"] = round(float(runs[2] or 0.0), 1)
    card["devices"] = sorted(runs[4] or [])
    return card


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the bundle file to write (.zip)")
    parser.add_argument("--command", default="", help="the command that ran the study")
    parser.add_argument("--study", default=None, help="study id (default: the newest)")
    parser.add_argument("--name", default=None, help="name on import (default: the reference)")
    args = parser.parse_args()
    store = default_store_path()
    studies = list_studies(path=store)
    if studies.empty:
        sys.exit(f"no study in {store}")
    row = studies.iloc[0] if args.study is None else studies.set_index("study_id").loc[args.study]
    study_id = str(row["study_id"] if args.study is None else args.study)
    spec = json.loads(row["spec"])
    seeds = finished_seeds(run_group_counts([study_id], path=store), spec)
    if not seeds:
        sys.exit(f"study {study_id} has no complete seed yet")
    name = args.name or REFERENCE_NAME.format(n=len(seeds))
    card = study_card(store, study_id, args.command)
    card["seeds_planned"] = len(spec.get("seeds", []))
    card["seeds_complete"] = seeds
    out = export_study(study_id, args.out, seeds=seeds, card=card, name=name, path=store)
    meta = read_card(out)
    size = out.stat().st_size
    print(f"wrote {out}: {size / 2**20:.2f} MiB, {len(seeds)} complete seeds {seeds}")
    print(json.dumps(meta["rows"]))
    print(json.dumps(card, indent=1, default=str))


if __name__ == "__main__":
    main()
