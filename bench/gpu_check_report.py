"""The GPU check's study report (bench/gpu_check.sh, part 5): for every job in the store of
``$SOFTGRADE_HOME``, whether it succeeded with every run stored and none failed, how many runs
diverged, and per task and method the mean validation AMAE of each study's runs side by side.

    SOFTGRADE_HOME=/tmp/gpu_check/home python3 bench/gpu_check_report.py report.md

Exit status 1 if a job did not succeed, a run failed or a planned run is missing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from store import jobs as store_jobs
from store import runs as store_runs
from store.db import default_store_path


def main() -> int:
    path = default_store_path()
    jobs = store_jobs.list_jobs(path=path).sort_values("created_at")
    lines, ok = [], True
    amae: dict[str, pd.Series] = {}
    for number, job in enumerate(jobs.itertuples(), start=1):
        runs = store_runs.list_runs([job.study_id], path=path)
        failed = store_runs.failed_runs([job.study_id], path=path)
        diverged = runs[runs["diverged_epoch"].notna()]
        good = job.status == "succeeded" and failed.empty and len(runs) == job.runs_total
        ok = ok and good
        lines.append(
            f"- study {number} ({job.job_id}): {job.status}, {len(runs)}/{job.runs_total} runs "
            f"stored, {len(failed)} failed, {len(diverged)} diverged"
            + ("" if good else "  <- FAIL")
        )
        for row in failed.itertuples():
            lines.append(f"  - failed: {row.task} {row.method} seed {row.seed}: {row.error_line}")
        for row in diverged.itertuples():
            lines.append(
                f"  - diverged: {row.task} {row.method} seed {row.seed} config "
                f"{row.config_index} at epoch {int(row.diverged_epoch)}"
            )
        amae[f"study {number}"] = runs.groupby(["task", "method"])["val_amae"].mean()
    if amae:
        table = pd.DataFrame(amae).round(3)
        lines += ["", "Mean validation AMAE of every run, per task and method:", ""]
        lines.append(table.to_markdown() if _has_tabulate() else table.to_string())
    text = "\n".join(lines) + "\n"
    Path(sys.argv[1] if len(sys.argv) > 1 else "gpu_check_report.md").write_text(text)
    print(text)
    return 0 if ok and len(jobs) else 1


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
