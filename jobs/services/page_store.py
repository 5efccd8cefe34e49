"""The store as the pages see it: the one door from pages/ to store/.

Page scripts and widgets reach the store through page-side services (jobs/services/), never
by importing store/ themselves (tests/test_layers.py fails on such an import), so the
pages' direction is one: pages -> jobs.services -> store. Role-checked verbs are in
`jobs.services.lab` and the statistics' reads in `jobs.services.study_analysis`. What the
pages use with no service of its own is passed on here, each by name: the store's error and
account types they catch and pass on, where the store and the data folder are, the typed
reads (each a plain read over a short connection; store/ stays the only SQL), the crop
review's decision writes (one of the app's own small writes: docs/architecture.md, "Who
writes the store") and the sign-in's account modules. So the store's surface the pages use
is this list; lifecycle verbs that need a role (rename, delete, ...) are not on it.
"""

from __future__ import annotations

import functools

# The sign-in widget uses the store's account and session verbs as modules (its tests replace
# their functions there); these three are the store's own authentication service.
from store import audit, sign_in, users
from store.analysis import runs_lacking_test_predictions, split_sizes
from store.audit import AUDIT_ACTIONS, audit_actors
from store.bundle import REFERENCE_STUDY, imported_card, read_card
from store.costs import live_device_rates, run_costs, study_run_costs, train_image_counts
from store.datasets import dataset_labels, list_datasets, load_splits, split_rules
from store.db import StoreError, data_home_of, default_store_path, init_schema_once, softgrade_home
from store.imports import ImportSummary, import_problems, latest_import, list_imports
from store.jobs import alive_workers, job_log, list_jobs
from store.label_versions import LabelVersion, label_versions
from store.readings import list_readings
from store.reviews import clear_review, crop_reviews, record_review
from store.runs import (
    joint_predictions,
    list_runs,
    list_studies,
    run_group_counts,
    selected_probabilities,
    study_epoch_metrics,
    study_methods,
)
from store.studies import Study, get_study, pruned_run_counts, study_card
from store.users import NAME_PATTERN, PASSWORD_RULE, Account, Role, password_problem

__all__ = [
    "AUDIT_ACTIONS",
    "Account",
    "ImportSummary",
    "NAME_PATTERN",
    "PASSWORD_RULE",
    "REFERENCE_STUDY",
    "Role",
    "StoreError",
    "Study",
    "alive_workers",
    "audit",
    "audit_actors",
    "clear_review",
    "crop_reviews",
    "data_home_of",
    "dataset_labels",
    "default_store_path",
    "get_study",
    "import_problems",
    "imported_card",
    "init_schema_once",
    "job_log",
    "joint_predictions",
    "LabelVersion",
    "label_versions",
    "latest_import",
    "list_datasets",
    "list_imports",
    "list_jobs",
    "list_readings",
    "list_runs",
    "list_studies",
    "live_device_rates",
    "load_splits",
    "password_problem",
    "pruned_run_counts",
    "record_review",
    "reference_study_id",
    "run_costs",
    "run_group_counts",
    "runs_lacking_test_predictions",
    "selected_probabilities",
    "sign_in",
    "softgrade_home",
    "split_rules",
    "split_sizes",
    "study_card",
    "study_epoch_metrics",
    "study_methods",
    "study_run_costs",
    "train_image_counts",
    "users",
]


@functools.cache
def reference_study_id() -> str | None:
    """The study id of the bundled reference study (store/examples/reference-study.zip), or None
    when the bundle is missing or unreadable (read once per process)."""
    try:
        return str(read_card(REFERENCE_STUDY)["study"]["study_id"])
    except (StoreError, KeyError, OSError):
        return None
