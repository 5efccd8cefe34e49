"""The report's figure sections: critical-difference ranks, distributions over seeds,
reliability diagrams, the KL × CPPD table with its residuals, and learning curves.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from engine.analysis import compare, explorer, kld_parts, relationship
from engine.analysis import probability_metrics as pm
from engine.analysis.metrics import LOWER_IS_BETTER, METRIC_LABELS
from engine.analysis.ranking import BLOCKING_SENTENCE, CriticalDifference, critical_difference
from jobs.services import study_analysis
from pages.present import (
    cd_diagram,
    charts,
    explorer_views,
    inference_tables,
    science_charts,
    stat_tables,
    tables,
)
from pages.present import report_html as rh
from pages.present.endpoint_text import endpoint_result
from pages.present.inference_tables import p_text
from pages.present.report.common import PRIMARY, per_study
from pages.present.report.comparisons import (
    COMPACT_PAIRED,
    others_text,
    paired_frame,
    paired_readings,
    primary_endpoint,
    reference_method,
    reference_rows,
    split_tables,
)
from store import runs as store_runs
from store import studies as store_studies


def critical_difference_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """Mean ranks of the primary metric over seeds per task, with the Nemenyi critical
    difference, read as exploratory beside the primary endpoint."""

    def part(study_id: str, store: Path) -> list[str]:
        per_run = study_analysis.per_run(study_id, path=store)
        endpoint = primary_endpoint(study_id, store)
        out = []
        for task in compare.task_order(per_run["task"]):
            scores = compare.score_frame(per_run, PRIMARY, [task])
            cd = critical_difference(scores, lower_is_better=PRIMARY in LOWER_IS_BETTER)
            out += [rh.heading(f"{METRIC_LABELS[PRIMARY]} on {task}", 4)]
            out += [rh.paragraph(text) for text in ranks_reading(cd, endpoint)]
            if math.isfinite(cd.cd):
                diagram = cd_diagram.critical_difference_diagram(cd.table, cd.groups, cd.cd)
                out.append(rh.chart_svg(diagram))
        return out

    return [*per_study(study_ids, store, part), rh.paragraph(BLOCKING_SENTENCE, note=True)]


def ranks_reading(cd: CriticalDifference, endpoint: pd.DataFrame) -> list[str]:
    """The critical-difference result in words: exploratory, what it assumes (seeds as
    independent blocks), and how it stands to the primary endpoint."""
    if not math.isfinite(cd.p):
        return [_plain(cd.reading)]
    metric = METRIC_LABELS[PRIMARY]
    best = cd.table.iloc[0]
    test = f"Friedman χ² = {cd.statistic:.3g}, p = {p_text(cd.p)}"
    lead = (
        f"Exploratory. Within each of the {cd.n_blocks} seeds the methods are ranked by "
        f"{metric} (1 = best), and the ranks are compared over seeds; best mean rank: "
        f"{tables.method_title(best['method'])} ({best['mean_rank']:.2f})."
    )
    if cd.p >= cd.alpha:
        lead += f" The mean ranks do not differ ({test})."
    else:
        groups = [
            ", ".join(tables.method_title(m) for m in members) for members in cd.groups["methods"]
        ]
        lead += f" The mean ranks are not all equal ({test})."
        if groups:
            lead += (
                f" Methods within one of these groups cannot be told apart (Nemenyi, α = "
                f"{cd.alpha:g}, critical difference {cd.cd:.2f} mean ranks): "
                f"{'; '.join(groups)}. A method outside a group ranked worse (or better) "
                "than its members within more of these seeds than chance would give."
            )
    caution = (
        "Both tests treat the seeds as independent blocks, yet every seed resamples the same "
        "films: like the Wilcoxon, they describe how consistently a method ranks over these "
        "seeds, not whether it would be better for new patients."
    )
    if not endpoint.empty:
        caution += (
            " That question is the primary endpoint's (corrected test, at its assumed ρ), where "
            f"{endpoint_result(endpoint)}."
        )
        if cd.p < cd.alpha and not endpoint["significant"].all():
            caution += (
                " The two are consistent: a method can rank better on most seeds by margins "
                "too small, against the seed-to-seed variation, to carry to new patients."
            )
    return [lead, caution]


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

    return per_study(study_ids, store, part)


def reliability_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """Reliability diagrams of the selected runs' test probabilities, per task, each
    method's films pooled over its seeds (said in the legend and below)."""

    def part(study_id: str, store: Path) -> list[str]:
        frame = store_runs.selected_probabilities([study_id], path=store)
        if frame.empty:
            return [rh.paragraph("No stored test probabilities.", note=True)]
        out = []
        for task in compare.task_order(frame["task"]):
            rows = frame[frame["task"] == task]
            diagram = science_charts.reliability_diagram(
                pm.reliability_table(rows),
                title=task,
                size=180,
                pooled_seeds=rows["seed"].nunique(),
            )
            out.append(rh.chart_svg(diagram))
        out.append(rh.paragraph(pooling_sentence(frame), note=True))
        return out

    return per_study(study_ids, store, part)


