"""The Launch page's "How many seeds?": seeds needed for 80 % power with the corrected test
(`engine.analysis.power`), from an existing study's paired differences or a typed effect
and sd, priced in GPU hours per seed (`pages.present.study_form.gpu_hours_per_seed`).
Streamlit widgets: tests/app/test_launch_seeds.py drives them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from engine.analysis import paired, power
from jobs import study_analysis
from pages.present import reviewer_tables as rt
from pages.widgets import reads

DEFAULT_RATIO = 0.43  # n_test / n_train of the paper's split (30 % test, 70 % fit)


@st.cache_data(ttl=reads.RESULTS_TTL_S, show_spinner=False)
def cached_seed_plan(path: str, study_id: str, runs_selected: int) -> pd.DataFrame:
    """Seeds needed per soft method vs nominal (AMAE) of an existing study."""
    del runs_selected  # the study's change marker: part of the cache key only
    plan = study_analysis.seeds_needed(study_id, metric="amae", path=path)
    if plan.empty:
        return plan
    return plan[(plan["method_a"] == paired.BASELINE) | (plan["method_b"] == paired.BASELINE)]


def how_many_seeds(path: Path, hours_per_seed: float | None) -> None:
    """Seeds for 80 % power before a study is queued; short and plain."""
    with st.expander("How many seeds? (80 % power for a difference in AMAE)"):
        source = st.radio(
            "From",
            ["study", "typed"],
            format_func={"study": "an existing study", "typed": "an effect I type"}.get,
            horizontal=True,
            key="launch_power_source",
        )
        if hours_per_seed:
            st.caption(f"This study: about {hours_per_seed:.2f} GPU hours per seed.")
        if source == "study":
            _from_study(str(path))
        else:
            _from_typed(hours_per_seed)


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
    plan = cached_seed_plan(path, study_id, runs)
    if plan.empty:
        st.info("That study has no nominal and soft method pair with 2 seeds or more.")
        return
    st.dataframe(rt.power_view(plan).drop(columns=rt.CHOSEN_POWER_COLUMN), hide_index=True)
    st.caption(
        "At each pair's observed AMAE difference and sd of the differences, with the corrected "
        "variance: the films every seed shares cap the power more seeds can give."
    )


def _from_typed(hours_per_seed: float | None) -> None:
    c1, c2, c3 = st.columns(3)
    effect = c1.number_input("AMAE difference", value=0.05, step=0.01, key="launch_effect")
    sd = c2.number_input(
        "sd of the per-seed difference", min_value=0.0, value=0.06, step=0.01, key="launch_sd"
    )
    ratio = c3.number_input(
        "test films / fit films", min_value=0.0, value=DEFAULT_RATIO, key="launch_ratio"
    )
    seeds = power.seeds_for_power(effect, sd, ratio)
    ceiling = power.power_ceiling(effect, sd, ratio) if sd > 0 and effect else float("nan")
    st.markdown(rt.seeds_plan_text(seeds, hours_per_seed, ceiling))
