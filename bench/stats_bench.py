"""Time the reviewer-grade statistics (issue 21) on the bundled reference study and print the
numbers they give.

    python bench/stats_bench.py [store/examples/reference-study.zip] [--repeat 3]

The bundle is imported into a temporary store; each step runs once to warm up (imports,
DuckDB caches) and is then timed ``--repeat`` times (best shown). Target: the full paired
table (6 metrics × 10 pairs × 2 tasks, corrected t, Wilcoxon, effect sizes) < 2 s warm on
2 cores.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.analysis import compare, designs, paired
from jobs.services import study_analysis
from store.bundle import REFERENCE_STUDY, import_study
from store.db import init_schema

pd.set_option("display.width", 200)
pd.set_option("display.max_columns", 30)


def timed(label: str, step: Callable[[], object], repeat: int) -> object:
    """Run ``step`` once to warm up, then ``repeat`` times; print the best time."""
    result = step()
    best = min(_seconds(step) for _ in range(repeat))
    print(f"{label:<58} {best:7.3f} s")
    return result


def _seconds(step: Callable[[], object]) -> float:
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle", nargs="?", default=str(REFERENCE_STUDY))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "ref.duckdb"
        init_schema(store)
        study = import_study(args.bundle, path=store).study_id
        r = args.repeat
        table = timed(
            "full paired table (6 metrics, no bootstrap)",
            lambda: study_analysis.paired_table(study, n_boot=0, path=store),
            r,
        )
        boot = timed(
            "AMAE paired table + hierarchical bootstrap (1000)",
            lambda: study_analysis.paired_table(study, metrics=("amae",), path=store),
            r,
        )
        timed(
            "Table 4 with corrected CIs",
            lambda: study_analysis.mean_intervals(study, path=store),
            r,
        )
        anova = timed(
            "seed-blocked + OLS ANOVA of AMAE",
            lambda: study_analysis.blocked_anova(study, path=store),
            r,
        )
        per_run = study_analysis.per_run(study, path=store)
        timed("Friedman, every task and metric", lambda: designs.friedman_table(per_run), r)
        timed("CD ranking, every grade metric", lambda: designs.critical_differences(per_run), r)
        kld = timed(
            "KLD decomposition", lambda: study_analysis.kld_decomposition(study, path=store), r
        )
        truth = timed(
            "against true grades", lambda: study_analysis.against_truth(study, path=store), r
        )
        ece = timed(
            "ECE interval and calibrated floor (100 + 100)",
            lambda: study_analysis.calibration_uncertainty(study, path=store),
            r,
        )
        temp = timed(
            "temperature scaling of 200 runs",
            lambda: study_analysis.temperature_scaled(study, path=store),
            r,
        )
        power = timed(
            "seeds for 80 % power (AMAE, effect 0.05)",
            lambda: study_analysis.seeds_needed(study, effect=0.05, path=store),
            r,
        )
    print("\n## Primary endpoint (AMAE soft − nominal; Holm over 8 on the corrected p)")
    print(paired.primary_endpoint(table).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    keys = ["task", "method_a", "method_b"]
    cols = [*keys, "mean_diff", "ci_low", "ci_high", "boot_ci_low", "boot_ci_high",
            "within_seed_sd", "sd_diff", "p_corrected", "p_naive_t", "p_wilcoxon",
            "p_wilcoxon_holm", "d_z", "rank_biserial"]  # fmt: skip
    vs_nominal = boot[boot["method_a"] == "nominal"]
    print("\n## AMAE vs nominal, every interval")
    print(vs_nominal[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print("\n## ANOVA of AMAE: seed-blocked, then as in the paper (OLS)")
    print(anova["blocked"].table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(anova["blocked"].reading)
    print(anova["ols"].table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print("\n## KLD by the chain rule")
    print(kld.drop(columns="reading").to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    for line in kld["reading"]:
        print("-", line)
    print("\n## AMAE and QWK on recorded vs true grades")
    shown = truth[truth["metric"].isin(["amae", "qwk"])]
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print("\n## ECE with its interval and the calibrated floor")
    print(ece.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print("\n## Temperature scaling (mean over seeds)")
    cols = ["temperature", "ece_before", "ece_after", "rps_before", "rps_after"]
    print(
        temp.groupby(["task", "method"])[cols].mean().to_string(float_format=lambda v: f"{v:.4g}")
    )
    print("\n## Seeds for 80 % power, AMAE vs nominal (NA: unreachable with any number)")
    print(
        power[power["method_a"] == "nominal"].to_string(
            index=False, float_format=lambda v: f"{v:.3g}"
        )
    )
    print(f"\nper-run rows: {len(per_run)}; Table 4 tasks: {compare.task_order(per_run['task'])}")


if __name__ == "__main__":
    main()
