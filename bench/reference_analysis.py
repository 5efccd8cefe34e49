"""What the bundled reference study shows, computed from the bundle with the engine's own
functions (engine.analysis: compare, stats, relationship), as the pages compute it.

    python bench/reference_analysis.py [store/examples/reference-study.zip]

The bundle is imported into a temporary store first, so the numbers come from the same
store reads the Compare and KL x CPPD pages use.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pandas as pd

from engine.analysis import compare, relationship, stats
from store import runs as store_runs
from store.bundle import REFERENCE_STUDY, import_study, read_card
from store.db import init_schema

pd.set_option("display.width", 160)


def show(title: str, frame: pd.DataFrame) -> None:
    print(f"\n## {title}\n{frame.to_string(index=False, float_format=lambda v: f'{v:.4g}')}")


def main() -> None:
    bundle = Path(sys.argv[1]) if len(sys.argv) > 1 else REFERENCE_STUDY
    card = read_card(bundle)
    print(json.dumps({k: card[k] for k in ("seeds", "rows")}))
    print(json.dumps(card["card"], default=str))
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "ref.duckdb"
        init_schema(store)
        study = import_study(bundle, path=store).study_id
        counts = store_runs.confusion_counts([study], path=store)
        runs = store_runs.list_runs([study], path=store)
        joint = store_runs.joint_predictions([study], path=store)
    per_run = compare.per_run_metrics(counts)
    summary = compare.summary_table(per_run, average=False)
    cols = ["task", "method", "n_seeds"] + [
        f"{m}_{s}" for m in ("qwk", "mae", "amae", "mmae", "ms", "ba") for s in ("mean", "std")
    ]
    show("Test metrics of the selected runs, mean and std over seeds", summary[cols])
    show(
        "Runs: epochs run and wall time in a lane, by task",
        runs.groupby("task")[["epochs_run", "best_epoch", "duration_s"]].mean().reset_index(),
    )

    for task in ("CPPD", "KL"):
        scores = compare.score_frame(per_run, "amae", [task])
        nominal = scores[scores["method"] == "nominal"].set_index("seed")["value"]
        rows = []
        for method, part in scores.groupby("method", sort=False):
            diff = part.set_index("seed")["value"] - nominal
            rows.append(
                {
                    "method": method,
                    "amae_mean": part["value"].mean(),
                    "minus_nominal": diff.mean(),
                    "seeds_better_than_nominal": int((diff < 0).sum()),
                }
            )
        show(f"{task}: AMAE against nominal (per seed, paired)", pd.DataFrame(rows))
        for correction in ("holm", "none"):
            result = stats.wilcoxon_pairwise(scores[["method", "seed", "value"]], correction)
            table = result.table
            vs = table[(table["method_a"] == "nominal") | (table["method_b"] == "nominal")]
            show(f"{task}: Wilcoxon on AMAE vs nominal, correction={correction}", vs)
            print(result.reading)
            if result.note:
                print(result.note)

    both = compare.score_frame(per_run, "amae")
    anova = stats.two_way_anova(both[["method", "task", "seed", "value"]])
    show("Two-way ANOVA of AMAE (method x task)", anova.table)
    print(anova.reading)
    tukey = stats.tukey_hsd(both[["method", "seed", "value"]], descending=True)
    show("Tukey HSD subsets of AMAE over both tasks (worst first)", tukey.subsets)
    print(tukey.reading)
    for task in ("CPPD", "KL"):
        one = compare.score_frame(per_run, "amae", [task])
        t = stats.tukey_hsd(one[["method", "seed", "value"]], descending=True)
        show(f"Tukey HSD subsets of AMAE, {task} only", t.subsets)

    _, results = relationship.relationship_by_seed(joint)
    rel = relationship.summarise_relationship(results)
    show("KL x CPPD: KLD and cell MAE per method (eps 1e-6)", rel.iloc[:, :6])
    sens = relationship.kld_sensitivity(results)
    table = sens.pivot_table(index="method", columns="eps", values="kld", aggfunc="mean")
    table.columns = [f"kld_eps_{c:g}" for c in table.columns]
    extra = sens.groupby("method")[["missed_mass", "kld_smoothed"]].mean()
    title = "KLD sensitivity: mean over seeds at three eps, missed mass, Jeffreys"
    show(title, table.join(extra).reset_index())
    kld_scores = relationship.relationship_scores(results, "kld")
    for correction in ("holm", "none"):
        w = stats.wilcoxon_pairwise(kld_scores, correction)
        print(f"\nKLD Wilcoxon ({correction}): {w.reading}")
    print(f"\nKruskal on KLD: {stats.kruskal_across_methods(kld_scores).reading}")
    print(f"Shapiro on KLD: {stats.shapiro_by_method(kld_scores).reading}")


if __name__ == "__main__":
    main()
