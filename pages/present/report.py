"""The study report: one self-contained HTML file of a study's analysis (issue 22).

``python -m pages.present.report STUDY_ID [STUDY_ID ...] -o report.html`` writes it; `python
-m jobs report` starts this module as a child process (jobs/ owns process control and never
imports pages/), and the Compare page's "Report" button calls :func:`build_report`.

Every number comes from `jobs.study_analysis` (one call per statistic) or the engine
functions the pages use; every chart is a `pages.present.charts` / `science_charts` builder
rendered to inline SVG (`pages.present.report_html.chart_svg`). The file fetches nothing.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import math
import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from engine import methods as soft_labels
from engine.analysis import compare, explorer, kld_parts, paired, relationship
from engine.analysis import probability_metrics as pm
from engine.analysis.ranking import BLOCKING_SENTENCE, critical_difference
from engine.config import MAX_BUDGET
from engine.vocab import SPLIT_RULE, TEST_FRACTION, VAL_FRACTION
from jobs import provenance, study_analysis
from jobs.export_cards import export_cards
from pages.present import charts, reviewer_tables, science_charts, stat_tables, tables
from pages.present import report_html as rh
from store import analysis as store_analysis
from store import runs as store_runs
from store import studies as store_studies
from store.db import default_store_path

BAD_INPUT = 2
PRIMARY = paired.PRIMARY_METRIC
#: Hierarchical bootstrap replicates of the report's paired table (the CLI's default).
N_BOOT = study_analysis.DEFAULT_BOOTSTRAP
#: Every section of the report, in order: id -> heading (tests find each by its heading).
SECTIONS: dict[str, str] = {
    "studies": "Studies",
    "table4": "Table 4: test metrics with 95 % confidence intervals",
    "paired": "Paired comparisons",
    "critical-difference": "Critical-difference diagram",
    "distributions": "Distributions over seeds",
    "reliability": "Reliability diagram",
    "kl-cppd": "KL × CPPD table, residuals and KLD",
    "curves": "Learning curves of the selected runs",
    "methods": "Methods",
}
PAIRED_SHOWN = {
    "task": "Task",
    "method_a": "A",
    "method_b": "B",
    "n_seeds": "Seeds",
    "mean_diff": "Mean A − B",
    "corrected_ci": "Corrected 95 % CI",
    "p_corrected": "p corrected",
    "rho_assumed": "ρ assumed",
    "p_strip": "p at r = 0 · 0.1 · 0.2",
    "r_break_even": "Break-even r (p = 0.05)",
    "p_corrected_holm": "p corrected (Holm)",
    "p_wilcoxon": "p Wilcoxon (exact)",
    "p_wilcoxon_holm": "p Wilcoxon (Holm)",
    "d_z": "d_z",
    "rank_biserial": "rank-biserial r",
    "p_bayes_a_better": "P(A better)",
    "p_bayes_equivalent": "P(equivalent)",
    "p_bayes_b_better": "P(B better)",
    "p_tost": "TOST p",
    "verdict": "Verdict",
}
BOOTSTRAP_SHOWN = {
    "task": "Task",
    "method_a": "A",
    "method_b": "B",
    "mean_diff": "Mean A − B",
    "boot_ci": "Film-sampling bootstrap 95 % interval",
    "within_seed_sd": "Within-seed sd",
}
#: Card fields that say what trained a study (its own worker's, or a bundle's).
TRAINING_CARD_FIELDS = (
    "code",
    "python",
    "torch",
    "CUDA",
    "cuDNN",
    "dlordinal",
    "bundle python",
    "bundle packages",
    "bundle cuda",
    "bundle gpus",
)
ANALYSIS_PACKAGES = ("numpy", "scipy", "pandas", "scikit-posthocs", "altair")


class ReportInputError(ValueError):
    """Input the report cannot be written from (its message is the one line shown)."""


def build_report(study_ids: Sequence[str], *, path: Path | str | None = None) -> str:
    """The report of ``study_ids`` as one HTML document.

    Raises:
        ReportInputError: no study named, or a study the store does not hold.
    """
    store = Path(path) if path is not None else default_store_path()
    check_studies(study_ids, store)
    sections = [
        rh.section(key, SECTIONS[key], build(study_ids, store)) for key, build in _BUILDERS.items()
    ]
    names = ", ".join(store_studies.get_study(s, path=store).name for s in study_ids)
    stamp = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    return rh.page(f"SoftGrade report: {names}", f"Written {stamp} from {store.name}.", sections)


def file_name(study_ids: Sequence[str]) -> str:
    """The report's download name: ``softgrade_report_<first study>[_and_N_more].html``."""
    more = f"_and_{len(study_ids) - 1}_more" if len(study_ids) > 1 else ""
    return f"softgrade_report_{study_ids[0] if study_ids else 'none'}{more}.html"


