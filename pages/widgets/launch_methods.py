"""The Launch page's methods: one picker per method family (`engine.methods.methods_by_family`),
each with what the family does; the target matrix of each chosen method that trains against
one (paper Fig. 4), the others described in words with their search grid.
"""

from __future__ import annotations

import streamlit as st

from engine.config import TASK_CLASSES
from engine.methods import (
    FAMILY_DESCRIPTIONS,
    Method,
    get_method,
    method_label,
    methods_by_family,
    target_matrix,
)
from pages.present.charts import soft_label_frame, soft_label_heatmap
from pages.present.study_form import chosen_methods, family_key, shown_params

#: Target matrices per row: four 140 px charts fit the main column at 1400 px.
MATRICES_PER_ROW = 4


def method_inputs() -> list[str]:
    """The methods to compare: one picker per family (`engine.methods.methods_by_family`)
    with what the family does; target matrices for methods that train against one (paper
    Fig. 4), the others described in words. Returns the chosen methods in display order."""
    st.subheader("Methods", divider="gray")
    values: dict[str, list[str]] = {}
    for family, members in methods_by_family().items():
        with st.container(border=True):
            key = family_key(family)
            values[key] = st.multiselect(
                family[:1].upper() + family[1:],
                [m.name for m in members],
                format_func=method_label,
                key=key,
                persist_state="session",
                help="\n\n".join(f"**{m.label}**: {m.description}" for m in members),
            )
            st.caption(FAMILY_DESCRIPTIONS[family])
            picked = [get_method(m) for m in values[key]]
            drawn = [m for m in picked if m.target_matrix is not None]
            if drawn:
                target_matrices(drawn)
            for method in picked:
                if method.target_matrix is None:
                    st.markdown(
                        f"- **{method.label}** ({_grid_text(method)}): {method.description}"
                    )
    return chosen_methods(values)


def target_matrices(methods: list[Method]) -> None:
    """The target matrix each method teaches, four to a row, with the parameters drawn."""
    shown_task = st.radio(
        "Show target matrices for",
        list(TASK_CLASSES),
        format_func=lambda t: f"{t} ({TASK_CLASSES[t]} grades)",
        horizontal=True,
        key="launch_matrix_task",
        persist_state="session",
    )
    st.caption(
        "Each matrix is the target the network learns for a film: row = the film's true "
        "grade, column = each grade it could predict, shade = the share of probability it "
        "is taught to give that grade (as in the paper's Fig. 4). Each is drawn with the "
        "values under it; the search also tries the rest of its grid (η = 0.8 mixes 20 % of "
        "the one-hot target back in)."
    )
    per_row = MATRICES_PER_ROW
    for start in range(0, len(methods), per_row):
        row = methods[start : start + per_row]
        for col, method in zip(st.columns(per_row), row, strict=False):
            with col:
                params = shown_params(method)
                st.markdown(f"**{method.label}**")
                matrix = target_matrix(method.name, TASK_CLASSES[shown_task], params)
                if matrix is None:  # only target-distribution methods reach here
                    continue
                chart = soft_label_heatmap(soft_label_frame(matrix), size=140)
                st.altair_chart(chart, width="content")
                drawn_with = ", ".join(
                    f"{h.label} = {params[h.name]:g}" for h in method.hyperparameters[1:]
                )
                st.caption(f"{drawn_with + '. ' if drawn_with else ''}{method.description}")


def _grid_text(method: Method) -> str:
    """``"searches learning rate × α: 9 configurations"``."""
    names = " × ".join(h.label for h in method.hyperparameters)
    n = len(method.search_grid())
    return f"searches {names}: {n} configuration{'s' * (n != 1)}"
