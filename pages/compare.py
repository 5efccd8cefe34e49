"""Compare methods: the paper's Table 4, Fig. 5, Fig. 6, the statistics of Tables 5-6 and the
probability metrics.

Everything is derived from the stored test predictions of each (task, method, seed)'s
selected run. The numbers come from ``engine.analysis.compare``, ``engine.analysis.stats`` and
``engine.analysis.probability_metrics``; each tab is one function of
``pages.widgets.compare_views`` or
``pages.widgets.probability_view`` or ``pages.widgets.robustness_view`` (truth vs recorded
grades, budget-matched comparison) or ``pages.widgets.sets_view`` (conformal grade sets).
This page picks, reads and calls them.
"""

from __future__ import annotations

import streamlit as st

from pages.present import protocol_text
from pages.widgets import compare_views as views
from pages.widgets import (
    downloads,
    pickers,
    probability_view,
    reads,
    robustness_view,
    sets_view,
    shell,
    sign_in,
    view_state,
)
from pages.widgets.report_button import report_button

shell.run_inside_shell()
sign_in.require_page(__file__)
shell.page_title("Compare methods")
st.caption(
    "Test-set metrics of each method's selected model (the search configuration with the "
    "best validation AMAE), per seed, as in the paper's Table 4 and Figs. 5–6."
)
path = str(reads.store_path())
pickers.offer_reference_study(path)
picked = pickers.pick_studies(
    path,
    key="compare_studies",
    empty_hint="No study has finished runs yet. Launch one from the Launch page; its results "
    "appear here as soon as its first seed is done.",
    dependent_keys=views.DEPENDENT_KEYS,
)
pickers.note_unknown_methods(path, picked["study_id"])
# Said beside every comparison (each tab) when a picked study's search was pruned.
# With how many runs each one's pruner stopped (the study card's count).
stopped = reads.cached_pruned_counts(path, tuple(picked["study_id"]))
pruned = protocol_text.pruned_search_note(
    zip(picked["name"], picked["spec"], picked["study_id"].map(stopped.get), strict=True)
)
progress, _, (counts, per_run) = pickers.read_finished(path, picked, views.cached_results)
if per_run.empty:
    st.info("Nothing to compare yet: no seed of the selected studies has finished.")
    st.stop()
tasks, methods = views.pick_tasks_and_methods(per_run, progress)
per_run = views.keep_picked(per_run, tasks, methods)
counts = views.keep_picked(counts, tasks, methods)
views.describe_selection(per_run, methods)

cards = downloads.cached_cards(path, tuple(picked["study_id"]))  # heading every download
report_button(path, tuple(picked["study_id"]))  # the studies' report as one HTML file

link_slot = view_state.link_slot()  # "Copy link to this view": this run's pickers now,
view_state.share_link(link_slot)  # while the tabs draw; again once they wrote theirs
# Tabs that track which one is open, so the Probabilities tab is computed only when shown;
# the open tab is in the URL (``?compare_tab=Statistics``).
tab_table, tab_dist, tab_cm, tab_stats, tab_prob, tab_robust, tab_sets = view_state.linked_tabs(
    [*views.TABS, robustness_view.TAB, sets_view.TAB], key="compare_tab"
)
with tab_table:
    views.pruned_note(pruned)
    views.table_tab(per_run, cards, path)
with tab_dist:
    views.pruned_note(pruned)
    views.distributions_tab(per_run, tasks, path)
with tab_cm:
    views.pruned_note(pruned)
    views.confusion_tab(counts, per_run, tasks)
with tab_stats:
    views.pruned_note(pruned)
    views.statistics_tab(per_run, tasks, cards, path, progress)
with tab_prob:
    views.pruned_note(pruned)
    if tab_prob.open:
        probability_view.probabilities_tab(path, picked, progress, tasks, methods, cards)
with tab_robust:
    views.pruned_note(pruned)
    if tab_robust.open:
        robustness_view.robustness_tab(path, picked, tasks, methods, cards)
with tab_sets:
    if tab_sets.open:
        sets_view.sets_tab(path, picked, tasks, methods, cards)
view_state.share_link(link_slot)
