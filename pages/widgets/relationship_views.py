"""The KL × CPPD page's per-method sections: each method's mean residual table (Fig. 8), one
method's mean predicted table beside every seed's, the KLD decomposed by the chain rule
(`engine.analysis.kld_parts`) and the KLD's paired tests with the corrected test beside the
Wilcoxon (`engine.analysis.paired`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from engine.analysis import compare, paired, relationship
from jobs.services.study_analysis import JOINT_TASK
from pages.present import inference_tables, stat_tables, tables
from pages.present.formatting import table_height
from pages.present.user_text import plain
from pages.widgets import chart_cache, pickers, view_state
from pages.widgets.tables import show_table

RESIDUAL_UNITS = {"images": "images per cell", "points": "percentage points of the table"}


def residuals_section(summary: pd.DataFrame, eps: float, per_row: int = 3) -> None:
    """Fig. 8: each method's mean predicted − true table on one shared colour scale."""
    st.subheader("How each method reproduces it", divider="gray")
    unit = pickers.pick_option("Residuals in", RESIDUAL_UNITS, key="rel_units")
    rows = list(summary.itertuples(index=False))
    residuals = {
        r.method: r.mean_table - r.mean_truth if unit == "images" else r.residuals for r in rows
    }
    limit = max((float(np.abs(t).max()) for t in residuals.values()), default=1.0)
    for start in range(0, len(rows), per_row):
        for column, row in zip(st.columns(per_row), rows[start : start + per_row], strict=False):
            kld_text = tables.mean_std_text(row.kld_mean, row.kld_std, 3)
            mae_text = tables.mean_std_text(row.mae_mean, row.mae_std, 2)
            options = {
                "title": tables.method_title(row.method),
                "subtitle": [f"KLD {kld_text} · MAE {mae_text}", f"{row.n_seeds} seeds"],
                "limit": limit,
                "unit": unit,
            }
            spec = chart_cache.chart_spec(
                "residual_heatmap", compare.grid_frame(residuals[row.method]), options
            )
            column.vega_lite_chart(spec, width="content")
    st.caption(
        "Residual = mean predicted table − mean true table, over seeds: **red = the model "
        "predicts that KL/CPPD combination more often than it occurs (over-estimation), blue = "
        f"less often**. KLD = D_KL(true ‖ predicted) in nats, with ε = {eps:g} given to an empty "
        "predicted cell before renormalising; MAE = mean absolute difference of the cell counts "
        "(images per cell). Both are computed per seed, then shown as mean ± std over seeds. "
        "All heatmaps share one colour scale."
    )
    shown = stat_tables.relationship_summary_frame(summary)
    labels = stat_tables.RELATIONSHIP_HEADERS
    show_table(
        # A missing std (one seed) is an empty cell, not Streamlit's "None".
        shown.assign(
            method=shown["method"].map(tables.method_title),
            kld_std=[
                tables.mean_std_text(v, None, 4) if pd.notna(v) else "" for v in shown["kld_std"]
            ],
            mae_std=[
                tables.mean_std_text(v, None, 3) if pd.notna(v) else "" for v in shown["mae_std"]
            ],
        ),
        hide_index=True,
        width="content",
        height=table_height(len(shown)),
        column_config={
            **stat_tables.RELATIONSHIP_HEADERS,
            "kld_mean": st.column_config.NumberColumn(labels["kld_mean"], format="%.4f"),
            "kld_std": st.column_config.TextColumn(labels["kld_std"]),
            "mae_mean": st.column_config.NumberColumn(labels["mae_mean"], format="%.3f"),
            "mae_std": st.column_config.TextColumn(labels["mae_std"]),
        },
    )
    if (shown["n_seeds"] < 2).any():
        st.caption(tables.ONE_SEED_NOTE + " Its std cells stay empty until then.")


def detail_section(summary: pd.DataFrame, results: list[relationship.SeedRelationship]) -> None:
    """One method's mean predicted table beside its table of every seed."""
    st.subheader("One method, seed by seed", divider="gray")
    detail = view_state.linked(
        st.selectbox,
        "Method",
        list(summary["method"]),
        key="rel_method",
        what="method",
        format_func=tables.method_title,
    )
    mean_table = summary.loc[summary["method"] == detail, "mean_table"].iloc[0]
    seeds = [compare.grid_frame(r.table).assign(seed=r.seed) for r in results if r.method == detail]
    c1, c2 = st.columns([1, 2])
    options = {"decimals": 1, "title": "Mean predicted table", "scheme": "purples"}
    spec = chart_cache.chart_spec("contingency_heatmap", compare.grid_frame(mean_table), options)
    c1.vega_lite_chart(spec, width="content")
    spec = chart_cache.chart_spec("seed_tables", pd.concat(seeds, ignore_index=True), {})
    c2.vega_lite_chart(spec, width="content")


def kld_parts_section(summary: pd.DataFrame, parts: pd.DataFrame) -> None:
    """Each method's KLD split into its KL-marginal and CPPD-given-KL parts (``parts``:
    `engine.analysis.kld_parts.summarise`), with the mutual information of the true and
    predicted tables and a reading of which part drives it."""
    st.subheader("What drives the KLD?", divider="gray")
    left, right = st.columns([3, 2])
    left.dataframe(
        inference_tables.kld_parts_frame(parts),
        hide_index=True,
        width="content",
        height=table_height(len(parts)),
    )
    spec = chart_cache.chart_spec("kld_parts_bars", inference_tables.kld_parts_long(parts), {})
    right.vega_lite_chart(spec, width="content")
    tables_of = summary.set_index("method")
    for row in parts.to_dict("records"):
        mine = tables_of.loc[row["method"]]
        reading = inference_tables.kld_part_reading(row, mine["mean_table"], mine["mean_truth"])
        st.markdown(f"- {plain(reading)}")  # it names methods: as text
    st.caption(inference_tables.KLD_PARTS_NOTE)


def kld_paired_section(
    results: list[relationship.SeedRelationship], ratio: float | None
) -> pd.DataFrame:
    """The KLD of every pair of methods per seed with the corrected resampled t-test beside
    the Wilcoxon; ``ratio`` is the KL split's ``n_test / n_train`` (the joint films are
    KL-graded films; None when the store records no splits). Returns the paired table (for
    the exports)."""
    st.markdown("**Paired differences of KLD: corrected test beside the Wilcoxon**")
    if ratio is None:
        st.info(inference_tables.no_splits_reason("KL"))
        return pd.DataFrame()
    scores = relationship.relationship_scores(results, "kld").rename(columns={"value": "kld"})
    scores = scores.assign(study_id="", task=JOINT_TASK)
    table = paired.paired_table(scores, {JOINT_TASK: ratio}, metrics=("kld",))
    if table.empty:
        st.info("Paired tests need at least two methods.")
        return table
    shown = inference_tables.paired_frame(table, metric_label={"kld": "KLD ↓"})
    show_table(shown.drop(columns=["Task", "Metric"]), hide_index=True, width="stretch")
    st.caption(inference_tables.PAIRED_NOTE)
    return table
