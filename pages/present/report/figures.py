"""The report's figure sections: critical-difference ranks, distributions over seeds,
reliability diagrams, the KL × CPPD table with its residuals, and learning curves.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from engine.analysis import compare, explorer, kld_parts, relationship
from engine.analysis import probability_metrics as pm
from engine.analysis.inference_columns import KLD_PARTS
from engine.analysis.metrics import LOWER_IS_BETTER, METRIC_LABELS
from engine.analysis.ranking import BLOCKING_SENTENCE, CriticalDifference, critical_difference
from jobs.services.report_record import ReportInputs, StudyReportInputs
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
from pages.present.report.common import PRIMARY, per_study, table_of_rows
from pages.present.report.comparisons import (
    COMPACT_PAIRED,
    MAX_READINGS,
    others_text,
    paired_frame,
    paired_readings,
    primary_endpoint,
    reference_method,
    reference_rows,
    split_tables,
)


def critical_difference_section(inputs: ReportInputs) -> list[str]:
    """Mean ranks of the primary metric over seeds per task, with the Nemenyi critical
    difference, read as exploratory beside the primary endpoint."""

    def part(study: StudyReportInputs) -> list[str]:
        per_run = study.per_run
        endpoint = primary_endpoint(study.paired)
        out: list[str] = []
        said: set[str] = set()
        for task in compare.task_order(per_run["task"]):
            scores = compare.score_frame(per_run, PRIMARY, [task])
            cd = critical_difference(scores, lower_is_better=PRIMARY in LOWER_IS_BETTER)
            out += [rh.heading(f"{METRIC_LABELS[PRIMARY]} on {task}", 4)]
            # The caution after the result often reads the same for both tasks: said once.
            readings = ranks_reading(cd, endpoint)
            out += [rh.paragraph(text) for text in readings if text not in said]
            said.update(readings[1:])
            if math.isfinite(cd.cd):
                diagram = cd_diagram.critical_difference_diagram(cd.table, cd.groups, cd.cd)
                out.append(rh.chart_svg(diagram))
        return out

    return [*per_study(inputs, part), rh.paragraph(BLOCKING_SENTENCE, note=True)]


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
        groups = [_group_text(members) for members in cd.groups["methods"]]
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


#: A group of more methods than this is named by its ends in the reading; the diagram's bar
#: below joins every member (14 methods made a group's list four lines long).
GROUP_NAMED = 4


def _group_text(members: Sequence[str]) -> str:
    """A group of methods the Nemenyi test cannot tell apart, best mean rank first: every
    title, or past :data:`GROUP_NAMED` the first and last with the count."""
    titles = [tables.method_title(m) for m in members]
    if len(titles) <= GROUP_NAMED:
        return ", ".join(titles)
    return f"{titles[0]} … {titles[-1]} ({len(titles)} methods, joined by one bar below)"


#: Width of the violins' plot area in the report (its page is 1100 px, axis title aside).
VIOLINS_PX = 940
#: Their height: lower than the pages' 320 px, since the report stacks the two tasks.
VIOLINS_HEIGHT_PX = 240


def distributions_section(inputs: ReportInputs) -> list[str]:
    """Fig. 5: AMAE over seeds per method, a violin and box per task."""

    def part(study: StudyReportInputs) -> list[str]:
        per_run = study.per_run
        # The page is 1100 px wide: fourteen methods at the default 110 px a slot ran past it.
        slot = min(110, VIOLINS_PX // max(per_run["method"].nunique(), 1))
        return [
            rh.chart_svg(
                charts.violin_box(
                    compare.score_frame(per_run, PRIMARY, [task]),
                    value_title=tables.metric_name(PRIMARY),
                    title=task,
                    slot_width=slot,
                    height=VIOLINS_HEIGHT_PX,
                )
            )
            for task in compare.task_order(per_run["task"])
        ]

    return per_study(inputs, part)


#: One reliability panel's side in the report: five panels and the legends fit its page.
RELIABILITY_PX = 120


def reliability_section(inputs: ReportInputs) -> list[str]:
    """Reliability diagrams of the selected runs' test probabilities, per task, each
    method's films pooled over its seeds (said in the legend and below)."""

    def part(study: StudyReportInputs) -> list[str]:
        frame = study.probabilities
        if frame.empty:
            return [rh.paragraph("No stored test probabilities.", note=True)]
        out = []
        for task in compare.task_order(frame["task"]):
            rows = frame[frame["task"] == task]
            # Every panel of a task on one row (KL has five), small enough to fit the page.
            diagram = science_charts.reliability_diagram(
                pm.reliability_table(rows),
                title=task,
                size=RELIABILITY_PX,
                pooled_seeds=rows["seed"].nunique(),
                columns=5,
                clickable=False,
            )
            out.append(rh.chart_svg(diagram))
        out.append(rh.paragraph(pooling_sentence(frame), note=True))
        return out

    return per_study(inputs, part)


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