def check_studies(study_ids: Sequence[str], store: Path) -> None:
    """Raise `ReportInputError` unless every study is in the store."""
    if not study_ids:
        raise ReportInputError("name at least one study (`python -m jobs stats --list`)")
    if not store.exists():
        raise ReportInputError(f"no store at {store}")
    for study_id in study_ids:
        if not store_analysis.study_exists(study_id, path=store):
            raise ReportInputError(
                f"no study {study_id!r} in {store}; `python -m jobs stats --list` lists them"
            )


def _per_study(
    study_ids: Sequence[str], store: Path, part: Callable[[str, Path], list[str]]
) -> list[str]:
    """``part`` of each study, under the study's name when there are several."""
    out: list[str] = []
    for study_id in study_ids:
        if len(study_ids) > 1:
            name = store_studies.get_study(study_id, path=store).name
            out.append(rh.heading(f"{name} ({study_id})"))  # names need not be unique
        out.extend(part(study_id, store))
    return out


# -- sections ------------------------------------------------------------------------------


def studies_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """Each study's card (where and how it ran) and its notes."""
    out: list[str] = []
    for study_id, card in zip(study_ids, export_cards(str(store), study_ids), strict=True):
        notes = store_studies.get_study(study_id, path=store).notes
        out += [rh.heading(card.get("study", study_id)), rh.card_html(dict(card))]
        out.append(rh.paragraph(f"Notes: {notes}" if notes else "No notes.", note=not notes))
    return out


def table4_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """Table 4: mean and corrected 95 % interval per task, method and metric."""

    def part(study_id: str, store: Path) -> list[str]:
        intervals = study_analysis.mean_intervals(study_id, path=store)
        return [rh.table_html(table4_frame(intervals))]

    return [*_per_study(study_ids, store, part), rh.paragraph(paired.MEAN_CI_KIND, note=True)]


def table4_frame(intervals: pd.DataFrame) -> pd.DataFrame:
    """``mean [low, high]`` per task and method (rows) and metric (columns)."""
    if intervals.empty:
        return intervals
    cells = intervals.assign(
        cell=[f"{r.mean:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]" for r in intervals.itertuples()],
        header=intervals["metric"].map(tables.metric_header),
        Method=intervals["method"].map(tables.method_title),
    )
    wide = cells.pivot_table(
        index=["task", "Method", "n_seeds"],
        columns="header",
        values="cell",
        aggfunc="first",
        sort=False,
    )
    wide.columns.name = None
    headers = [tables.metric_header(m) for m in dict.fromkeys(intervals["metric"])]
    return wide[headers].reset_index().rename(columns={"task": "Task", "n_seeds": "Seeds"})


def paired_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """The primary endpoint, then every AMAE pair with its reading."""

    def part(study_id: str, store: Path) -> list[str]:
        table = study_analysis.paired_table(study_id, metrics=(PRIMARY,), n_boot=N_BOOT, path=store)
        if table.empty:
            return [rh.paragraph("No two methods have selected runs yet.", note=True)]
        endpoint = paired.primary_endpoint(table)
        return [
            rh.paragraph(tests_line(table, endpoint), note=True),
            rh.heading(f"Primary endpoint ({paired.PRIMARY_FAMILY})", 4),
            rh.table_html(endpoint_frame(endpoint)),
            rh.heading("Every pair of methods, AMAE (exploratory: Holm within each task)", 4),
            rh.table_html(paired_frame(table)),
            rh.bullets(paired_readings(table)),
            rh.heading(
                "Film-sampling bootstrap (seeds taken as independent; not an interval for the "
                "comparison)",
                4,
            ),
            rh.table_html(bootstrap_frame(table)),
        ]

    notes = (
        f"Corrected CI: {paired.MEAN_CI_KIND}; it assumes the between-seed correlation ρ "
        "shown, which one dataset cannot measure, so each p is also given at r = ρ/(1 − ρ) = "
        "0, 0.1 and 0.2 with the break-even r where it crosses 0.05. Wilcoxon: exact "
        "signed-rank over seeds (ties and zeros included), Holm-adjusted over the task's "
        "pairs; the reading compares it unadjusted with the unadjusted corrected p. Verdict: "
        "the Bayesian correlated t-test (Corani & Benavoli 2015) on the corrected variance, "
        f"ROPE ± {paired.DEFAULT_ROPE:g} AMAE: better or equivalent at posterior probability "
        f"{paired.BAYES_THRESHOLD:g}, else inconclusive; TOST p is the equivalence test within "
        f"the ROPE. Bootstrap: {paired.BOOTSTRAP_CI_KIND}. Every other metric: "
        "`python -m jobs stats STUDY_ID`."
    )
    return [*_per_study(study_ids, store, part), rh.paragraph(notes, note=True)]


