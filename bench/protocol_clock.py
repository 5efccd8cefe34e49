"""Where a study's wall went on its GPUs: first result, per-seed marginal wall, idle seconds.

    python bench/protocol_clock.py --store STORE --samples GPU.csv [--gpus 0,1,2,3]
        [--launched UNIX_S] [--json OUT.json]

Reads the store's finished runs (``runs.created_at``: when each run's result was written)
and the samples of `bench/gpu_sampler.py` for the GPUs the study used, and prints a Markdown
table: the first finished run after the launch, each seed's last finished run and its
marginal wall (since the previous seed's), runs per minute after the first result, and the
idle seconds (a sample below ``--idle-below`` percent) per GPU between the first and the last
finished run: issue 30's "idle under 2 % of the wall after the first run".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from store.db import connect  # noqa: E402

IDLE_BELOW = 50.0


def finished_runs(store: Path, study_name: str | None = None) -> pd.DataFrame:
    """Every finished run's seed, task, method and Unix time of its result (of the study
    named ``study_name`` where the store holds several, as `bench/pruned_search.py`'s does)."""
    where = "r.status = 'succeeded'" + (" AND s.name = ?" if study_name is not None else "")
    with connect(store, read_only=True) as con:
        return con.execute(
            "SELECT r.seed, r.task, r.method, r.duration_s, epoch(r.created_at) AS t "
            f"FROM runs r JOIN studies s USING (study_id) WHERE {where} ORDER BY r.created_at",
            [study_name] if study_name is not None else [],
        ).df()


def seed_walls(runs: pd.DataFrame, start: float) -> pd.DataFrame:
    """Per seed (in finishing order): runs, when its last run finished, and the marginal wall."""
    by_seed = runs.groupby("seed").agg(runs=("t", "size"), last=("t", "max")).sort_values("last")
    by_seed["finished_after_s"] = by_seed["last"] - start
    by_seed["marginal_s"] = by_seed["last"].diff().fillna(by_seed["last"].iloc[0] - start)
    return by_seed.reset_index()


def idle(samples: pd.DataFrame, gpus: list[int], begin: float, end: float, below: float) -> dict:
    """Idle seconds per GPU in [begin, end]: samples under ``below`` percent, each counted for
    the sampling period."""
    window = samples[(samples["t"] >= begin) & (samples["t"] <= end)]
    out = {}
    for gpu in gpus:
        own = window[window["gpu"] == gpu].sort_values("t")
        period = float(own["t"].diff().median()) if len(own) > 1 else 1.0
        low = own[own["util"] < below]
        out[gpu] = {
            "samples": len(own),
            "idle_samples": len(low),
            "idle_s": round(len(low) * period, 1),
            "mean_util": round(float(own["util"].mean()), 1) if len(own) else None,
            "idle_at_s": [round(float(t - begin), 1) for t in low["t"]],
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--samples", type=Path, required=True)
    parser.add_argument("--gpus", default="0", help="the GPUs the study trained on")
    parser.add_argument("--launched", type=float, default=None, help="Unix time of the launch")
    parser.add_argument("--idle-below", type=float, default=IDLE_BELOW)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--study-name", default=None, help="only this study's runs")
    args = parser.parse_args(argv)
    runs = finished_runs(args.store, args.study_name)
    if runs.empty:
        print("no finished run in the store", file=sys.stderr)
        return 1
    samples = pd.read_csv(args.samples)
    gpus = [int(g) for g in args.gpus.split(",")]
    start = args.launched if args.launched is not None else float(samples["t"].min())
    first, last = float(runs["t"].min()), float(runs["t"].max())
    seeds = seed_walls(runs, start)
    idle_by_gpu = idle(samples, gpus, first, last, args.idle_below)
    span = last - first
    lines = [
        f"launch → first finished run: {first - start:.1f} s; → last: {last - start:.1f} s; "
        f"{len(runs)} runs, {len(runs) / (span / 60):.1f} runs/min after the first result"
        if span > 0
        else f"launch → first finished run: {first - start:.1f} s",
        "",
        "| seed | runs | finished after (s) | marginal wall (s) |",
        "| --- | --- | --- | --- |",
        *(
            f"| {int(r.seed)} | {int(r.runs)} | {r.finished_after_s:.1f} | {r.marginal_s:.1f} |"
            for r in seeds.itertuples()
        ),
        "",
        f"| GPU | mean use (%) | idle s (< {args.idle_below:g} %) | idle share of {span:.0f} s |",
        "| --- | --- | --- | --- |",
        *(
            f"| {gpu} | {v['mean_util']} | {v['idle_s']} | {v['idle_s'] / span:.1%} |"
            for gpu, v in idle_by_gpu.items()
        ),
    ]
    print("\n".join(lines))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "first_s": first - start,
                    "last_s": last - start,
                    "runs": len(runs),
                    "seeds": seeds.to_dict("records"),
                    "idle": idle_by_gpu,
                },
                indent=2,
                default=float,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
