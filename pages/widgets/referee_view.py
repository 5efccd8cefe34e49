"""The Statistics tab's "What the referee measured": the latest phantom referee result
(`softgrade calibrate-inference`) recorded under the store's data folder, its date and size,
and the interval it recommends. The numbers are `jobs.services.referee`'s, the text
``pages.present.referee_tables``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from engine.methods import is_registered
from engine.referee.design import TWIN_SUFFIX
from jobs.services import referee as referee_files
from jobs.services.page_store import data_home_of
from pages.present import referee_tables as rt
from pages.present.user_text import plain
from pages.widgets.tables import show_table

TITLE = "What the referee measured"
NONE_YET = (
    "No referee result is recorded yet. `softgrade calibrate-inference -o DIR` draws "
    "independent phantom datasets, trains the same design on each and measures how often "
    "each interval covers the true difference (bench/calibrate_inference.sh is the GPU run; "
    '`--record DIR` records a result made elsewhere). docs/statistics.md, "The phantom '
    'referee", says what it measures.'
)


@st.cache_data(ttl=30, show_spinner=False)
def cached_latest(home: str) -> list[tuple[pd.DataFrame, dict[str, Any]]]:
    """Per task, the newest referee result recorded under ``home``, else the shipped one
    (summary, card); empty when there is none."""
    return [(r.summary, r.card) for r in referee_files.latest_referees(Path(home))]


def card_as_text(value: Any) -> Any:
    """A referee card with every text in it escaped for markdown (`plain`), but for the
    names of registered methods, which the tables look up for their labels (and which are
    plain words); numbers, flags and nesting kept."""
    if isinstance(value, Mapping):
        return {key: card_as_text(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [card_as_text(item) for item in value]
    if isinstance(value, str):
        return value if is_registered(value.removesuffix(TWIN_SUFFIX)) else plain(value)
    return value


def _pair_as_text(pair: object) -> str:
    """``"a − b"`` with each side as `card_as_text` shows a name."""
    return " − ".join(card_as_text(side) for side in str(pair).split(" − "))


def referee_section(path: str) -> None:
    """An expander with the latest referee tables (one block per task, since what the
    referee measures differs between tasks), or how to make one."""
    with st.expander(TITLE):
        latest = cached_latest(str(data_home_of(path)))
        if not latest:
            st.caption(NONE_YET)
            return
        differ = rt.disagreement_line([card_as_text(card) for _, card in latest])
        if differ:
            st.caption(differ)
        for summary, card in latest:
            if len(latest) > 1:
                st.markdown(f"##### {plain(str(card.get('task', '')))}")
            _one_result(summary, card)


def _one_result(summary: pd.DataFrame, card: Mapping[str, Any]) -> None:
    """One referee result: its recommendation, design, truth and three tables."""
    # A result is a file (`calibrate-inference --record DIR` takes one made anywhere): its
    # card's texts and its pairs' method names reach markdown as text (issue 39).
    card = card_as_text(card)
    truth = summary.assign(pair=summary["pair"].map(_pair_as_text))
    st.markdown(rt.recommendation_line(card))
    st.caption(rt.design_line(card))
    st.caption(f"True expected difference on the fresh films: {rt.truth_line(truth)}.")
    for heading, frame in (
        ("Coverage of the true difference (± Monte-Carlo SE)", rt.coverage_frame(summary)),
        ("Type-I error on the null pair, power on the real pairs", rt.tests_frame(summary)),
        ("Between-seed correlation, realised and assumed", rt.correlation_frame(summary)),
    ):
        st.markdown(f"**{heading}**")
        show_table(frame)
