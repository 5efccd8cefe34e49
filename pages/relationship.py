"""KL × CPPD relationship: does each method reproduce the joint distribution of the grades?

For every seed, the KL model and the CPPD model of one method grade the same jointly
annotated test images; their predictions form a predicted KL × CPPD table that is compared
with the true table of those images (paper, "KL & CPPD relationship", Fig. 8, Table 7).
The numbers come from ``engine.relationship`` and ``engine.stats``; this page renders them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from engine import compare, relationship, stats
from engine.vocab import order_methods
from pages import _tables
from pages._ui import (
    RESULTS_TTL_S,
    cached_group_counts,
    chart_spec,
    pick_studies,
    run_inside_shell,
    show_test,
    store_path,
    warn_partial,
)
from store import runs as store_runs
from store.db import StoreError

EPS_CHOICES = (1e-6, 1e-4, 1e-2)


@st.cache_data(ttl=RESULTS_TTL_S, show_spinner="Reading predictions…")
def cached_joint(path: str, study_ids: tuple[str, ...], names: tuple[str, ...]) -> pd.DataFrame:
    """KL and CPPD predictions of the jointly graded test images (methods labelled)."""
    joint = store_runs.joint_predictions(list(study_ids), path=path)
    return compare.label_methods(joint, dict(zip(study_ids, names, strict=True)))


@st.cache_data(ttl=RESULTS_TTL_S, show_spinner=False)
def scored(
    joint: pd.DataFrame, eps: float
) -> tuple[np.ndarray, list[relationship.SeedRelationship], pd.DataFrame]:
    """Per-seed predicted tables with their KLD and MAE, and the per-method summary."""
    truth, results = relationship.relationship_by_seed(joint, eps=eps)
    return truth, results, relationship.summarise_relationship(results)


@st.cache_data(max_entries=32, show_spinner=False)
def kld_tests(
    scores: pd.DataFrame, correction: str
) -> tuple[stats.TestResult, stats.TestResult, stats.TestResult]:
    """Table 7: Shapiro–Wilk per method, Kruskal–Wallis, pairwise Wilcoxon."""
    return (
        stats.shapiro_by_method(scores),
        stats.kruskal_across_methods(scores),
        stats.wilcoxon_pairwise(scores, correction=correction),
    )


run_inside_shell()
st.title("KL × CPPD relationship")
st.caption(
    "Knee osteoarthritis (KL) and CPPD grades are related asymmetrically. For each seed, the "
    "KL model and the CPPD model of the same method grade the same jointly annotated test "
    "images; the pairs of predicted grades form a predicted KL × CPPD table, compared here "
    "with the true table (paper Fig. 8 and Table 7)."
)

path = str(store_path())
picked = pick_studies(
    path,
    key="rel_studies",
    empty_hint="No study has finished runs yet. Launch one with both tasks (KL and CPPD) from "
    "the Launch page; this page fills in as its seeds finish.",
    dependent_keys=("rel_methods", "rel_method"),
)
chosen = picked["study_id"].tolist()

try:
    group_counts = cached_group_counts(path, tuple(chosen))
    progress = compare.study_progress(picked, group_counts)
    names = tuple(picked["name"].astype(str))
    joint = cached_joint(path, tuple(chosen), names)
except StoreError as exc:
    st.error(f"The store cannot be read right now: {exc}")
    st.stop()

warn_partial(progress)
joint = compare.keep_finished_seeds(joint, progress)
if joint.empty:
    tasks_run = set(group_counts["task"])
    if tasks_run and tasks_run != {"KL", "CPPD"}:
        only = " and ".join(sorted(tasks_run))
        missing = " and ".join(sorted({"KL", "CPPD"} - tasks_run))
        st.info(
            f"These studies have {only} predictions only. The relationship needs a KL model "
            f"and a CPPD model of the same method and seed: run a study with {missing} too."
        )
    elif any(item.partial for item in progress):
        st.info("No seed with both a KL and a CPPD model has finished yet.")
    else:
        st.info(
            "No test image was graded by both a KL and a CPPD model of the same method and "
            "seed in these studies."
        )
    st.stop()

methods_present = order_methods(joint["method"])
c1, c2 = st.columns([3, 1])
methods = c1.multiselect(
    "Methods",
    options=methods_present,
    default=methods_present,
    format_func=_tables.method_title,
    key="rel_methods",
)
eps = c2.selectbox(
    "ε for empty cells",
    options=list(EPS_CHOICES),
    format_func=lambda v: f"{v:g}",
    key="rel_eps",
    help="A combination the model never predicts gets this probability before "
    "renormalising, so the KLD stays finite.",
)
if not methods:
    st.info("Pick at least one method.")
    st.stop()

joint = compare.sort_by_method(joint[joint["method"].isin(methods)])
try:
    truth, results, summary = scored(joint, eps)
except ValueError as exc:  # e.g. one image with two different true grades in one seed
    st.error(f"These predictions cannot be scored together: {exc}")
    st.stop()
n_seeds = joint["seed"].nunique()
images_per_seed = (
    joint.drop_duplicates(["study_id", "seed", "image_id"]).groupby(["study_id", "seed"]).size()
)

# ---- Ground truth (Fig. 2 right) ------------------------------------------------------------
st.subheader("True KL × CPPD table of the test images", divider="gray")
left, right = st.columns([1, 2])
left.vega_lite_chart(
    chart_spec(
        "contingency_heatmap",
        compare.grid_frame(truth),
        {"decimals": 1 if n_seeds > 1 else 0, "title": "Recorded grades"},
    ),
    width="content",
)
right.markdown(
    f"Jointly annotated test images of each seed: {images_per_seed.min()}"
    + (f"–{images_per_seed.max()}" if images_per_seed.max() != images_per_seed.min() else "")
    + f" images per seed over {n_seeds} seed{'s' * (n_seeds != 1)}. Every seed draws its own "
    "test split, so the table shows the **mean count per seed** and each seed's predictions "
    "are scored against that seed's own true table."
)
right.caption(
    "Grades are the recorded (annotated) ones the models were trained and scored on. Rows: "
    "KL 0–4; columns: CPPD 0–3."
)

# ---- Residuals (Fig. 8) ---------------------------------------------------------------------
st.subheader("How each method reproduces it", divider="gray")
unit = st.radio(
    "Residuals in",
    options=["images", "points"],
    format_func={"images": "images per cell", "points": "percentage points of the table"}.get,
    horizontal=True,
    key="rel_units",
)
residual_tables = {}
for row in summary.itertuples(index=False):
    if unit == "images":
        residual_tables[row.method] = row.mean_table - row.mean_truth
    else:
        residual_tables[row.method] = row.residuals
limit = max((float(np.abs(t).max()) for t in residual_tables.values()), default=1.0)
per_row = 3
rows = list(summary.itertuples(index=False))
for start in range(0, len(rows), per_row):
    columns = st.columns(per_row)
    for column, row in zip(columns, rows[start : start + per_row], strict=False):
        kld_text = _tables.mean_std_text(row.kld_mean, row.kld_std, 3)
        mae_text = _tables.mean_std_text(row.mae_mean, row.mae_std, 2)
        options = {
            "title": _tables.method_title(row.method),
            "subtitle": [f"KLD {kld_text} · MAE {mae_text}", f"{row.n_seeds} seeds"],
            "limit": limit,
            "unit": unit,
        }
        column.vega_lite_chart(
            chart_spec(
                "residual_heatmap", compare.grid_frame(residual_tables[row.method]), options
            ),
            width="content",
        )
st.caption(
    "Residual = mean predicted table − mean true table, over seeds: **red = the model "
    "predicts that KL/CPPD combination more often than it occurs (over-estimation), blue = "
    f"less often**. KLD = D_KL(true ‖ predicted) in nats, with ε = {eps:g} given to an empty "
    "predicted cell before renormalising; MAE = mean absolute difference of the cell counts "
    "(images per cell). Both are computed per seed, then shown as mean ± std over seeds. "
    "All heatmaps share one colour scale."
)
summary_shown = _tables.relationship_summary_frame(summary).assign(
    method=lambda f: f["method"].map(_tables.method_title)
)
st.dataframe(
    summary_shown,
    hide_index=True,
    width="content",
    column_config={
        "method": "Method",
        "n_seeds": "Seeds",
        "kld_mean": st.column_config.NumberColumn("KLD mean", format="%.4f"),
        "kld_std": st.column_config.NumberColumn("KLD std", format="%.4f"),
        "mae_mean": st.column_config.NumberColumn("MAE mean", format="%.3f"),
        "mae_std": st.column_config.NumberColumn("MAE std", format="%.3f"),
    },
)
if (summary_shown["n_seeds"] < 2).any():
    st.caption("A standard deviation needs at least two seeds; it stays empty until then.")

# ---- One method in detail -------------------------------------------------------------------
st.subheader("One method, seed by seed", divider="gray")
detail = st.selectbox(
    "Method",
    options=list(summary["method"]),
    format_func=_tables.method_title,
    key="rel_method",
)
detail_row = summary[summary["method"] == detail].iloc[0]
seed_frames = [
    compare.grid_frame(r.table).assign(seed=r.seed) for r in results if r.method == detail
]
c1, c2 = st.columns([1, 2])
c1.vega_lite_chart(
    chart_spec(
        "contingency_heatmap",
        compare.grid_frame(detail_row["mean_table"]),
        {"decimals": 1, "title": "Mean predicted table", "scheme": "purples"},
    ),
    width="content",
)
c2.vega_lite_chart(
    chart_spec("seed_tables", pd.concat(seed_frames, ignore_index=True), {}), width="content"
)

# ---- KLD over seeds and Table 7 ------------------------------------------------------------
st.subheader("KLD over seeds and tests (Table 7)", divider="gray")
kld_scores = _tables.titled(relationship.relationship_scores(results, "kld"))
correction = st.selectbox(
    "Correction for the pairwise Wilcoxon tests",
    options=list(stats.CORRECTIONS),
    format_func=stats.CORRECTIONS.get,
    key="rel_correction",
    help="The paper's Table 7 reports unadjusted p-values.",
)
st.vega_lite_chart(
    chart_spec(
        "violin_box",
        kld_scores,
        {"value_title": "KLD (nats, lower is better)", "title": "KLD per seed", "violin": False},
    ),
    width="stretch",
)
shapiro, kruskal, wilcoxon = kld_tests(kld_scores, correction)
show_test("Normality per method (Shapiro–Wilk)", shapiro)
show_test("Do the methods differ at all? (Kruskal–Wallis)", kruskal)
show_test(
    "Which pairs differ? (Wilcoxon signed-rank, paired by seed)",
    wilcoxon,
    shortfall=_tables.wilcoxon_seed_shortfall(wilcoxon.table),
)

# ---- Export ---------------------------------------------------------------------------------
st.subheader("Export", divider="gray")
table7 = _tables.kld_tests_frame(shapiro, kruskal, wilcoxon)
latex = (
    _tables.frame_latex(
        _tables.relationship_summary_frame(summary).assign(
            method=lambda f: f["method"].map(_tables.method_title)
        ),
        caption=f"KLD and cell MAE of the predicted KL $\\times$ CPPD tables (mean and std over "
        f"seeds; $\\varepsilon = {eps:g}$).",
        label="tab:kld_summary",
        digits=4,
        headers={
            "method": "Model",
            "n_seeds": "Seeds",
            "kld_mean": "KLD mean",
            "kld_std": "KLD std",
            "mae_mean": "MAE mean",
            "mae_std": "MAE std",
        },
    )
    + "\n"
    + _tables.frame_latex(
        table7,
        caption="Statistical tests for KLD comparing the true contingency table with the ones "
        "obtained from the predictions.",
        label="tab:kld_stats",
        digits=3,
        headers={"test": "Statistical test", "models": "Model(s)", "statistic": "Statistic"},
    )
)
c1, c2, c3 = st.columns(3)
c1.download_button(
    "Per-seed tables, KLD and MAE (CSV)",
    _tables.relationship_seed_frame(results).to_csv(index=False),
    file_name="softgrade_kl_cppd_seeds.csv",
    mime="text/csv",
    key="rel_download_seeds",
    icon=":material/download:",
)
c2.download_button(
    "Summary and tests (CSV)",
    _tables.tables_csv(
        {
            "summary": _tables.relationship_summary_frame(summary),
            "tests": table7,
            "true_table_mean": compare.grid_frame(truth),
        }
    ),
    file_name="softgrade_kl_cppd_summary.csv",
    mime="text/csv",
    key="rel_download_summary",
    icon=":material/download:",
)
c3.download_button(
    "Summary and tests (LaTeX)",
    latex,
    file_name="softgrade_kl_cppd.tex",
    mime="text/x-tex",
    key="rel_download_latex",
    icon=":material/download:",
)
