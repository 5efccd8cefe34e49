"""A pruned search against the full one on the same seeds: cost and agreement.

    python bench/pruned_search.py engine/studies/paper.yaml --seeds 0,1,2 --pruner asha \\
        --out /tmp/pruned-bench [--slots-per-gpu 4] [--processes-per-gpu 1]

Trains the study twice into one store under ``--out`` (same dataset, splits and worker, so
both use the same compiled slots): once with the full search (``search: none``, the paper's
protocol) and once with ``search: {pruner: PRUNER}``, then writes ``--out/pruned_search.md``
(and ``.json``) with:

* GPU-seconds: the sum of the runs' walls (``runs.duration_s``) of each search, and the epochs
  trained (free of compile time: a slot process compiles once, inside its first run);
* the wall of each job;
* how often the same configuration is selected per (task, method, seed);
* the selected runs' test AMAE (the primary metric), pruned − full, per (task, method, seed);
* whether every verdict of the Statistics tab is unchanged: the paired table of
  `jobs.services.study_analysis.paired_table` (what ``softgrade stats`` and the tab show),
  its Bayesian ``verdict`` and its two Holm-adjusted significance decisions at 0.05, per
  (task, metric, pair of methods).

Two GPUs at once: ``--only full --out A`` on one and ``--only pruned --out B`` on the other
(same seeds; each trains one search into its own store), then ``--only pruned --out B
--full-out A`` reports (the pruned study is finished, so nothing trains again).

Resumable: run the same command again after a time limit cut it; finished runs are kept
(the store under ``--out``), a study already finished is not trained again, and the report is
written once both are done.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.analysis.metrics import METRIC_LABELS, PRIMARY_METRIC  # noqa: E402
from engine.config import SpecError, StudySpec  # noqa: E402
from engine.pruning import NO_PRUNER, PRUNERS, SearchSpec  # noqa: E402
from jobs.services import study_analysis  # noqa: E402
from store import jobs as store_jobs  # noqa: E402
from store import runs as store_runs  # noqa: E402
from store.db import connect, init_schema  # noqa: E402

log = logging.getLogger("pruned_search")
SIGNIFICANCE = 0.05
DECISIONS = ("verdict", "p_corrected_holm", "p_wilcoxon_holm")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("study", type=Path, help="study YAML, e.g. engine/studies/paper.yaml")
    p.add_argument("--seeds", required=True, help="comma-separated seeds, e.g. 0,1,2")
    p.add_argument("--pruner", required=True, choices=[k for k in PRUNERS if k != NO_PRUNER])
    p.add_argument("--out", type=Path, required=True, help="output folder (store, report)")
    p.add_argument("--min-epochs", type=int, default=None, help="first rung (epochs)")
    p.add_argument("--reduction-factor", type=int, default=None, help="η (default 3)")
    p.add_argument("--executor", default="local", choices=["local", "inline"])
    p.add_argument("--slots-per-gpu", type=int, default=0, help="0: from free GPU memory")
    p.add_argument("--processes-per-gpu", type=int, default=1)
    p.add_argument("--cpu-slots", type=int, default=1)
    p.add_argument("--threads-per-slot", type=int, default=1)
    p.add_argument(
        "--only",
        choices=["full", "pruned"],
        default=None,
        help="train only this search into --out (two GPUs at once: one each)",
    )
    p.add_argument(
        "--full-out",
        type=Path,
        default=None,
        help="with --only pruned: the --out of the full search's call, to report against",
    )
    return p.parse_args(argv)


def specs(args: argparse.Namespace) -> tuple[StudySpec, StudySpec]:
    """The full and the pruned study of the file, on the seeds asked for."""
    base = StudySpec.from_file(args.study)
    seeds = tuple(int(s) for s in args.seeds.split(",") if s.strip())
    search: dict[str, object] = {"pruner": args.pruner}
    if args.min_epochs is not None:
        search["min_epochs"] = args.min_epochs
    if args.reduction_factor is not None:
        search["reduction_factor"] = args.reduction_factor
    full = replace(base, name=f"{base.name} (full)", seeds=seeds, search=SearchSpec())
    pruned = replace(
        base,
        name=f"{base.name} (pruned, {args.pruner})",
        seeds=seeds,
        search=SearchSpec.from_value(search),
    )
    # Checked as a study file would be (replace runs no parser).
    return StudySpec.from_dict(full.to_dict()), StudySpec.from_dict(pruned.to_dict())


def study_of(spec: StudySpec, store: Path) -> str:
    """The study of ``spec`` in ``store``, queued now unless an earlier call queued it."""
    with connect(store, read_only=True) as con:
        row = con.execute("SELECT study_id FROM studies WHERE name = ?", [spec.name]).fetchone()
    if row:
        return row[0]
    store_jobs.enqueue_job(spec.to_dict(), request_id=f"bench-{spec.name}", path=store)
    return study_of(spec, store)


def train(args: argparse.Namespace, store: Path, home: Path, device: str) -> None:
    """Run every queued job of the store (a job cut by a time limit resumes)."""
    from jobs.worker.factory import make_executor
    from jobs.worker.runner import Worker

    store_jobs.requeue_stale_jobs(0.0, path=store)  # a call cut short left its job running
    executor = make_executor(
        args.executor,
        device=device,
        slots_per_gpu=args.slots_per_gpu,
        cpu_slots=args.cpu_slots,
        address=None,
        processes_per_gpu=args.processes_per_gpu,
        threads_per_slot=args.threads_per_slot,
    )
    worker = Worker(executor, store_path=store, home=home, executor_name=args.executor)
    try:
        while worker.run_once():
            pass
    finally:
        worker.close()


def job_of(study_id: str, store: Path) -> dict[str, object]:
    with connect(store, read_only=True) as con:
        row = con.execute(
            "SELECT status, epoch(finished_at - started_at) FROM jobs WHERE study_id = ? "
            "ORDER BY created_at DESC LIMIT 1",
            [study_id],
        ).fetchone()
    return {"status": row[0], "wall_s": row[1]}


def cost(runs: pd.DataFrame) -> dict[str, float]:
    return {
        "runs": len(runs),
        "pruned_runs": int(runs["pruned"].sum()),
        "gpu_s": float(runs["duration_s"].sum()),
        "epochs": int(runs["epochs_run"].sum()),
    }


def agreement(full_id: str, pruned_id: str, stores: dict[str, Path]) -> pd.DataFrame:
    """Per (task, method, seed): the selected configuration and test primary metric of each."""
    keys = ["task", "method", "seed"]
    picked = []
    for name, sid in (("full", full_id), ("pruned", pruned_id)):
        runs = store_runs.list_runs([sid], selected_only=True, path=stores[name])
        scores = study_analysis.per_run(sid, path=stores[name])
        frame = runs[[*keys, "config_index"]].merge(scores[[*keys, PRIMARY_METRIC]], on=keys)
        picked.append(frame.rename(columns={"config_index": name, PRIMARY_METRIC: f"{name}_test"}))
    both = picked[0].merge(picked[1], on=keys, how="outer")
    both["same_config"] = both["full"] == both["pruned"]
    both["test_diff"] = both["pruned_test"] - both["full_test"]
    return both.sort_values(keys).reset_index(drop=True)


def decisions(table: pd.DataFrame) -> pd.DataFrame:
    """Each paired comparison's verdict and its two significance decisions."""
    out = table[["task", "metric", "method_a", "method_b", "verdict"]].copy()
    for column in ("p_corrected_holm", "p_wilcoxon_holm"):
        out[column] = table[column] < SIGNIFICANCE
    return out