def kl_cppd_section(inputs: ReportInputs) -> list[str]:
    """The true KL × CPPD table, each method's residuals, its KLD and the KLD's parts."""
    return per_study(inputs, _kl_cppd_part)


def _kl_cppd_part(study: StudyReportInputs) -> list[str]:
    joint = study.joint
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
    ]
    parts = kld_parts.summarise(kld_parts.decompose(results))
    out += [
        rh.heading("The KLD, the cell-count MAE and the KLD's chain-rule decomposition", 4),
        table_of_rows(kld_table(summary, parts), digits=4),
        rh.paragraph(stat_tables.RELATIONSHIP_NOTE, note=True),
        rh.paragraph(inference_tables.KLD_PARTS_NOTE, note=True),
    ]
    residuals = {r.method: r.mean_table - r.mean_truth for r in summary.itertuples()}
    limit = max((float(np.abs(t).max()) for t in residuals.values()), default=1.0)
    frames = [compare.grid_frame(t).assign(method=m) for m, t in residuals.items()]
    # One figure of small multiples with one legend: a chart per method took four rows.
    out.append(rh.chart_svg(charts.residual_small_multiples(pd.concat(frames), limit=limit)))
    tables_of = summary.set_index("method")
    readings = (
        [
            inference_tables.kld_part_reading(
                row,
                tables_of.loc[row["method"], "mean_table"],
                tables_of.loc[row["method"], "mean_truth"],
            )
            for row in parts.to_dict("records")
        ]
        if len(parts) <= MAX_READINGS
        else [
            *inference_tables.kld_parts_grouped(parts),
            "Each method's own reading, with the KL grade it mispredicts most, is on the "
            "KL × CPPD page.",
        ]
    )
    out += [
        rh.paragraph(
            "Residual = mean predicted − mean true table over seeds (red: predicted more often "
            "than it occurs), one panel per method on one colour scale; each method's KLD is "
            "in the table above.",
            note=True,
        ),
        rh.bullets(readings),
    ]
    kld_pairs = study.kld_paired
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


def kld_table(summary: pd.DataFrame, parts: pd.DataFrame) -> pd.DataFrame:
    """Each method's KLD and cell-count MAE (`stat_tables.relationship_summary_shown`) with
    the KLD's chain-rule parts (`inference_tables.kld_parts_frame`) in one table: one row a
    method, where two tables of the same rows took twice the height. The parts' own KLD
    column is the summary's mean KLD again, so it is not repeated."""
    shown = stat_tables.relationship_summary_shown(summary)
    repeated = [KLD_PARTS.column(key).header for key in ("n_seeds", "kld")]
    chain = inference_tables.kld_parts_frame(parts).drop(columns=repeated)
    return shown.merge(chain, on="Method", how="left")


def curves_section(inputs: ReportInputs) -> list[str]:
    """Every method's selected run on the first seed, per task, with how to read them (the
    declared early-stopping rule and the study's patience)."""

    def part(study: StudyReportInputs) -> list[str]:
        curves = explorer.learning_curves(study.epochs)
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
        spec = study.spec
        seen = "Seed shown: the study's first; every seed is on the Search & learning curves page."
        notes = [explorer_views.curves_note(spec), *clipped, seen]
        return [*out, *(rh.paragraph(text, note=True) for text in notes)]

    return per_study(inputs, part)


def _plain(markdown: str) -> str:
    """A page reading without its Markdown emphasis."""
    return markdown.replace("**", "").replace("`", "")
