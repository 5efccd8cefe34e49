"""The Compare page's "Robustness" tab: do the conclusions survive scoring against the truth
and giving every method the same search budget?

* **Truth and noise** (``jobs.services.study_analysis.against_truth``, ``engine.analysis.truth``):
on a
  phantom every metric is also scored against the noiseless ``true_grade``; per method the
  shift (true − recorded) and its difference from nominal's with the corrected test. Hidden,
  with one line saying why, when the films have no true grade.
* **Budgets compared fairly**: the expected best validation AMAE against the number of
  configurations tried, per method (Dodge et al. 2019; ``engine.analysis.expected_max``), and
  each method's expected best among one configuration per learning rate of nominal's grid
  (``engine.analysis.budget.coverage_matched_validation``). Both need only every run's
  validation AMAE, which a bundle keeps; a study without it (results imported from another
  tool) gets one sentence saying what cannot be shown.
* **Budget-matched comparison** (``jobs.services.study_analysis.budget_matched``,
  ``engine.analysis.budget``): every method re-selected among one configuration per learning
  rate of nominal's grid, Table 4 and the paired tests at that budget. A study without the
  unselected runs' test predictions (an imported bundle) gets one sentence saying so.

Each study is analysed on its own (the statistics pair seeds within a study); every read is
cached per study. Tables and sentences are ``pages.present.inference_tables``'.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from engine.analysis import budget
from engine.analysis.metrics import METRIC_LABELS, METRICS, PRIMARY_METRIC, SELECTION_COLUMN
from engine.analysis.paired import BASELINE
from engine.vocab import LABEL_SEPARATOR
from jobs.services import study_analysis
from jobs.services.page_store import list_runs, runs_lacking_test_predictions, split_sizes
from pages.present import budget_curves, exports, inference_tables, stat_tables
from pages.present.user_text import plain, said
from pages.widgets import reads
from pages.widgets.downloads import download_row
from pages.widgets.tables import show_table

TAB = "Robustness"
# Keeps a per-study table's rows of the picked tasks and methods (given its method columns).
Keep = Callable[..., pd.DataFrame]


@st.cache_data(ttl=reads.RESULTS_TTL_S, show_spinner="Scoring against the true grades…")
def cached_truth(path: str, study_id: str) -> pd.DataFrame:
    """`study_analysis.against_truth` of one study (empty without true grades)."""
    return study_analysis.against_truth(study_id, path=path)


@st.cache_data(ttl=reads.RESULTS_TTL_S, show_spinner="Re-selecting at matched budget…")
def cached_budget(
    path: str, study_id: str
) -> tuple[dict[str, int], budget.BudgetMatched | None, str]:
    """Configurations searched per method, the budget-matched comparison (None when the
    study cannot have one) and, then, the sentence saying why."""
    runs = list_runs([study_id], path=path)
    runs = runs[runs[SELECTION_COLUMN].notna()]  # runs that were scored in a search
    configs = budget_curves.configs_per_search(runs)
    lacking = runs_lacking_test_predictions(study_id, path=path)
    split_tasks = set(split_sizes(study_id, path=path)["task"])
    if missing := sorted(set(runs["task"]) - split_tasks):
        return configs, None, inference_tables.no_splits_reason(", ".join(missing))
    if lacking:
        return configs, None, inference_tables.budget_unavailable_sentence(lacking, len(runs))
    try:
        return configs, study_analysis.budget_matched(study_id, path=path), ""
    except budget.BudgetUnavailable as exc:  # e.g. no nominal runs to take the budget from
        return configs, None, f"Budget matching is not possible here: {said(exc)}."


@st.cache_data(ttl=reads.RESULTS_TTL_S, show_spinner="Expected best by configurations tried…")
def cached_expected_best(
    path: str, study_id: str, replace: bool
) -> tuple[pd.DataFrame, int, int, pd.DataFrame | None, tuple[float, ...]]:
    """The expected-best curves, how many runs have a validation score of how many, and the
    coverage-matched table with its grid (None, () when nominal has no learning rates)."""
    runs = study_analysis.searched_runs(study_id, path=path)
    n_scored = int(runs[SELECTION_COLUMN].notna().sum())
    table = study_analysis.expected_best_validation(study_id, replace=replace, path=path)
    try:
        coverage = study_analysis.coverage_matched_validation(study_id, path=path)
        grid = budget.nominal_grid(runs[runs[SELECTION_COLUMN].notna()])
    except budget.BudgetUnavailable:
        coverage, grid = None, ()
    return table, n_scored, len(runs), coverage, grid


@st.cache_data(ttl=reads.RESULTS_TTL_S, show_spinner=False)
def cached_off_grid(path: str, study_id: str) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """The methods a coverage-matched table leaves out (no run at a rate of Nominal's grid)
    and that grid; ``((), ())`` when there is no grid to match."""
    runs = study_analysis.searched_runs(study_id, path=path)
    runs = runs[runs[SELECTION_COLUMN].notna()]
    try:
        grid = budget.nominal_grid(runs)
    except budget.BudgetUnavailable:
        return (), ()
    return tuple(budget.off_grid_methods(runs, grid)), grid


def say_off_grid(path: str, study_id: str, methods: set[str]) -> None:
    """One line naming the picked methods a coverage-matched table leaves out, and why."""
    left_out, grid = cached_off_grid(path, study_id)
    picked = [m for m in left_out if m in methods]
    if line := budget_curves.off_grid_sentence(picked, grid, BASELINE):
        st.info(plain(line), icon=":material/info:")  # names methods: data, escaped


def robustness_tab(
    path: str,
    picked: pd.DataFrame,
    tasks: list[str],
    methods: list[str],
    cards: tuple[exports.Card, ...],
) -> None:
    """Truth vs recorded and the budget-matched comparison of each picked study, restricted to
    the picked tasks and methods, with a CSV of both headed by the study ``cards``."""
    options: list[str] = list(METRICS)
    metric = str(
        st.selectbox(
            "Metric",
            options,
            index=options.index(PRIMARY_METRIC),  # the declared primary endpoint
            format_func=lambda m: METRIC_LABELS[m],
            key="robust_metric",
            help="The tables show this metric; the CSV has every metric.",
        )
    )
    bases = {m.partition(LABEL_SEPARATOR)[0] for m in methods}
    exported: dict[str, pd.DataFrame] = {}
    for row in picked.itertuples(index=False):
        if len(picked) > 1:
            st.header(plain(row.name), divider="gray")
        keep = _picked_rows(tasks, bases)
        exported[f"truth {row.study_id}"] = truth_section(path, row.study_id, metric, keep)
        sections = budget_section(path, row.study_id, metric, keep, bases)
        for name, frame in sections.items():
            exported[f"{name} {row.study_id}"] = frame
    csv = stat_tables.tables_csv(exported)
    download_row([("Tables as CSV", csv, "softgrade_robustness.csv", "robust_download_csv")], cards)


def _picked_rows(tasks: list[str], methods: set[str]) -> Keep:
    """A filter of a per-study table to the picked tasks and (plain) methods."""

    def keep(table: pd.DataFrame, *columns: str) -> pd.DataFrame:
        mask = table["task"].isin(tasks)
        for column in columns or ("method",):
            mask &= table[column].isin(methods)
        return table[mask]

    return keep


def truth_section(path: str, study_id: str, metric: str, keep: Keep) -> pd.DataFrame:
    """Recorded vs true grades: readings on the metric, the table; returns the picked rows."""
    st.subheader("Truth and noise", divider="gray")
    table = keep(cached_truth(path, study_id))
    if table.empty:
        st.caption(inference_tables.NO_TRUTH_REASON)
        return table
    st.markdown("**Does a soft label gain more against the truth than against the noisy labels?**")
    for line in inference_tables.truth_readings(table, metric):
        st.markdown(f"- {line}")
    shown = inference_tables.truth_frame(table[table["metric"] == metric])
    show_table(shown.drop(columns=["Metric"]), width="stretch")
    st.caption(inference_tables.TRUTH_NOTE)
    return table


def budget_section(
    path: str, study_id: str, metric: str, keep: Keep, methods: set[str]
) -> dict[str, pd.DataFrame]:
    """The budget sentence, then Table 4 and the paired tests at nominal's budget (or why
    not); returns the picked rows of both tables."""
    exported = expected_best_section(path, study_id, keep, methods)
    st.subheader("Budget-matched comparison", divider="gray")
    configs, matched, why_not = cached_budget(path, study_id)
    st.markdown(plain(inference_tables.search_budget_sentence(configs)))  # names methods
    if matched is None:
        st.info(why_not)
        return exported
    table, pairs = keep(matched.table), keep(matched.paired, "method_a", "method_b")
    shown = inference_tables.budget_table_frame(table[table["metric"] == metric])
    if matched.grid:
        say_off_grid(path, study_id, methods)
    show_table(shown.drop(columns=["Metric"]), width="content")
    st.markdown(
        inference_tables.budget_draws_sentence(matched.draws, matched.budget, grid=matched.grid)
    )
    st.markdown(f"**Paired tests at matched budget ({METRIC_LABELS[metric]})**")
    paired_shown = inference_tables.paired_frame(pairs[pairs["metric"] == metric])
    if paired_shown.empty:
        st.info("Paired tests need at least two of the picked methods.")
        return {**exported, "budget table": table}
    show_table(paired_shown.drop(columns=["Metric"]), hide_index=True, width="stretch")
    st.caption(
        f"Each paired value is a run's expected score at a budget of {matched.budget} "
        f"configurations (averaged over {matched.n_draws} random draws). "
        + inference_tables.PAIRED_NOTE
    )
    return {**exported, "budget table": table, "budget paired": pairs}


def expected_best_section(
    path: str, study_id: str, keep: Keep, methods: set[str]
) -> dict[str, pd.DataFrame]:
    """Expected best validation AMAE by configurations tried, and at matched coverage of the
    learning-rate grid (or what cannot be shown without the runs' validation scores)."""
    st.subheader("Budgets compared fairly", divider="gray")
    replace = st.toggle(
        "Draw with replacement",
        key="robust_expected_replace",
        help="Dodge et al.'s estimator draws configurations with replacement, so a curve "
        "continues past the method's own search; off: n distinct configurations of those "
        "tried, each curve ending at its search's size.",
    )
    table, n_scored, n_runs, coverage, grid = cached_expected_best(path, study_id, replace)
    table = keep(table)
    if table.empty or n_scored == 0:
        st.info(budget_curves.expected_best_unavailable(n_scored, n_runs))
        return {}
    st.altair_chart(budget_curves.expected_best_chart(table, replace=replace))
    st.markdown(plain(budget_curves.expected_best_sentence(table, BASELINE, replace=replace)))
    if n_scored < n_runs:
        st.caption(budget_curves.expected_best_unavailable(n_scored, n_runs))
    exported = {"expected best": table}
    if coverage is not None:
        coverage = keep(coverage)
        st.markdown(plain(budget_curves.coverage_sentence(grid, BASELINE)))
        say_off_grid(path, study_id, methods)
        shown = budget_curves.coverage_frame(coverage, grid)
        show_table(shown, width="content")
        exported["coverage matched"] = coverage
    return exported
