"""Print and export what a study left in the store: per-run timings and the per-method test
metrics of the selected runs (used after GPU runs, whose store must travel back small).

    python bench/export_study.py [--out DIR]
"""

from __future__ import annotations

import argparse
import zipfile
from pathlib import Path

from engine.analysis.compare import metrics_table, per_run_metrics
from store.db import default_store_path
from store.runs import confusion_counts, list_runs, list_studies


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None, help="folder for runs.csv and store.zip")
    args = parser.parse_args()
    path = default_store_path()
    studies = list_studies(path=path)
    ids = studies.study_id.tolist()
    runs = list_runs(ids, path=path)
    print(
        f"{len(runs)} runs stored; mean run {runs.duration_s.mean():.1f} s, "
        f"mean epochs {runs.epochs_run.mean():.1f}, total run time {runs.duration_s.sum():.0f} s"
    )
    print(runs.groupby("task")[["duration_s", "epochs_run"]].mean().round(2).to_string())
    table = metrics_table(per_run_metrics(confusion_counts(ids, path=path)))
    cols = [
        "task",
        "method",
        "n_seeds",
        "qwk_mean",
        "mae_mean",
        "amae_mean",
        "mmae_mean",
        "ms_mean",
        "ba_mean",
    ]
    print(table[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.out:
        out = Path(args.out)
        runs.to_csv(out / "runs.csv", index=False)
        with zipfile.ZipFile(out / "store.zip", "w", zipfile.ZIP_DEFLATED) as zf:
            zf.write(path, "softgrade.duckdb")


if __name__ == "__main__":
    main()