def verdicts(full_id: str, pruned_id: str, stores: dict[str, Path]) -> pd.DataFrame:
    keys = ["task", "metric", "method_a", "method_b"]
    full = decisions(study_analysis.paired_table(full_id, n_boot=0, path=stores["full"]))
    pruned = decisions(study_analysis.paired_table(pruned_id, n_boot=0, path=stores["pruned"]))
    both = full.merge(pruned, on=keys, how="outer", suffixes=("_full", "_pruned"))
    both["unchanged"] = True
    for column in DECISIONS:
        both["unchanged"] &= both[f"{column}_full"] == both[f"{column}_pruned"]
    return both


def report(
    args: argparse.Namespace, full: StudySpec, ids: dict[str, str], stores: dict[str, Path]
) -> str:
    runs = {k: store_runs.list_runs([sid], path=stores[k]) for k, sid in ids.items()}
    costs = {k: cost(r) for k, r in runs.items()}
    jobs = {k: job_of(sid, stores[k]) for k, sid in ids.items()}
    agree = agreement(ids["full"], ids["pruned"], stores)
    verdict = verdicts(ids["full"], ids["pruned"], stores)
    label = METRIC_LABELS[PRIMARY_METRIC]
    ratio = {
        key: costs["pruned"][key] / costs["full"][key] if costs["full"][key] else float("nan")
        for key in ("gpu_s", "epochs")
    }
    same = int(agree["same_config"].sum())
    diffs = agree["test_diff"].dropna()
    changed = verdict[~verdict["unchanged"]]
    lines = [
        f"# Pruned search ({args.pruner}) against the full search",
        "",
        f"Study file `{args.study}`, seeds {list(full.seeds)}, {len(full.tasks)} task(s) × "
        f"{len(full.methods)} method(s), budget {full.budget}, at most {full.max_epochs} epochs "
        f"(patience {full.patience}); the pruned search is "
        f"{runs_search_text(stores['pruned'], ids['pruned'], full.max_epochs)}.",
        "",
        "| | full | pruned | pruned / full |",
        "| --- | --- | --- | --- |",
        f"| runs | {costs['full']['runs']} | {costs['pruned']['runs']} "
        f"({costs['pruned']['pruned_runs']} pruned) | |",
        f"| GPU-seconds (sum of run walls) | {costs['full']['gpu_s']:.1f} | "
        f"{costs['pruned']['gpu_s']:.1f} | {ratio['gpu_s']:.3f} |",
        f"| epochs trained | {costs['full']['epochs']} | {costs['pruned']['epochs']} | "
        f"{ratio['epochs']:.3f} |",
        f"| job wall (s) | {_num(jobs['full']['wall_s'])} | {_num(jobs['pruned']['wall_s'])} | |",
        "",
        "| agreement | value |",
        "| --- | --- |",
        f"| same configuration selected | {same} of {len(agree)} (task, method, seed) |",
        f"| selected runs' test {label}, pruned − full: mean | {_num(diffs.mean())} |",
        f"| … mean absolute | {_num(diffs.abs().mean())} |",
        f"| … largest absolute | {_num(diffs.abs().max())} |",
        f"| Statistics-tab decisions unchanged (verdict, Holm corrected t, Holm Wilcoxon) | "
        f"{int(verdict['unchanged'].sum())} of {len(verdict)} comparisons |",
        "",
    ]
    if len(changed):
        lines += ["Changed decisions:", "", _markdown(changed), ""]
    lines += [f"Per (task, method, seed): selected configuration and test {label}", ""]
    lines += [_markdown(agree), ""]
    text = "\n".join(lines)
    (args.out / "pruned_search.json").write_text(
        json.dumps(
            {
                "costs": costs,
                "jobs": jobs,
                "ratio": ratio,
                "same_config": same,
                "groups": len(agree),
                "test_diff_mean": _float(diffs.mean()),
                "test_diff_abs_max": _float(diffs.abs().max()),
                "decisions_unchanged": int(verdict["unchanged"].sum()),
                "decisions": len(verdict),
                "study_ids": ids,
            },
            indent=2,
        )
    )
    return text


