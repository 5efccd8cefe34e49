"""The Launch page's "How many seeds?": seeds needed for 80 % power with the corrected test
(`engine.analysis.power`) to detect a smallest effect of interest, over a range of
between-seed correlations ρ, from an existing study's sd of the paired differences (and its
upper bound) or a typed sd, priced in GPU hours per seed
(`pages.present.study_form.hours_per_seed`: GPU hours, or CPU-slot hours for a CPU study).
Streamlit widgets: tests/app/test_launch_seeds.py drives them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from engine.analysis import paired, power
from jobs.services import study_analysis
from pages.present import power_tables
from pages.present.study_form import SeedCost
from pages.widgets import reads


@st.cache_data(ttl=reads.RESULTS_TTL_S, show_spinner=False)
def cached_seed_plan(path: str, study_id: str, runs_selected: int, effect: float) -> pd.DataFrame:
    """Seeds needed per soft method vs nominal (AMAE) of an existing study to detect
    ``effect``, over `power.PLAN_RHOS`."""
    del runs_selected  # the study's change marker: part of the cache key only
    plan = study_analysis.seeds_needed(
        study_id, metric=paired.PRIMARY_METRIC, effect=effect, path=path
    )
    if plan.empty:
        return plan
    return plan[(plan["method_a"] == paired.BASELINE) | (plan["method_b"] == paired.BASELINE)]


def how_many_seeds(path: Path, cost: SeedCost | None) -> None:
    """Seeds for 80 % power before a study is queued; short and plain."""
    with st.expander("How many seeds? (80 % power for a smallest AMAE difference of interest)"):
        source = st.radio(
            "From",
            ["study", "typed"],
            format_func={"study": "an existing study", "typed": "an effect I type"}.get,
            horizontal=True,
            key="launch_power_source",
        )
        if cost and cost.hours:
            st.caption(f"This study: about {cost.hours:.2f} {cost.unit} per seed.")
        if source == "study":
            _from_study(str(path))
        else:
            _from_typed(cost)


def _from_study(path: str) -> None:
    studies = reads.cached_studies(path)
    studies = studies[studies["runs_selected"] > 0] if not studies.empty else studies
    if studies.empty:
        st.info("No study has results yet: type an effect and an sd instead.")
        return
    names = {str(k): str(v) for k, v in zip(studies["study_id"], studies["name"], strict=True)}
    study_id = str(
        st.selectbox("Study", list(names), format_func=lambda s: names[s], key="launch_power_study")
    )
    runs = int(studies.set_index("study_id").loc[study_id, "runs_selected"])
    effect = _effect_input("launch_power_study_effect")
    plan = cached_seed_plan(path, study_id, runs, effect)
    if plan.empty:
        st.info("That study has no nominal and soft method pair with 2 seeds or more.")
        return
    st.dataframe(power_tables.power_view(plan), hide_index=True)
    st.caption(power_tables.POWER_NOTE.format(target="80 %"))


def _effect_input(key: str) -> float:
    return float(
        st.number_input(
            "Smallest AMAE difference of interest",
            min_value=0.0,
            value=power.DEFAULT_EFFECT,
            step=0.01,
            key=key,
            help="The smallest difference that would matter, chosen before looking; not the "
            "difference a study happened to observe.",
        )
    )


def _from_typed(cost: SeedCost | None) -> None:
    c1, c2 = st.columns(2)
    with c1:
        effect = _effect_input("launch_effect")
    sd = c2.number_input(
        "sd of the per-seed difference", min_value=0.0, value=0.06, step=0.01, key="launch_sd"
    )
    lines = []
    for rho in power.PLAN_RHOS:
        ratio = paired.ratio_of_rho(rho)
        seeds = power.seeds_for_power(effect, sd, ratio)
        ceiling = power.power_ceiling(effect, sd, ratio) if sd > 0 and effect else float("nan")
        hours, unit = (cost.hours, cost.unit) if cost else (None, "GPU hours")
        lines.append(f"- {power_tables.seeds_plan_text(seeds, hours, ceiling, rho, unit=unit)}")
    st.markdown("\n".join(lines))
    st.caption(
        "ρ is the correlation between seeds that resample the same films; the corrected test "
        "assumes ρ = n_test/n (0.30 for a 30 % test split), and one dataset cannot measure "
        "it, so the plan is shown for several. The typed sd is taken as known: from a study, "
        "the planner also plans at its upper confidence bound."
    )