def tests_line(table: pd.DataFrame, endpoint: pd.DataFrame) -> str:
    """How many tests the section shows (corrected t, Wilcoxon and TOST per pair) and which
    family is confirmatory."""
    return reviewer_tables.tests_on_page_line(3 * len(table), len(endpoint), where="section")


def endpoint_frame(endpoint: pd.DataFrame) -> pd.DataFrame:
    """The primary endpoint's rows (soft − nominal) under the report's column names."""
    names = {**PAIRED_SHOWN, "method": "Soft method", "mean_diff": "Mean soft − nominal"}
    names["significant"] = "Significant (Holm, corrected)"
    names["p_bayes_soft_better"] = "P(soft better)"
    names["p_bayes_baseline_better"] = "P(Nominal better)"
    shown = endpoint.assign(p_strip=[reviewer_tables.p_strip_text(r) for r in _records(endpoint)])
    return shown.drop(columns=[paired.r_column(r) for r in paired.R_STRIP]).rename(columns=names)


def paired_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The paired rows the report shows, each interval as one ``[low, high]`` cell and the
    corrected p across r as one strip."""
    table = table.assign(corrected_ci=_intervals(table, "ci_low", "ci_high"))
    if "p_r0" in table:
        table = table.assign(p_strip=[reviewer_tables.p_strip_text(r) for r in _records(table)])
    return table[[c for c in PAIRED_SHOWN if c in table]].rename(columns=PAIRED_SHOWN)


def bootstrap_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The film-sampling bootstrap interval per pair, apart from the paired rows."""
    if "boot_ci_low" not in table:
        return pd.DataFrame(columns=list(BOOTSTRAP_SHOWN.values()))
    table = table.assign(boot_ci=_intervals(table, "boot_ci_low", "boot_ci_high"))
    return table[[c for c in BOOTSTRAP_SHOWN if c in table]].rename(columns=BOOTSTRAP_SHOWN)


def _records(table: pd.DataFrame) -> list[dict]:
    return table.to_dict("records")


def paired_readings(table: pd.DataFrame) -> list[str]:
    """Each paired row's reading (`engine.analysis.paired.reading`), named by its task."""
    return [f"{r['task']}: {paired.reading(r)}" for r in table.to_dict("records")]


def _intervals(table: pd.DataFrame, low: str, high: str) -> list[str]:
    return [f"[{lo:.3g}, {hi:.3g}]" for lo, hi in zip(table[low], table[high], strict=True)]


def critical_difference_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """Mean ranks of AMAE over seeds per task, with the Nemenyi critical difference."""

    def part(study_id: str, store: Path) -> list[str]:
        per_run = study_analysis.per_run(study_id, path=store)
        out = []
        for task in compare.task_order(per_run["task"]):
            # Display names, so the reading names "CDW-CE", not "cdw_ce", as the diagram does.
            scores = tables.titled(compare.score_frame(per_run, PRIMARY, [task]))
            cd = critical_difference(scores, lower_is_better=True)
            out += [rh.heading(f"AMAE on {task}", 4), rh.paragraph(_plain(cd.reading))]
            if math.isfinite(cd.cd):
                diagram = science_charts.critical_difference_diagram(cd.table, cd.groups, cd.cd)
                out.append(rh.chart_svg(diagram))
        return out

    return [*_per_study(study_ids, store, part), rh.paragraph(BLOCKING_SENTENCE, note=True)]