def runs_search_text(store: Path, study_id: str, max_epochs: int) -> str:
    with connect(store, read_only=True) as con:
        spec = json.loads(
            con.execute("SELECT spec FROM studies WHERE study_id = ?", [study_id]).fetchone()[0]
        )
    return SearchSpec.from_value(spec.get("search")).describe(max_epochs)


def _num(value: object) -> str:
    return "n/a" if value is None or pd.isna(value) else f"{float(value):.4f}"


def _float(value: object) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def _markdown(frame: pd.DataFrame) -> str:
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "| " + " | ".join("---" for _ in frame.columns) + " |"
    rows = ["| " + " | ".join(_cell(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join([head, rule, *rows])


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "" if pd.isna(value) else f"{value:.4f}"
    return str(value)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args = parse_args(argv)
    try:
        full, pruned = specs(args)
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    home = (args.out / "home").resolve()
    home.mkdir(exist_ok=True)
    store = home / "softgrade.duckdb"
    init_schema(store)
    wanted = {"full": full, "pruned": pruned}
    if args.only:
        wanted = {args.only: wanted[args.only]}
    ids = {k: study_of(spec, store) for k, spec in wanted.items()}
    stores = dict.fromkeys(ids, store)
    started = time.perf_counter()
    train(args, store, home, full.device)
    log.info("trained in %.1f s", time.perf_counter() - started)
    states = {k: job_of(sid, store)["status"] for k, sid in ids.items()}
    if any(s != "succeeded" for s in states.values()):
        print(f"not finished yet ({states}); run the same command again", file=sys.stderr)
        return 1
    if args.only == "pruned" and args.full_out is not None:
        stores["full"] = (args.full_out / "home" / "softgrade.duckdb").resolve()
        with connect(stores["full"], read_only=True) as con:
            row = con.execute("SELECT study_id FROM studies WHERE name = ?", [full.name]).fetchone()
        if row is None:
            print(f"no full study in {stores['full']}", file=sys.stderr)
            return 1
        ids["full"] = row[0]
    if set(ids) != {"full", "pruned"}:
        return 0  # one side only: its --out is the other call's --full-out
    text = report(args, full, ids, stores)
    (args.out / "pruned_search.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