def pooling_sentence(frame: pd.DataFrame) -> str:
    """How many test predictions each method's bins pool, per task (``frame``: the selected
    runs' test probabilities, one row per run and film)."""
    parts = []
    for task in compare.task_order(frame["task"]):
        rows = frame[frame["task"] == task]
        per_method = rows.groupby("method").size()
        seeds = rows["seed"].nunique()
        parts.append(
            f"{task}: {int(per_method.max()):,} predictions per method, {seeds} seeds × about "
            f"{int(per_method.max()) // max(seeds, 1):,} test films"
        )
    return (
        "Each method's points pool its test films of every seed: a film counts once per seed "
        "that tested it, so the film counts of the size legend add up to more than the "
        f"study's films ({'; '.join(parts)})."
    )


def kl_cppd_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """The true KL × CPPD table, each method's residuals, its KLD and the KLD's parts."""
    return per_study(study_ids, store, _kl_cppd_part)


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
        rh.table_html(stat_tables.relationship_summary_shown(summary), digits=4),
        rh.paragraph(stat_tables.RELATIONSHIP_NOTE, note=True),
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
    tables_of = summary.set_index("method")
    readings = [
        inference_tables.kld_part_reading(
            row,
            tables_of.loc[row["method"], "mean_table"],
            tables_of.loc[row["method"], "mean_truth"],
        )
        for row in parts.to_dict("records")
    ]
    out += [
        rh.paragraph(
            "Residual = mean predicted − mean true table over seeds (red: predicted more often "
            "than it occurs). KLD = Kullback–Leibler divergence D_KL(true ‖ predicted) in "
            "nats, per seed, mean ± sd.",
            note=True,
        ),
        rh.heading("The KLD's chain-rule decomposition", 4),
        rh.table_html(inference_tables.kld_parts_frame(parts), digits=3),
        rh.paragraph(inference_tables.KLD_PARTS_NOTE, note=True),
        rh.bullets(readings),
    ]
    kld_pairs = study_analysis.kld_paired_table(study_id, path=store)
    if not kld_pairs.empty:
        body = reference_rows(kld_pairs)
        reference = tables.method_title(reference_method(kld_pairs))
        out += [
            rh.heading(f"KLD of each method against {reference}, paired by seed", 4),
            *split_tables(paired_frame(body), COMPACT_PAIRED, 3),
            rh.bullets(paired_readings(body)),
        ]
        if others := len(kld_pairs) - len(body):
            out.append(rh.paragraph(f"{others_text(others)} in the appendix table.", note=True))
    return out


def curves_section(study_ids: Sequence[str], store: Path) -> list[str]:
    """Every method's selected run on the first seed, per task, with how to read them (the
    declared early-stopping rule and the study's patience)."""

    def part(study_id: str, store: Path) -> list[str]:
        epochs = store_runs.study_epoch_metrics([study_id], selected_only=True, path=store)
        curves = explorer.learning_curves(epochs)
        if curves.empty:
            return [rh.paragraph("No per-epoch curves are stored for this study.", note=True)]
        seed = int(curves["seed"].min())
        out, clipped = [], []
        for task in compare.task_order(curves["task"]):
            lines = explorer.overlay(curves, "method", task=task, seed=seed)
            if not lines.empty:
                title = f"{task}: selected runs, seed {seed}"
                chart = science_charts.learning_curves_chart(lines, title=title, width=220)
                out.append(rh.chart_svg(chart))
                if sentence := explorer_views.clipped_sentence(lines):
                    clipped.append(f"{task}: {sentence}")
        spec = store_studies.get_study(study_id, path=store).spec
        seen = "Seed shown: the study's first; every seed is on the Search & learning curves page."
        notes = [explorer_views.curves_note(spec), *clipped, seen]
        return [*out, *(rh.paragraph(text, note=True) for text in notes)]

    return per_study(study_ids, store, part)


def _plain(markdown: str) -> str:
    """A page reading without its Markdown emphasis."""
    return markdown.replace("**", "").replace("`", "")