#: Width of the violins' plot area in the report (its page is 1100 px, axis title aside).
VIOLINS_PX = 940


def distributions_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """Fig. 5: AMAE over seeds per method, a violin and box per task."""

    def part(study_id: str, store: Path) -> list[str]:
        per_run = study_analysis.per_run(study_id, path=store)
        # The page is 1100 px wide: fourteen methods at the default 110 px a slot ran past it.
        slot = min(110, VIOLINS_PX // max(per_run["method"].nunique(), 1))
        return [
            rh.chart_svg(
                charts.violin_box(
                    compare.score_frame(per_run, PRIMARY, [task]),
                    value_title=tables.metric_name(PRIMARY),
                    title=task,
                    slot_width=slot,
                )
            )
            for task in compare.task_order(per_run["task"])
        ]

    return _per_study(study_ids, store, part)


def reliability_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """Reliability diagrams of the selected runs' test probabilities, per task."""

    def part(study_id: str, store: Path) -> list[str]:
        frame = store_runs.selected_probabilities([study_id], path=store)
        if frame.empty:
            return [rh.paragraph("No stored test probabilities.", note=True)]
        return [
            rh.chart_svg(
                science_charts.reliability_diagram(
                    pm.reliability_table(frame[frame["task"] == task]), title=task, size=180
                )
            )
            for task in compare.task_order(frame["task"])
        ]

    return _per_study(study_ids, store, part)


def kl_cppd_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """The true KL × CPPD table, each method's residuals, its KLD and the KLD's parts."""
    return _per_study(study_ids, store, _kl_cppd_part)


def _kl_cppd_part(study_id: str, store: Path) -> list[str]:
    joint = store_runs.joint_predictions([study_id], path=store)
    if joint.empty:
        return [rh.paragraph("No seed has selected runs of both tasks.", note=True)]
    truth, results = relationship.relationship_by_seed(joint)
    summary = relationship.summarise_relationship(results)
    out = [
        rh.chart_svg(
            charts.contingency_heatmap(
                compare.grid_frame(truth), decimals=1, title="True table (mean count per seed)"
            )
        ),
        rh.table_html(_titled(stat_tables.relationship_summary_frame(summary)), digits=4),
    ]
    residuals = {r.method: r.mean_table - r.mean_truth for r in summary.itertuples()}
    limit = max((float(np.abs(t).max()) for t in residuals.values()), default=1.0)
    heatmaps = []
    for row in summary.itertuples():
        subtitle = f"KLD {tables.mean_std_text(row.kld_mean, row.kld_std, 3)}"
        heat = charts.residual_heatmap(
            compare.grid_frame(residuals[row.method]),
            title=tables.method_title(row.method),
            subtitle=subtitle,
            limit=limit,
        )
        heatmaps.append(rh.chart_svg(heat))
    out.append(rh.row(heatmaps))
    parts = kld_parts.summarise(kld_parts.decompose(results))
    out += [
        rh.paragraph(
            "Residual = mean predicted − mean true table over seeds (red: predicted more often "
            "than it occurs). KLD = D_KL(true ‖ predicted) in nats, per seed, mean ± sd.",
            note=True,
        ),
        rh.heading("The KLD's chain-rule decomposition", 4),
        rh.table_html(_titled(parts.drop(columns=["reading"])), digits=3),
        *(rh.paragraph(text) for text in parts["reading"]),
    ]
    kld_pairs = study_analysis.kld_paired_table(study_id, path=store)
    if not kld_pairs.empty:
        out += [
            rh.heading("KLD compared between methods, paired by seed", 4),
            rh.table_html(paired_frame(kld_pairs)),
            rh.bullets(paired_readings(kld_pairs)),
        ]
    return out


def curves_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """Every method's selected run on the first seed, per task."""

    def part(study_id: str, store: Path) -> list[str]:
        epochs = store_runs.study_epoch_metrics([study_id], selected_only=True, path=store)
        curves = explorer.learning_curves(epochs)
        if curves.empty:
            return [rh.paragraph("No per-epoch curves are stored for this study.", note=True)]
        seed = int(curves["seed"].min())
        out = []
        for task in compare.task_order(curves["task"]):
            lines = explorer.overlay(curves, "method", task=task, seed=seed)
            if not lines.empty:
                title = f"{task}: selected runs, seed {seed}"
                chart = science_charts.learning_curves_chart(lines, title=title, width=220)
                out.append(rh.chart_svg(chart))
        return out

    note = "Seed shown: the study's first; every seed is on the Search & learning curves page."
    return [*_per_study(study_ids, store, part), rh.paragraph(note, note=True)]


def methods_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """A paragraph per study a PI can paste into a paper, then the statistics and software."""
    out = [rh.paragraph(protocol_text(s, store)) for s in study_ids]
    out += [rh.paragraph(STATISTICS_TEXT), rh.paragraph(software_text(study_ids, store))]
    return ['<div class="methods">', *out, "</div>"]


# -- the methods paragraph -------------------------------------------------------------------


STATISTICS_TEXT = (
    "Statistics. Test metrics are computed per seed from each (task, method, seed)'s selected "
    "run (the configuration with the best validation AMAE). Means carry 95 % corrected "
    "resampled t intervals (Nadeau & Bengio 2003), which widen the ordinary interval by the "
    "test/train size ratio because the seeds resample the same films; they assume the "
    "per-seed values are roughly normal. Pairs of methods are compared by the mean paired "
    "difference over seeds with the corrected resampled t-test, which assumes a between-seed "
    "correlation ρ = n_test/n that one dataset cannot measure (its p is therefore reported "
    "across ρ with the break-even value), the Bayesian correlated t-test (Corani & Benavoli "
    "2015) with a region of practical equivalence and TOST for equivalence, and the exact "
    "Wilcoxon signed-rank test (symmetric differences, seeds treated as independent, hence "
    "read as consistency over seeds), Holm-adjusted; effect sizes are d_z and the "
    "matched-pairs rank-biserial r. A film-sampling bootstrap (seeds, then patients within "
    "each seed's test set, seeds as independent) measures how much the test films alone "
    f"move a difference. The primary endpoint ({paired.PRIMARY_FAMILY}) is the one "
    "confirmatory family, Holm on the corrected p; every other comparison is exploratory. "
    "Methods are ranked per seed by the Friedman test with Nemenyi post-hoc comparisons "
    "(seeds as independent blocks; exploratory). The KL × CPPD agreement is "
    "D_KL(true ‖ predicted) of the joint grade table per seed, decomposed by the chain rule "
    "into a KL-marginal and a CPPD-given-KL part."
)


def protocol_text(study_id: str, store: Path) -> str:
    """The study's protocol, search space, budget, splits and initial weights in prose."""
    spec = store_studies.get_study(study_id, path=store).spec
    methods = list(spec.get("methods", []))
    budget = int(spec.get("budget", MAX_BUDGET))
    seeds = list(spec.get("seeds", []))
    init = (
        "ImageNet weights read from a local file"
        if spec.get("weights_path")
        else "random initial weights"
    )
    return (
        f"Protocol ({spec.get('name', study_id)}). A ResNet-18 was trained for each of the "
        f"tasks {', '.join(spec.get('tasks', []))} with {len(methods)} label methods "
        f"({', '.join(methods)}), from {init}, on {spec.get('image_size', '?')}-pixel crops "
        f"in batches of {spec.get('batch_size', '?')} for at most "
        f"{spec.get('max_epochs', '?')} epochs (early stopping after "
        f"{spec.get('patience', '?')} epochs without a better validation AMAE), over "
        f"{len(seeds)} seeds ({_seed_text(seeds)}). Search space per method (random search, "
        f"budget {budget} configurations per task, method and seed, a smaller grid searched "
        f"in full): {search_space_text(methods, budget)}. Splits: {SPLIT_RULE}; "
        f"{TEST_FRACTION:.0%} of patients held out for testing and {VAL_FRACTION:.0%} of the "
        f"rest for validation, drawn anew for every seed; {split_text(study_id, store)}."
    )


def search_space_text(methods: Sequence[str], budget: int) -> str:
    """Each method's grid (parameter values) and how many configurations were tried; a
    method this checkout does not register (imported results) is named as such."""
    parts = []
    for method in methods:
        if not soft_labels.is_registered(method):
            parts.append(f"{method}: not registered in this SoftGrade, search space unknown")
            continue
        grid = soft_labels.search_grid(method)
        axes = {k: sorted({g.as_dict()[k] for g in grid}) for k in grid[0].as_dict()}
        values = "; ".join(f"{k} ∈ {{{', '.join(f'{v:g}' for v in vs)}}}" for k, vs in axes.items())
        parts.append(f"{method}: {values} ({min(budget, len(grid))} of {len(grid)})")
    return "; ".join(parts)


def split_text(study_id: str, store: Path) -> str:
    """Films per split and task, over the seeds (mean, range)."""
    sizes = store_analysis.split_sizes(study_id, path=store)
    if sizes.empty:
        return "split sizes not recorded"
    parts = []
    for task, rows in sizes.groupby("task", sort=False):
        parts.append(
            f"{task}: {_range(rows['n_test'])} test and {_range(rows['n_fit'])} "
            "training + validation films per seed"
        )
    return "; ".join(parts)


def software_text(study_ids: Sequence[str], store: Path) -> str:
    """Training software from each study's card; analysis software from this process."""
    trained = []
    for card in export_cards(str(store), study_ids):
        known = [f"{k} {card[k]}" for k in TRAINING_CARD_FIELDS if k in card]
        trained.append(f"{card.get('study', '?')}: {'; '.join(known) or 'not recorded'}")
    code = provenance.code_version()
    commit = f" (commit {code['git_commit'][:10]})" if code.get("git_commit") else ""
    analysis = ", ".join(f"{p} {_version(p)}" for p in ANALYSIS_PACKAGES)
    return (
        f"Software. Training: {' | '.join(trained)}. Analysis and this report: SoftGrade "
        f"{code.get('code_version')}{commit} with {analysis}, Python {sys.version.split()[0]}."
    )


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


def _range(values: pd.Series) -> str:
    low, high = int(values.min()), int(values.max())
    return str(low) if low == high else f"{low}–{high}"


def _seed_text(seeds: Sequence[int]) -> str:
    if seeds and list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}–{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])
    return ", ".join(str(s) for s in seeds)


def _titled(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with its methods as the pages title them."""
    return frame.assign(method=frame["method"].map(tables.method_title))


def _plain(markdown: str) -> str:
    """A page reading without its Markdown emphasis."""
    return markdown.replace("**", "").replace("`", "")


_BUILDERS: dict[str, Callable[[Sequence[str], Path], list[str]]] = {
    "studies": studies_section,
    "table4": table4_section,
    "paired": paired_section,
    "critical-difference": critical_difference_section,
    "distributions": distributions_section,
    "reliability": reliability_section,
    "kl-cppd": kl_cppd_section,
    "curves": curves_section,
    "methods": methods_section,
}


# -- command line ----------------------------------------------------------------------------


def write_report(study_ids: Sequence[str], output: Path, *, path: Path | None = None) -> int:
    """Write the report; return its size in bytes.

    Raises:
        ReportInputError: bad studies, or an output that is not a writable ``.html`` file.
    """
    check_output(output)
    text = build_report(study_ids, path=path)
    output.write_text(text, encoding="utf-8")
    return len(text.encode("utf-8"))


def check_output(output: Path) -> None:
    """Raise `ReportInputError` unless ``output`` is an ``.html`` file that can be written."""
    if output.suffix.lower() not in (".html", ".htm"):
        raise ReportInputError(f"{str(output)!r}: -o writes an .html file")
    folder = output.parent if str(output.parent) else Path(".")
    if not folder.is_dir():
        raise ReportInputError(f"{str(output)!r}: no folder {str(folder)!r}")
    if output.is_dir() or not os.access(output if output.exists() else folder, os.W_OK):
        raise ReportInputError(f"{str(output)!r} cannot be written here")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pages.present.report STUDY_ID [...] -o report.html``; 2 on bad input."""
    parser = argparse.ArgumentParser(prog="softgrade report", description=__doc__.split("\n")[0])
    parser.add_argument("study_ids", nargs="*", metavar="STUDY_ID")
    parser.add_argument("-o", "--output", default="report.html", help="the HTML file to write")
    args = parser.parse_args(argv)
    output = Path(args.output)
    try:
        size = write_report(args.study_ids, output)
    except (ReportInputError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    print(f"report written to {output} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
